package local

import (
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/internal/testkit"
)

// A child that has exited and is not reaped yet still holds its status: the watch of
// a torchrun node's workers reads it before torchrun reaps them.
func TestZombieExitStatus(t *testing.T) {
	for _, tc := range []struct {
		script string
		code   int
		sig    unix.Signal
	}{
		{"exit 3", 3, 0},
		{"kill -SEGV $$", 0, unix.SIGSEGV},
	} {
		cmd := exec.Command("sh", "-c", tc.script)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var status int
		var ok bool
		deadline := time.Now().Add(testkit.Scale(10 * time.Second))
		for !ok && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
			status, ok = zombieExitStatus(cmd.Process.Pid)
		}
		_ = cmd.Wait()
		ws := unix.WaitStatus(status)
		if !ok || ws.ExitStatus() != tc.code && tc.sig == 0 || tc.sig != 0 && (!ws.Signaled() || ws.Signal() != tc.sig) {
			t.Errorf("%s: status %#x %v", tc.script, status, ok)
		}
		if _, ok := zombieExitStatus(cmd.Process.Pid); ok {
			t.Errorf("%s: a reaped process read as a zombie", tc.script)
		}
	}
}

// torchrun's agent's line for a failed worker (torch 1.13,
// torch/distributed/elastic/multiprocessing/api.py, SubprocessContext._poll), as a
// real node of examples/failures/import_error.py wrote it; a worker's teed line that
// says the same is not the agent's.
func TestAgentFailureLine(t *testing.T) {
	for line, want := range map[string]bool{
		"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 29562) of binary: /usr/bin/python3.11\n": true,
		"[0]:ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 1) of binary: x\n":                   false,
		"step 3 failed (exitcode: none)\n": false,
	} {
		if got := isAgentFailure([]byte(line)); got != want {
			t.Errorf("%q: %v, want %v", line, got, want)
		}
	}
	for argv, want := range map[string]int{"torchrun --nnodes 2 x.py": 0, "torchrun --max_restarts 2 x.py": 2, "torchrun --max-restarts=3 x.py": 3} {
		if got := maxRestartsOf([]string{"bash", "-c", argv}); got != want {
			t.Errorf("%s: %d, want %d", argv, got, want)
		}
	}
}
