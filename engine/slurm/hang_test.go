package slurm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// The faults of a controller that hangs, made by shell wrappers around Slurm's real
// commands placed first on PATH, as a site's wrappers are (WRAP_MODE picks the fault):
//   - query: every command but `scontrol ping` hangs (an overloaded slurmctld that
//     still answers pings);
//   - all: every command hangs, the ping too;
//   - pipe: the real command runs, but the wrapper first starts a child that keeps
//     stdout open for 30 s after the command has answered.
//
// Each process a wrapper leaves hanging, or starts, writes its pid to WRAP_PIDS.
const hangWrapper = `#!/bin/sh
real=$(PATH=$WRAP_REALPATH command -v "$(basename "$0")")
case "$WRAP_MODE:$1" in
query:ping) exec "$real" "$@" ;;
query:*|all:*) echo $$ >>"$WRAP_PIDS"; exec sleep 3600 ;;
pipe:*) sleep 30 & echo $! >>"$WRAP_PIDS"; exec "$real" "$@" ;;
esac
exec "$real" "$@"
`

// hangWrappers puts the wrappers first on PATH for the rest of t and returns the file
// of their pids, and a function that sets the mode.
func hangWrappers(t *testing.T) (pids string, mode func(string)) {
	t.Helper()
	dir := t.TempDir()
	for _, c := range []string{"scontrol", "squeue", "sacct", "scancel", "sbatch", "sinfo"} {
		if err := os.WriteFile(filepath.Join(dir, c), []byte(hangWrapper), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pids = filepath.Join(dir, "pids")
	t.Setenv("WRAP_REALPATH", os.Getenv("PATH"))
	t.Setenv("WRAP_PIDS", pids)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Cleanup(func() { killPids(pids) })
	return pids, func(m string) { t.Setenv("WRAP_MODE", m) }
}

// killPids kills what the wrappers left, by pid: the pipe holders of mode pipe, and
// whatever a failing test left.
func killPids(file string) {
	b, _ := os.ReadFile(file)
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// alive lists the pids of file that still run (a zombie is dead).
func alive(file string) []int {
	b, _ := os.ReadFile(file)
	var live []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		if _, rest, ok := strings.Cut(string(stat), ") "); ok && !strings.HasPrefix(rest, "Z") {
			live = append(live, pid)
		}
	}
	return live
}

// bounded runs f, which must return although what it asks hangs for an hour: the
// test's deadline is far above the commands' own (a few seconds) and far below the
// hang.
func bounded[T any](t *testing.T, what string, f func(context.Context) (T, error)) (T, error) {
	t.Helper()
	type res struct {
		v   T
		err error
	}
	got := make(chan res, 1)
	go func() {
		v, err := f(context.Background()) // no deadline of the caller's: the commands' own must do
		got <- res{v, err}
	}()
	select {
	case r := <-got:
		return r.v, r.err
	case <-time.After(testkit.Scale(2 * time.Minute)):
		t.Fatalf("%s did not return: a hung Slurm command held it", what)
	}
	panic("unreachable")
}

// TestClusterHungCommands: with Slurm's commands hanging (every query, or the ping
// too) the scheduler answers: the last known state of a job it has a record of, a
// line naming the command and how long it waited for one it has not, a cancel that
// says it cannot; and nothing it started is left running. A wrapper whose child keeps
// the pipe open does not hold it either.
func TestClusterHungCommands(t *testing.T) {
	h := newHarness(t)
	id := h.submit(&spec.AppDef{Name: "hang", Roles: []spec.Role{testRole("hang", 1, "sleep", "120")}}, nil)
	h.waitFor(id, "RUNNING", func(st *spec.AppStatus) bool { return st.State == spec.Running })
	pids, mode := hangWrappers(t)
	// A scheduler of its own for each case: no ping remembered from another.
	fresh := func() *Scheduler {
		s, err := New(sched.Config{Session: "test", StateDir: h.state, WorkDir: h.work})
		if err != nil {
			t.Fatal(err)
		}
		return s.(*Scheduler)
	}
	noneLeft := func(t *testing.T) {
		t.Helper()
		if live := alive(pids); len(live) > 0 {
			t.Errorf("hung commands left running: %v", live)
		}
	}

	t.Run("queries hang, ping answers", func(t *testing.T) {
		mode("query")
		s := fresh()
		d, err := bounded(t, "describe", func(ctx context.Context) (*sched.Description, error) { return s.Describe(ctx, id) })
		if err != nil {
			t.Fatalf("describe: %v, want the last known state", err)
		}
		if !d.Status.LastKnown || d.Status.State != spec.Running || !strings.Contains(strings.Join(d.Status.Warnings, "\n"), "scontrol show: no answer within "+queryTimeout.String()) {
			t.Errorf("describe: %s last known %v, warnings %q", d.Status.State, d.Status.LastKnown, d.Status.Warnings)
		}
		_, err = bounded(t, "describe of a job without a record", func(ctx context.Context) (*sched.Description, error) { return fresh().Describe(ctx, "999999") })
		if !errors.Is(err, ErrControllerDown) || !strings.Contains(err.Error(), "scontrol show: no answer within "+queryTimeout.String()) {
			t.Errorf("describe without a record: %v", err)
		}
		apps, err := bounded(t, "list", func(ctx context.Context) ([]spec.AppStatus, error) { return fresh().List(ctx) })
		if err == nil || !strings.Contains(err.Error(), "squeue: no answer within "+queryTimeout.String()) || len(apps) != 1 || !apps[0].LastKnown {
			t.Errorf("list: %v, %+v", err, apps)
		}
		_, err = bounded(t, "cancel", func(ctx context.Context) (struct{}, error) { return struct{}{}, fresh().Cancel(ctx, id) })
		if !errors.Is(err, ErrControllerDown) || !strings.Contains(err.Error(), "cannot cancel job "+id) || !strings.Contains(err.Error(), "nothing was cancelled") {
			t.Errorf("cancel: %v", err)
		}
		noneLeft(t)
	})
	t.Run("everything hangs", func(t *testing.T) {
		mode("all")
		d, err := bounded(t, "describe", func(ctx context.Context) (*sched.Description, error) { return fresh().Describe(ctx, id) })
		if err != nil || !d.Status.LastKnown || !strings.Contains(strings.Join(d.Status.Warnings, "\n"), "scontrol ping: no answer within "+pingTimeout.String()) {
			t.Errorf("describe: %v %+v", err, d)
		}
		_, err = bounded(t, "submit", func(context.Context) (string, error) {
			return h.trySubmit(&spec.AppDef{Name: "e", Roles: []spec.Role{testRole("e", 1, "true")}}, nil)
		})
		if !errors.Is(err, ErrControllerDown) || !strings.Contains(err.Error(), "scontrol ping: no answer within "+pingTimeout.String()) {
			t.Errorf("submit: %v", err)
		}
		_, err = bounded(t, "cancel", func(ctx context.Context) (struct{}, error) { return struct{}{}, fresh().Cancel(ctx, id) })
		if !errors.Is(err, ErrControllerDown) || !strings.Contains(err.Error(), "nothing was cancelled") {
			t.Errorf("cancel: %v", err)
		}
		noneLeft(t)
	})
	t.Run("a wrapper's child holds the pipe", func(t *testing.T) {
		mode("pipe")
		d, err := bounded(t, "describe", func(ctx context.Context) (*sched.Description, error) { return fresh().Describe(ctx, id) })
		if err != nil || d.Status.LastKnown || d.Status.State != spec.Running {
			t.Errorf("describe: %v %+v", err, d)
		}
		apps, err := bounded(t, "list", func(ctx context.Context) ([]spec.AppStatus, error) { return fresh().List(ctx) })
		if err != nil || len(apps) != 1 || apps[0].State != spec.Running || apps[0].LastKnown {
			t.Errorf("list: %v %+v", err, apps)
		}
		if len(alive(pids)) == 0 {
			t.Error("no pipe holder ran: the wrapper did not do what the test means")
		}
	})
}

// TestWaitDelayGivesUpOnThePipe: a command that answers and exits 0 while a child it
// started keeps stdout open is its answer, not a hang; one that hangs is killed with
// its child at its deadline. Neither needs a cluster: the commands are shell scripts.
func TestWaitDelayGivesUpOnThePipe(t *testing.T) {
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	script := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script("sinfo", `sleep 30 & echo $! >>`+pids+`; echo debug`)
	script("squeue", `sleep 3600 & echo $! >>`+pids+`; echo $$ >>`+pids+`; exec sleep 3600`)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Cleanup(func() { killPids(pids) })

	parts, err := bounded(t, "sinfo", partitions)
	if err != nil || len(parts) != 1 || parts[0] != "debug" {
		t.Errorf("sinfo: %v %q, want its answer", err, parts)
	}
	killPids(pids)
	_ = os.Remove(pids)
	_, err = bounded(t, "squeue", func(ctx context.Context) ([]byte, error) { return command(ctx, nil, "squeue") })
	var na *NoAnswerError
	if !errors.As(err, &na) || err.Error() != "squeue: no answer within "+queryTimeout.String() || !errors.Is(err, ErrControllerDown) {
		t.Errorf("squeue: %v", err)
	}
	// SIGKILL is sent at the deadline; a busy machine may show a killed process for a
	// moment before it is gone.
	testkit.Wait(t, 10*time.Second, "the command's process group, killed at its deadline, to go", func() (bool, string) {
		live := alive(pids)
		return len(live) == 0, fmt.Sprintf("left running: %v", live)
	})
}
