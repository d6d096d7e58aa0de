package cli

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/internal/testkit"
)

// styler without colors, for printers in tests.
type plainStyler struct{}

func (plainStyler) Prefix(_ int, s string) string { return s }

func TestLivePrinterRewritesPendingLine(t *testing.T) {
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	p := &linePrinter{w: w, st: plainStyler{}, prefix: true, index: map[string]int{}}
	lp := newLivePrinter(p, w, &out)
	lp.width = func() int { return 20 }
	line := func(text string, pending bool) sched.Line {
		return sched.Line{Role: "t", Replica: 0, Stream: sched.Stderr, Text: text, Pending: pending}
	}
	steps := []struct {
		l    sched.Line
		idle bool
		want string
	}{
		{line(" 10%|#", true), false, ""},                                                  // drawn only when idle
		{line(" 20%|##", true), true, "t/0  20%|##"},                                       // the latest update
		{line("a long bar that does not fit", true), true, "\r\x1b[2Kt/0 a long bar tha…"}, // cut to the width, never wrapped
		{sched.Line{Role: "t", Stream: sched.Stdout, Text: "loss 1"}, true, "\r\x1b[2Kt/0 loss 1\nt/0 a long bar tha…"},
		{line("\r 10%\r100%|###", false), true, "\r\x1b[2Kt/0  10%\rt/0 100%|###\n"}, // committed: replaces it
	}
	for i, s := range steps {
		out.Reset()
		if err := lp.emit(s.l); err != nil {
			t.Fatal(err)
		}
		if s.idle {
			lp.idle()
		}
		w.Flush()
		if got := out.String(); got != s.want {
			t.Errorf("step %d: wrote %q, want %q", i, got, s.want)
		}
	}
	out.Reset()
	lp.finish()
	if out.Len() != 0 {
		t.Errorf("finish with nothing pending wrote %q", out.String())
	}
}

// startLiveTerm runs one wick command (args) in a terminal: a 160x20 window of a
// private tmux server.
func startLiveTerm(t *testing.T, h *harness, args string) *testkit.Tmux {
	t.Helper()
	cmd := "cd " + h.work + " && exec env WICK_HOME=" + h.home + " HOME=" + h.user + " NO_COLOR=1 TERM=xterm-256color " + h.self + " " + args
	return testkit.StartTmux(t, 160, 20, cmd)
}

// waitBar waits until the screen has shown two different frames of epoch 0's bar of
// total steps, always on one row.
func waitBar(t *testing.T, lt *testkit.Tmux, total int) {
	t.Helper()
	deadline := time.Now().Add(testkit.Scale(30 * time.Second))
	seen := map[string]bool{}
	for len(seen) < 2 {
		screen := lt.Screen()
		for _, l := range strings.Split(screen, "\n") {
			// The bar of epoch 0 stays unfinished for the whole test: only the live
			// line shows it.
			if i := strings.Index(l, "Epoch 0:"); i >= 0 && strings.Contains(l, "/"+strconv.Itoa(total)+" [") {
				seen[l[i:i+len("Epoch 0:   x%")]] = true
				if n := strings.Count(screen, "Epoch 0:"); n != 1 {
					t.Fatalf("the bar is on %d rows, want 1 rewritten in place:\n%s", n, screen)
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no live progress bar (frames seen: %v):\n%s", seen, screen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRunShowsProgressBarLive runs demo.train attached in a terminal (tmux): the bar,
// which has no newline until its epoch ends, is on the screen while it is drawn.
func TestRunShowsProgressBarLive(t *testing.T) {
	h := newHarness(t)
	lt := startLiveTerm(t, h, "run demo.train --replicas 1 --rate 4 --steps_per_epoch 400 --duration 60s --warnings=false")
	waitBar(t, lt, 240)
	lt.Keys("C-c")
	lt.WaitFor(30*time.Second, "CANCELLED")
}

// TestLogFollowShowsProgressBarLive: wick log -t in a terminal shows the bar of an app
// launched elsewhere live too.
func TestLogFollowShowsProgressBarLive(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "--detach", "demo.train", "--replicas", "2", "--rate", "4", "--steps_per_epoch", "400", "--duration", "60s", "--warnings=false")
	if r.code != 0 {
		t.Fatalf("run: exit %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { h.exec("cancel", handle) })
	lt := startLiveTerm(t, h, "log -t "+handle+"/trainer/1")
	waitBar(t, lt, 240)
}

// TestRunOverPipePrintsCommittedLinesOnly: attached output to a pipe has no pending
// lines and no terminal codes, however long a line stays unfinished.
func TestRunOverPipePrintsCommittedLinesOnly(t *testing.T) {
	h := newHarness(t)
	script := "printf '\\rbar 1'; sleep 0.5; printf '\\rbar 2'; sleep 0.5; printf '\\rbar 3\\ndone\\n'\n"
	if err := os.WriteFile(filepath.Join(h.work, "bar.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	r := h.exec("run", "utils.sh", "--", "sh", "bar.sh")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "\x1b[") {
		t.Errorf("terminal codes over a pipe: %q", r.stderr)
	}
	if n := strings.Count(r.stderr, "bar 1"); n != 1 {
		t.Errorf("bar 1 printed %d times, want once (in its committed line): %q", n, r.stderr)
	}
}
