package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// wickCmd runs the built wick binary as a separate process with the harness's
// environment, as a user's shell would.
func (h *harness) wickCmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, h.self, args...)
	cmd.Dir = h.work
	cmd.Env = append(os.Environ(), "WICK_HOME="+h.home, "HOME="+h.user, "NO_COLOR=1")
	cmd.Env = append(cmd.Env, h.cmdEnv...)
	return cmd
}

func (h *harness) exec(args ...string) result {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	cmd := h.wickCmd(ctx, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		h.t.Fatalf("wick %v: %v", args, err)
	}
	return result{code, out.String(), errb.String()}
}

func (h *harness) status(handle string) spec.AppStatus {
	h.t.Helper()
	r := h.exec("status", "--json", handle)
	if r.code != 0 {
		h.t.Fatalf("wick status: %d %s", r.code, r.stderr)
	}
	var st spec.AppStatus
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		h.t.Fatalf("status JSON: %v\n%s", err, r.stdout)
	}
	return st
}

func (h *harness) waitState(handle string, want spec.AppState) spec.AppStatus {
	h.t.Helper()
	deadline := time.Now().Add(testkit.Scale(30 * time.Second))
	for {
		st := h.status(handle)
		if st.State == want {
			return st
		}
		if st.State.Terminal() || time.Now().After(deadline) {
			h.t.Fatalf("%s is %s, want %s", handle, st.State, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRunAttachedSucceeds(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "utils.echo", "--msg", "hello from wick")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	if !strings.HasPrefix(handle, "local_cwd://wick/echo-") {
		t.Fatalf("stdout %q is not a handle", r.stdout)
	}
	if !strings.Contains(r.stderr, "echo/0 hello from wick\n") {
		t.Errorf("attached logs missing the line; stderr:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "SUCCEEDED") {
		t.Errorf("no final state on stderr:\n%s", r.stderr)
	}
	st := h.status(handle)
	if st.State != spec.Succeeded || len(st.Roles) != 1 || *st.Roles[0].Replicas[0].ExitCode != 0 {
		t.Errorf("status after run: %+v", st)
	}
}

func TestRunAttachedFails(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "utils.sh", "sh", "-c", "echo oops >&2; exit 3")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "sh/0 oops") || !strings.Contains(r.stderr, "FAILED") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	st := h.status(strings.TrimSpace(r.stdout))
	if got := st.Roles[0].Replicas[0].ExitCode; got == nil || *got != 3 {
		t.Errorf("exit code %v, want 3", got)
	}
}

// TestDetachedAppFromOtherTerminals launches with --detach and then lists, tails,
// describes and cancels the app from separate wick processes.
func TestDetachedAppFromOtherTerminals(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "--detach", "utils.sh", "sh", "-c", "echo started; sleep 60")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	h.waitState(handle, spec.Running)

	list := h.exec("list")
	if !strings.Contains(list.stdout, handle) || !strings.Contains(list.stdout, "RUNNING") {
		t.Errorf("wick list:\n%s", list.stdout)
	}
	waitLog(t, h, handle, "sh/0 started")

	if r := h.exec("delete", handle); r.code != 1 || !strings.Contains(r.stderr, "running") {
		t.Errorf("delete of a running app: exit %d %s", r.code, r.stderr)
	}
	if r := h.exec("cancel", handle); r.code != 0 {
		t.Fatalf("cancel: %d %s", r.code, r.stderr)
	}
	if st := h.status(handle); st.State != spec.Cancelled {
		t.Errorf("after cancel: %s", st.State)
	}
	if r := h.exec("delete", handle); r.code != 0 {
		t.Errorf("delete: %d %s", r.code, r.stderr)
	}
	if r := h.exec("status", handle); r.code != ExitUsage || !strings.Contains(r.stderr, "no such app") {
		t.Errorf("status after delete: %d %s", r.code, r.stderr)
	}
}

func waitLog(t *testing.T, h *harness, handle, want string) {
	t.Helper()
	deadline := time.Now().Add(testkit.Scale(20 * time.Second))
	for {
		r := h.exec("log", handle)
		if strings.Contains(r.stdout, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("wick log never showed %q; last: %d %q %q", want, r.code, r.stdout, r.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startAttached starts an attached wick run and returns once the replica printed its
// first line, with the handle.
func startAttached(t *testing.T, h *harness, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := h.wickCmd(context.Background(), append([]string{"run"}, args...)...)
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	handle, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the handle: %v", err)
	}
	// The replica's first line, within a deadline: a follower that missed it would
	// otherwise show it only at the app's end (or never), and the test would hang or
	// misread the state after it.
	shown := make(chan bool, 1)
	start := time.Now()
	go func() {
		lines := bufio.NewScanner(stderr)
		for lines.Scan() && !strings.Contains(lines.Text(), "alive") {
		}
		shown <- lines.Err() == nil && strings.Contains(lines.Text(), "alive")
		io.Copy(io.Discard, stderr)
	}()
	select {
	case ok := <-shown:
		if !ok {
			t.Fatal("the attached run never showed the replica's first line")
		}
	case <-time.After(testkit.Scale(30 * time.Second)):
		t.Fatalf("the attached run did not show the replica's first line within %s (load factor %.1f)", testkit.Scale(30*time.Second), testkit.Factor())
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Logf("the replica's first line took %s to show", took) // a clue if the state is off below
	}
	return cmd, strings.TrimSpace(handle)
}

// TestKill9OfAttachedRun: the app goes on and can be listed, tailed and cancelled.
func TestKill9OfAttachedRun(t *testing.T) {
	h := newHarness(t)
	cmd, handle := startAttached(t, h, "utils.sh", "sh", "-c", "echo alive; sleep 60")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if st := h.status(handle); st.State != spec.Running {
		t.Fatalf("after kill -9 of wick run the app is %s, want RUNNING", st.State)
	}
	if r := h.exec("list"); !strings.Contains(r.stdout, handle) {
		t.Errorf("list lacks the app:\n%s", r.stdout)
	}
	waitLog(t, h, handle, "sh/0 alive")
	if r := h.exec("cancel", handle); r.code != 0 {
		t.Fatalf("cancel: %s", r.stderr)
	}
	if st := h.status(handle); st.State != spec.Cancelled {
		t.Errorf("after cancel: %s", st.State)
	}
}

// TestSIGTERMOfAttachedRunCancels: Ctrl-C or SIGTERM of an attached run cancels the
// app, and wick then ends by the signal (130 or 143 in a shell), as an interrupted
// command does.
func TestSIGTERMOfAttachedRunCancels(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			h := newHarness(t)
			cmd, handle := startAttached(t, h, "utils.sh", "sh", "-c", "echo alive; sleep 60")
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			if !killedBy(err, sig) {
				t.Errorf("wick run ended with %v, want ended by %s once the app is cancelled", err, sig)
			}
			if st := h.status(handle); st.State != spec.Cancelled {
				t.Errorf("app is %s, want CANCELLED", st.State)
			}
		})
	}
}

// TestTwentyConcurrentDetachedRuns: twenty wick run --detach at once give twenty intact
// apps.
func TestTwentyConcurrentDetachedRuns(t *testing.T) {
	h := newHarness(t)
	const n = 20
	handles := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := h.exec("run", "--detach", "utils.echo", "--msg", fmt.Sprintf("message %d", i))
			if r.code != 0 {
				t.Errorf("run %d: %d %s", i, r.code, r.stderr)
			}
			handles[i] = strings.TrimSpace(r.stdout)
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, handle := range handles {
		if seen[handle] {
			t.Fatalf("handle %s given twice", handle)
		}
		seen[handle] = true
		h.waitState(handle, spec.Succeeded)
		r := h.exec("log", "--no-prefix", handle)
		if r.stdout != fmt.Sprintf("message %d\n", i) {
			t.Errorf("log of app %d: %q", i, r.stdout)
		}
	}
	var apps []spec.AppStatus
	json.Unmarshal([]byte(h.exec("list", "-s", "local_cwd", "--json").stdout), &apps)
	if len(apps) != n {
		t.Errorf("list shows %d apps, want %d", len(apps), n)
	}
}

func TestUnwritableLogDir(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "-cfg", "log_dir=/proc/wick-cannot-write", "utils.echo")
	if r.code == 0 {
		t.Fatal("run with an unwritable log_dir succeeded")
	}
	assertOneLineError(t, r.stderr, "log")
	var apps []spec.AppStatus
	json.Unmarshal([]byte(h.exec("list", "-s", "local_cwd", "--json").stdout), &apps)
	if len(apps) != 0 {
		t.Errorf("an app was left behind: %+v", apps)
	}
}
