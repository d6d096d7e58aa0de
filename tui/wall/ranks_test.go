package wall_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// needTorch skips a test that needs PyTorch when it is missing, and fails it under
// CI=true. Debian's torch is for /usr/bin/python3; torchrun (/usr/bin/torchrun) runs it.
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
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but PyTorch is missing (apt-get install python3-torch): %v", err)
		}
		t.Skipf("PyTorch is not installed (apt-get install python3-torch): %v", err)
	}
}

// runDDP launches examples/ddp/train.py with dist.ddp through `wick run --detach`, as
// the README shows it (--tee 1 and PET_REDIRECTS=1: Debian's torch 1.13 crashes on
// dist.ddp's default --tee 3; LOGLEVEL=INFO: torchrun says which node got which ranks).
func (e *env) runDDP(j string, script ...string) spec.Handle {
	e.t.Helper()
	needTorch(e.t)
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "ddp", "train.py"))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, "train.py"), src, 0o644); err != nil {
		e.t.Fatal(err)
	}
	// A free port for the rendezvous: other tests may run DDP at the same time.
	port := strconv.Itoa(testkit.FreePort(e.t))
	args := append([]string{"run", "--detach", "-s", "local_cwd", "dist.ddp", "-j", j, "--tee", "1", "--rdzv_port", port,
		"--env", "PET_REDIRECTS=1,LOGLEVEL=INFO", "--script", "train.py", "--"}, script...)
	cmd := exec.Command(wickBin, args...)
	cmd.Dir = e.home
	cmd.Env = append(os.Environ(), "WICK_HOME="+e.home, "HOME="+e.home, "XDG_CONFIG_HOME="+filepath.Join(e.home, "config"))
	out, err := cmd.Output()
	if err != nil {
		e.t.Fatalf("wick run: %v\n%s", err, out)
	}
	fields := strings.Fields(string(out))
	if len(fields) == 0 {
		e.t.Fatal("wick run printed no handle")
	}
	h, err := spec.ParseHandle(fields[len(fields)-1])
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		c := exec.Command(wickBin, "cancel", h.String())
		c.Env = cmd.Env
		_ = c.Run()
	})
	return h
}

// TestWallPanePerRank: a 2x2 DDP training shows a pane per global rank, titled with
// the rank and its node, holding that rank's lines without torchrun's prefix, and a
// pane per node with the agent's own lines; the rank 0 progress bar is live.
func TestWallPanePerRank(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.runDDP("2x2", "--epochs", "2", "--samples", "512", "--step_delay", "0.05")
	d := e.open(h, 200, 60, nil)
	scr := d.waitForIn(3*time.Minute, "rank 0 train/", "rank 3 train/", "node", "rank 3/4", "rank 2/4")
	for _, want := range []string{"rank 0", "rank 1", "rank 2", "rank 3"} {
		if !regexp.MustCompile(`(^|▸ |  )` + want + ` train/\d `).MatchString(scr) {
			t.Fatalf("no pane titled %q:\n%s", want, scr)
		}
	}
	// A rank's pane holds its lines without the prefix; the node pane the agent's.
	d.lacks("[0]:rank", "[1]:rank")
	d.waitFor("Rendezvous complete")
	// The live bar of rank 0 (local rank 0 of its node), marked in progress.
	d.waitForIn(3*time.Minute, "⋯epoch")
	d.waitForIn(3*time.Minute, "end of logs")
	d.contains("rank 3 done", "rank 0 done")
}

// TestWallFocusesTheRaisingRank: when rank 1 of a 2x2 training raises, the wall
// focuses rank 1's pane and shows its exception as the app's error.
func TestWallFocusesTheRaisingRank(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.runDDP("2x2", "--epochs", "1", "--samples", "512", "--fail_rank", "1", "--fail_step", "1", "--step_delay", "0.05")
	// The other node's agent takes a while to give up: wait for the end first.
	for deadline := time.Now().Add(testkit.Scale(3 * time.Minute)); ; time.Sleep(100 * time.Millisecond) {
		if d, err := e.r.Describe(context.Background(), h); err == nil && d.Status.State.Terminal() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("app %s never ended", h)
		}
	}
	d := e.open(h, 200, 60, nil)
	d.waitFor("FAILED", "Summary", "end of logs")
	scr := d.screen()
	if strings.Contains(scr, "Summary FAILED error: RuntimeError: [./gloo") {
		// The engine chose a victim's error (issue 9, section 3, on the engine side).
		t.Fatalf("the app's error is a victim's, not the raising rank's:\n%s", scr)
	}
	if !strings.Contains(scr, "▸ rank 1 ") {
		t.Fatalf("rank 1 is not focused:\n%s", scr)
	}
	head := strings.SplitN(scr, "\n", 3)[1]
	if !strings.Contains(head, "FAILED · ") || !strings.Contains(scr, "Summary FAILED error: ") {
		t.Fatalf("the header and the summary do not name the app's error:\n%s", scr)
	}
	t.Log(scr)
}

// TestWallNoRecordFailure: rank 3 of a 2x2 job raises in a script without @record
// (examples/ddp/multinode.py), run without LOGLEVEL=INFO on the default port. The
// header counts nodes and ranks and names rank 3's exception; the wall focuses rank
// 3's pane, which holds rank 3's lines (only its: under c10d node k need not be group
// rank k) and its traceback, which torchrun wrote unprefixed to the node's stderr.
// Opened after the app ended, or watching it fail: the traceback that reached the
// node's pane moves to the rank's once the root cause names the rank.
func TestWallNoRecordFailure(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		live  bool
		delay string
	}{{"after", false, "0"}, {"live", true, "0.5"}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			needTorch(t)
			src, err := os.ReadFile(filepath.Join("..", "..", "examples", "ddp", "multinode.py"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(e.home, "multinode.py"), src, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(wickBin, "run", "--detach", "-s", "local_cwd", "dist.ddp", "-j", "2x2", "--tee", "1",
				"--env", "PET_REDIRECTS=1", "--script", "multinode.py", "--", "3", "--fail_rank", "3", "--fail_step", "3",
				"--step_delay", c.delay)
			cmd.Dir = e.home
			cmd.Env = append(os.Environ(), "WICK_HOME="+e.home, "HOME="+e.home, "XDG_CONFIG_HOME="+filepath.Join(e.home, "config"))
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("wick run: %v\n%s", err, out)
			}
			h, err := spec.ParseHandle(strings.TrimSpace(string(out)))
			if err != nil {
				t.Fatal(err)
			}
			var d *driver
			if c.live {
				// The wall follows the app from its start: rank 3's traceback reaches
				// the node's pane before anything says whose it is.
				d = e.open(h, 200, 60, nil)
			}
			testkit.Wait(t, 3*time.Minute, "app "+h.String()+" ends", func() (bool, string) {
				d, err := e.r.Describe(context.Background(), h)
				if err != nil {
					return false, err.Error()
				}
				return d.Status.State.Terminal(), d.Status.State.String()
			})
			if !c.live {
				d = e.open(h, 200, 60, nil)
			}
			defer func() {
				if t.Failed() {
					if d, err := e.r.Describe(context.Background(), h); err == nil {
						for _, r := range d.Status.Roles[0].Replicas {
							g := -1
							if r.GroupRank != nil {
								g = *r.GroupRank
							}
							t.Logf("replica %d: group rank %d, %s, %.120s", r.ID, g, r.State, r.StructuredError)
						}
					}
				}
			}()
			scr := d.waitFor("FAILED", "end of logs", "▸ rank 3 ")
			head := strings.SplitN(scr, "\n", 3)[1]
			for _, want := range []string{"rank 3: RuntimeError: loss diverged on rank 3 at step 3", "2 nodes · 4 ranks"} {
				if !strings.Contains(head, want) {
					t.Errorf("the header lacks %q:\n%s", want, scr)
				}
			}
			d.keys("z")
			d.waitFor("zoomed on rank 3")
			d.contains("[RANK3] Epoch 0", "Traceback (most recent call last):", "RuntimeError: loss diverged on rank 3 at step 3")
			d.lacks("[RANK2]", "[RANK1]", "[RANK0]")
		})
	}
}
