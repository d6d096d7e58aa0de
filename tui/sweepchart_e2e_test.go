package tui_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestSweepChartInTmux: a real sweep of demo.train (three apps of 20, 40 and 60 steps,
// two at a time, on local_cwd) run to its end by `wick run --sweep`, then `wick ui`
// in tmux: p on the sweep's row opens the chart of the three apps' losses, named by
// their steps; L and E change its scale and smoothing as in the rank chart; t shows
// the table sorted by the best loss; esc goes back to the app list.
func TestSweepChartInTmux(t *testing.T) {
	testkit.NeedTmux(t)
	bin := wickBinary(t)
	dir := t.TempDir()
	home, work, state := filepath.Join(dir, "home"), filepath.Join(dir, "work"), filepath.Join(dir, "state")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"WICK_HOME=" + state, "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "TERM=xterm-256color"}

	run := exec.Command(bin, "run", "--sweep", "steps=20,40,60", "--max-parallel", "2",
		"demo.train", "--replicas", "1", "--rate", "200", "--steps_per_epoch", "1000")
	run.Dir, run.Env = work, append(os.Environ(), env...)
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("wick run --sweep: %v\n%s", err, out)
	}
	id := regexp.MustCompile(`sweep-[0-9a-z]{8}`).FindString(string(out))
	if id == "" {
		t.Fatalf("no sweep id in:\n%s", out)
	}
	t.Cleanup(func() { // the queue ends once its apps have: wait for it, then the dirs go
		store := sweep.NewStore(state)
		testkit.Wait(t, 20*time.Second, "the sweep's queue gone", func() (bool, string) {
			sw, err := store.Load(id)
			return err != nil || !sw.QueueRunning(), fmt.Sprint(err)
		})
	})

	s := testkit.StartTmux(t, 120, 32, "cd "+work+" && exec env "+strings.Join(env, " ")+" "+bin+" ui")
	s.WaitFor(e2eTimeout, "+ "+id, "sweep of 3: 3 succeeded")
	s.Keys("p")
	scr := s.WaitFor(e2eTimeout, "sweep "+id+" · 3 apps: 3 succeeded · t: table", "loss · ", "● steps=20 ", "● steps=40 ", "● steps=60 ")
	// The longest app prints step lines 0 to 59 and ends its epoch's tqdm-style bar at
	// 60/60: a bar's drawing is a point at its own count (issue #35), and tqdm counts
	// the iterations done, so the axis runs to 60.
	if !regexp.MustCompile(`(?m)^ +0 +step +60 *$`).MatchString(scr) {
		t.Errorf("the x axis is not the steps 0 to 60 of the longest app:\n%s", scr)
	}
	if !strings.Contains(scr, "⣿") && !strings.Contains(scr, "⠉") && !strings.Contains(scr, "⣀") {
		t.Errorf("no curve drawn:\n%s", scr)
	}
	t.Logf("the overlay:\n%s", scr)
	s.Keys("L")
	s.WaitFor(e2eTimeout, "loss · log scale")
	s.Keys("E")
	s.WaitFor(e2eTimeout, "loss · log scale · smoothed 0.6")
	s.Keys("t")
	scr = s.WaitFor(e2eTimeout, "3 apps · sorted by the lowest best loss", "STEPS", "LAST LOSS", "@STEP")
	// The longest run trained furthest: its loss is the lowest.
	var order []string
	for _, l := range strings.Split(scr, "\n") {
		if f := strings.Fields(strings.TrimPrefix(l, "▸")); len(f) > 2 && strings.HasPrefix(f[0], "demo-train-steps") {
			order = append(order, f[1])
		}
	}
	if strings.Join(order, " ") != "60 40 20" {
		t.Errorf("the table's order of steps: %v, want 60 40 20 (the lowest best loss first):\n%s", order, scr)
	}
	t.Logf("the table:\n%s", scr)
	s.Keys("Escape")
	s.WaitFor(e2eTimeout, "Apps  ", "+ "+id)
}
