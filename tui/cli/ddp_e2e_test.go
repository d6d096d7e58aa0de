package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// needTorch skips a test that needs PyTorch when it is missing, and fails it under
// CI=true (.ci/run installs Debian's python3-torch). Debian's torch is for
// /usr/bin/python3; torchrun (on PATH, /usr/bin/torchrun) runs it.
func needTorch(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("real torch training: skipped with -short")
	}
	_, err := exec.LookPath("torchrun")
	if err == nil {
		err = exec.Command("/usr/bin/python3", "-c", "import torch.distributed").Run()
	}
	if err != nil {
		if testkit.InCI() {
			t.Fatalf("CI=true but PyTorch is missing (apt-get install python3-torch): %v", err)
		}
		t.Skipf("PyTorch is not installed (apt-get install python3-torch): %v", err)
	}
}

// ddpHarness copies examples/ddp/train.py into the harness's work directory, so that
// its processes are recognizable by path.
func ddpHarness(t *testing.T) *harness {
	t.Helper()
	needTorch(t)
	h := newHarness(t)
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "ddp", "train.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.work, "train.py"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	return h
}

// ddpArgs runs the example the way the README shows: --tee 1 and PET_REDIRECTS=1 (torch
// 1.13 on Python 3.11 crashes on dist.ddp's default --tee 3), LOGLEVEL=INFO so that
// torchrun says which node got which ranks.
//
// A multi-node run gets a free port for its c10d store: with TorchX's fixed 29500, two
// apps at once on one machine (other tests' DDP runs) would share one store and fail
// when its owner ends.
func ddpArgs(t *testing.T, j string, script ...string) []string {
	args := []string{"run", "-s", "local_cwd", "dist.ddp", "-j", j, "--tee", "1", "--env", "PET_REDIRECTS=1,LOGLEVEL=INFO"}
	if !strings.HasPrefix(j, "1x") {
		args = append(args, "--rdzv_port", strconv.Itoa(testkit.FreePort(t)))
	}
	args = append(args, "--script", "train.py", "--")
	return append(args, script...)
}

// ddpTimeout bounds one wick command of a DDP test: importing torch in six processes
// takes tens of seconds on a busy machine.
const ddpTimeout = 5 * time.Minute

// execLong is harness.exec with ddpTimeout.
func execLong(h *harness, args ...string) result {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(ddpTimeout))
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
	if ctx.Err() != nil {
		h.t.Fatalf("wick %v: not done within %v\n%s", args, ddpTimeout, errb.String())
	}
	return result{code, out.String(), errb.String()}
}

func handleOf(t *testing.T, r result) string {
	t.Helper()
	h := strings.TrimSpace(strings.SplitN(r.stdout, "\n", 2)[0])
	if !strings.Contains(h, "://") {
		t.Fatalf("no handle printed: %q %q", r.stdout, r.stderr)
	}
	return h
}

func TestDDPTrains(t *testing.T) {
	// Waits on torch processes of its own (own WICK_HOME, work dir and ports): it may
	// overlap the other DDP tests.
	t.Parallel()
	for _, c := range []struct {
		j            string
		nodes, nproc int
	}{{"1x2", 1, 2}, {"2x2", 2, 2}} {
		t.Run(c.j, func(t *testing.T) {
			h := ddpHarness(t)
			r := execLong(h, ddpArgs(t, c.j, "--epochs", "2", "--samples", "512", "--checkpoint", "model.pt")...)
			if r.code != 0 {
				t.Fatalf("training failed: exit %d\n%s", r.code, r.stderr)
			}
			handle := handleOf(t, r)
			if _, err := os.Stat(filepath.Join(h.work, "model.pt")); err != nil {
				t.Errorf("no checkpoint: %v", err)
			}
			all := h.exec("log", handle)
			world := c.nodes * c.nproc
			for rank := range world {
				if !strings.Contains(all.stdout, "rank "+strconv.Itoa(rank)+" done") {
					t.Errorf("wick log lacks rank %d's last line:\n%s", rank, all.stdout)
				}
			}
			// The bar of rank 0 (stderr, \r) is in the logs, one line per epoch.
			if n := strings.Count(all.stdout, "epoch 1 100%|"); n != 1 {
				t.Errorf("rank 0's finished bar of epoch 1 appears %d times", n)
			}
			// Each rank's lines, found through torchrun's prefixes and its rendezvous.
			for rank := range world {
				lr := h.exec("log", handle+"/train", "--rank", strconv.Itoa(rank))
				if lr.code != 0 {
					t.Fatalf("log --rank %d: exit %d %s", rank, lr.code, lr.stderr)
				}
				for other := range world {
					has := strings.Contains(lr.stdout, "rank "+strconv.Itoa(other)+" done")
					if has != (other == rank) {
						t.Errorf("log --rank %d: line of rank %d present=%v:\n%s\nthe whole log:\n%s", rank, other, has, lr.stdout, all.stdout)
					}
				}
			}
		})
	}
}

// TestDDPFailingRankIsTheAppError: rank 3 of a 2x2 job raises in a script with @record
// (its error file holds the exception). The app's error names the global rank as a
// failure found without an error file does, wherever wick shows it, and rank 3's view
// holds its traceback.
func TestDDPFailingRankIsTheAppError(t *testing.T) {
	// Waits on torch processes of its own (own WICK_HOME, work dir and ports): it may
	// overlap the other DDP tests.
	t.Parallel()
	h := ddpHarness(t)
	const want = "rank 3: InjectedFailure: rank 3 fails on purpose at step 3"
	repeat(t, "the root cause names rank 3 (@record)", func(t *testing.T, run int) {
		r := execLong(h, ddpArgs(t, "2x2", "--epochs", "50", "--samples", "512", "--fail_rank", "3", "--fail_step", "3")...)
		if r.code != 1 {
			t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
		}
		handle := handleOf(t, r)
		st := h.status(handle)
		if msg := spec.ErrorMessage(st.StructuredError); st.State != spec.Failed || msg != want || st.Msg != want {
			t.Errorf("app %s, error %q, msg %q; want %q", st.State, msg, st.Msg, want)
		}
		if got := lastLine(r.stderr); got != "wick: "+want {
			t.Errorf("the attached run ends with %q, want %q", got, "wick: "+want)
		}
		if s := h.exec("status", handle); !strings.Contains(s.stdout, "error:    "+want+"\n") {
			t.Errorf("wick status:\n%s", s.stdout)
		}
		if d := h.exec("describe", handle); !strings.Contains(d.stdout, want) {
			t.Errorf("wick describe:\n%s", d.stdout)
		}
		l3 := h.exec("log", handle+"/train", "--rank", "3")
		for _, s := range []string{"rank 3/4", "Traceback (most recent call last):", "raise InjectedFailure(", want[len("rank 3: "):]} {
			if !strings.Contains(l3.stdout, s) {
				t.Errorf("wick log --rank 3 lacks %q:\n%s\nstderr: %s\nthe whole log:\n%s", s, l3.stdout, l3.stderr, h.exec("log", handle, "--timestamps").stdout)
			}
		}
	})
}

func TestDDPCancelLeavesNoPython(t *testing.T) {
	// Waits on torch processes of its own (own WICK_HOME, work dir and ports): it may
	// overlap the other DDP tests.
	t.Parallel()
	h := ddpHarness(t)
	r := h.exec(append([]string{"run", "--detach"}, ddpArgs(t, "1x2", "--epochs", "1000", "--step_delay", "0.2")[1:]...)...)
	if r.code != 0 {
		t.Fatalf("exit %d %s", r.code, r.stderr)
	}
	handle := handleOf(t, r)
	deadline := time.Now().Add(testkit.Scale(ddpTimeout))
	for !strings.Contains(h.exec("log", handle).stdout, "rank 1/2") {
		if time.Now().After(deadline) {
			t.Fatalf("the workers never started:\n%s", h.exec("log", handle).stdout)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if pids := scriptProcs(t, h.work); len(pids) < 2 {
		t.Fatalf("%d processes run train.py, want the 2 workers at least", len(pids))
	}
	if c := h.exec("cancel", handle); c.code != 0 {
		t.Fatalf("cancel: exit %d %s", c.code, c.stderr)
	}
	if st := h.status(handle); st.State != spec.Cancelled {
		t.Fatalf("app is %s after cancel", st.State)
	}
	// Every worker and agent is gone, not just the replica's leader.
	deadline = time.Now().Add(testkit.Scale(10 * time.Second))
	for {
		pids := scriptProcs(t, h.work)
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("python processes left after cancel: %v", pids)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// scriptProcs returns the pids of the processes whose command line names a file in dir.
func scriptProcs(t *testing.T, dir string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(b), "train.py") {
			if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && cwd == dir {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// TestDDPTee3CrashIsNamed: dist.ddp's default --tee 3 crashes torch 1.13's torchrun on
// Python 3.11; wick says what to do instead.
func TestDDPTee3CrashIsNamed(t *testing.T) {
	t.Parallel()
	h := ddpHarness(t)
	r := execLong(h, "run", "-s", "local_cwd", "dist.ddp", "-j", "1x1", "--script", "train.py", "--", "--epochs", "1", "--samples", "64")
	if r.code == 0 {
		t.Skip("this torch does not crash on --tee 3")
	}
	if !strings.Contains(r.stderr, "hint: torchrun crashed parsing --tee/--redirects") || !strings.Contains(r.stderr, "--tee 1 --env PET_REDIRECTS=1") {
		t.Fatalf("the crash is not explained:\n%s", r.stderr)
	}
	st := h.exec("status", handleOf(t, r))
	if !strings.Contains(st.stderr, "--tee 1 --env PET_REDIRECTS=1") {
		t.Errorf("wick status does not name the workaround: %q", st.stderr)
	}
	var js spec.AppStatus
	if err := json.Unmarshal([]byte(h.exec("status", "--json", handleOf(t, r)).stdout), &js); err != nil || js.State != spec.Failed {
		t.Errorf("status --json: %v %s", err, js.State)
	}
}

// gluePy makes real torchrun's tee glue two workers' lines as a loaded machine does
// now and then: local rank 0 is held between its text and its newline (print's two
// writes), while local rank 1 prints a whole line.
const gluePy = `import os, sys, time
r = int(os.environ["LOCAL_RANK"])
time.sleep(3)
if r == 0:
    sys.stdout.write("rank 0 text")
    sys.stdout.flush()
    time.sleep(1.0)
    sys.stdout.write("\n")
else:
    time.sleep(0.4)
    print("rank 1 whole line", flush=True)
time.sleep(1)
`

// TestDDPGluedTeeLine: torch 1.13's tee (tail_logfile) copies a partial line, and the
// other worker's line lands on it ("[0]:rank 0 text[1]:rank 1 whole line"): wick log
// --rank gives each rank its part (TestDDPFailingRankIsTheAppError's flake under
// load). The tee's timing is torch's: a run where it read the whole line (a deadline
// on the machine, not a defect) is skipped.
func TestDDPGluedTeeLine(t *testing.T) {
	t.Parallel()
	h := ddpHarness(t)
	if err := os.WriteFile(filepath.Join(h.work, "glue.py"), []byte(gluePy), 0o644); err != nil {
		t.Fatal(err)
	}
	r := execLong(h, "run", "-s", "local_cwd", "dist.ddp", "-j", "1x2", "--tee", "1", "--env", "PET_REDIRECTS=1", "--script", "glue.py")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	handle := handleOf(t, r)
	if all := h.exec("log", handle).stdout; !strings.Contains(all, "[0]:rank 0 text[1]:rank 1 whole line\n") {
		t.Skipf("torchrun did not glue the lines this time:\n%s", all)
	}
	for rank, want := range []string{"glue/0 [0]:rank 0 text\nglue/0 [0]:\n", "glue/0 [1]:rank 1 whole line\n"} {
		if l := h.exec("log", handle+"/glue", "--rank", strconv.Itoa(rank)); l.stdout != want {
			t.Errorf("log --rank %d:\n%s%s\nwant\n%s", rank, l.stdout, l.stderr, want)
		}
	}
}
