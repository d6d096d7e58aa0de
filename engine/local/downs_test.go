package local

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/internal/testkit"
)

// On real torch, a script without @record (examples/ddp/multinode.py) under torchrun
// 1x2, where rank 1 raises: its traceback and then rank 0's gloo failure reach the
// node's stderr unprefixed (--tee 1, PET_REDIRECTS=1). The watch sees each worker
// begin to end (its threads go) in the order of their tracebacks, rank 1 first, and
// the root cause names rank 1 on every run, whichever worker exited first (the one
// that raised may finalize for seconds, and exit after its peer).
func TestWorkersEndInTheOrderTheyFailed(t *testing.T) {
	t.Parallel()
	torchrun := "/usr/bin/torchrun"
	if _, err := os.Stat(torchrun); err != nil || exec.Command("/usr/bin/python3", "-c", "import torch").Run() != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI needs Debian's python3-torch (/usr/bin/torchrun)")
		}
		t.Skip("needs Debian's python3-torch: /usr/bin/torchrun and torch for /usr/bin/python3")
	}
	if testing.Short() {
		t.Skip("a real torchrun job takes seconds")
	}
	script, err := filepath.Abs("../../examples/ddp/multinode.py")
	if err != nil {
		t.Fatal(err)
	}
	const want = "rank 1: RuntimeError: loss diverged on rank 1 at step 3"
	for i := range 3 {
		t.Run("run"+strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(torchrun, "--nnodes", "1", "--nproc_per_node", "2", "--tee", "1", "--max_restarts", "0",
				"--master_port", strconv.Itoa(testkit.FreePort(t)), script, "3", "--fail_rank", "1", "--fail_step", "3")
			cmd.Env = append(os.Environ(), "PET_REDIRECTS=1", "LOGLEVEL=WARNING")
			cmd.Dir = t.TempDir()
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
			w := watchWorkers(cmd.Process.Pid, nil)
			var mu sync.Mutex
			f := &ranks.Failures{}
			read := make(chan struct{})
			go func() {
				defer close(read)
				sc := bufio.NewScanner(stderr)
				sc.Buffer(make([]byte, 64<<10), 1<<20)
				for sc.Scan() {
					mu.Lock()
					f.Feed(sc.Text(), time.Now())
					mu.Unlock()
				}
			}()
			select {
			case <-read:
			case <-time.After(testkit.Scale(3 * time.Minute)):
				t.Fatal("torchrun did not end within 3 minutes")
			}
			_ = cmd.Wait()
			w.stop()
			mu.Lock()
			defer mu.Unlock()
			n := ranks.NodeReport{Role: "ddp", NProc: 2, GroupRank: w.GroupRank(), Failures: f, Exits: w.Exits(), Downs: w.Downs()}
			pidOf := map[int]int{}
			for pid, v := range w.vars {
				pidOf[v.rank] = pid
			}
			downs, exits := n.Downs, n.Exits
			t.Logf("rank 1 (raised): down %v exit %v; rank 0: down %v exit %v",
				clock(downs[pidOf[1]]), clock(exits[pidOf[1]]), clock(downs[pidOf[0]]), clock(exits[pidOf[0]]))
			if d1, ok := downs[pidOf[1]]; !ok {
				t.Errorf("rank 1's end was not seen (downs %v)", downs)
			} else if d0, ok := downs[pidOf[0]]; ok && !d1.Before(d0) {
				t.Errorf("rank 1 began to end at %v, not before rank 0 (%v)", clock(d1), clock(d0))
			}
			if c, ok := ranks.RootCause([]ranks.NodeReport{n}); !ok || c.String() != want {
				t.Errorf("root cause %v %q, want %q; summary %+v", ok, c.String(), want, f.Summary)
			}
		})
	}
}

// clock is t's time of day to the millisecond, "-" for the zero time.
func clock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format("15:04:05.000")
}
