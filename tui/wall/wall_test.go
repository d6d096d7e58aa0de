package wall_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui"
	"github.com/wick-dev/wick/tui/render"
)

// fourWorkers is a finished app of 4 replicas, 30 stdout lines and one stderr line
// each. Its lines on stdout and stderr are in time order as the supervisor reads
// them, each pipe apart: the sleeps between the streams leave it the time to read one
// before the other is written, on a machine busy with other tests too (CI: a 0.1 s
// sleep once put w2's warning before its lines 11-30).
const fourWorkers = `i=1; while [ $i -le 30 ]; do echo "w$K line $i"; i=$((i+1)); done; sleep 1; echo "w$K warning: low disk" >&2; sleep 1; echo "w$K done"`

func TestWallTilesFocusZoomHideMerge(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("four", 4, fourWorkers))
	e.wait(h)
	d := e.open(h, 160, 48, nil)
	d.waitFor("end of logs", "w3 done", "Summary")
	// The summary: each replica's exit code, restarts and last stderr line.
	d.contains("SUCCEEDED", "exit 0", "restarts 0", "last stderr: w2 warning: low disk")
	d.keys("i")
	d.lacks("Summary")
	d.contains("▸ worker/0 SUCCEEDED exit 0", "  worker/1 SUCCEEDED", "  worker/3 SUCCEEDED", "▌w1 warning: low disk")
	d.golden("wall_grid_160x48")

	d.keys("tab")
	d.contains("▸ worker/1", "  worker/0")
	d.keys("shift+tab")
	d.contains("▸ worker/0")
	d.keys("right", "right")
	d.contains("▸ worker/2")
	// A click focuses the pane under it (bottom right: worker/3).
	d.update(tea.MouseClickMsg{X: 120, Y: 40, Button: tea.MouseLeft})
	d.contains("▸ worker/3")

	d.keys("z")
	d.contains("zoomed on worker/3", "w3 line 30")
	d.lacks("worker/0")
	d.keys("z")
	d.contains("worker/0", "worker/3")

	d.keys("H")
	d.contains("1 hidden (X shows)")
	d.lacks("worker/3 SUCCEEDED")
	d.keys("X")
	d.contains("worker/3 SUCCEEDED")

	d.keys("m")
	d.contains("merged 4 panes in time order")
	// Every pane's lines are in it. Which ones the last screenful shows depends on
	// when each replica ran (a loaded machine starts them far apart): search for them.
	for _, w := range []string{"worker/0 w0 done", "worker/3 w3 done", "worker/3 w3 line 1"} {
		d.keys("/")
		d.typ(w[len("worker/0 "):])
		d.keys("enter")
		d.contains(w)
	}
	d.keys("esc")
	// Hiding worker/3 moved the focus on to worker/0.
	d.contains("▸ worker/0")
	d.lacks("merged 4 panes")
}

func TestWallFollowPauseScrollWrapStampsStreams(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("ticker", 2, `i=0; while true; do i=$((i+1)); echo "tick $i of w$K and some more text to wrap around the pane"; if [ $((i % 10)) = 0 ]; then echo "err $i" >&2; fi; sleep 0.01; done`))
	d := e.open(h, 120, 30, nil)
	d.waitFor("tick 40 of w0", "following", "RUNNING")
	d.keys("f")
	d.contains("paused: worker/0 (F follows all)")
	d.waitFor("new")
	// Scrolling: up a line, a page, to the top and back to the bottom (following).
	d.keys("g")
	d.contains("tick 1 of w0")
	d.keys("j", "pgdown")
	d.lacks("tick 1 of w0 ")
	d.keys("pgup", "k")
	d.contains("tick 1 of w0")
	d.keys("G")
	d.contains("following")
	d.lacks("tick 1 of w0 ")

	d.keys("z", "w")
	d.contains("wrap around the")
	d.keys("t")
	if !regexp.MustCompile(`\d\d:\d\d:\d\d\.\d{3} tick`).MatchString(d.screen()) {
		t.Fatalf("no timestamps:\n%s", d.screen())
	}
	d.keys("s")
	d.contains("stdout")
	d.lacks("err 1")
	d.keys("s")
	d.contains("stderr", "▌", "err 10")
	d.lacks("tick 3")
	d.keys("s")
	d.lacks(" stderr ")
	// Mouse wheel up pauses the pane under the pointer.
	d.update(tea.MouseWheelMsg{X: 10, Y: 10, Button: tea.MouseWheelUp})
	d.waitFor("new")
}

var focused = regexp.MustCompile(`▸ (worker/\d)`)

func TestWallSearch(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("four", 4, fourWorkers))
	e.wait(h)
	d := e.open(h, 160, 48, nil)
	d.waitFor("end of logs", "w3 done")
	d.keys("i", "/")
	d.typ("LINE 1")
	// Incremental, case-insensitive by default: line 1 and 10-19 in every pane.
	d.waitFor("44 matches")
	d.contains("worker/2 SUCCEEDED exit 0 11 matches")
	d.keys("enter")
	d.contains("/LINE 1 44 matches")
	// Only matching lines, then with context.
	d.keys("o")
	d.contains("only matches ±0", "w0 line 19")
	d.lacks("w0 line 2 ", "w0 line 25")
	d.keys("c")
	d.contains("only matches ±1", "w0 line 2", "w0 line 20")
	d.lacks("w0 line 25")
	d.keys("o", "c", "c", "c", "c")
	// Case toggle: nothing matches "LINE 1" with case.
	d.keys("alt+c")
	d.waitFor("0 matches")
	d.keys("alt+c")
	d.waitFor("44 matches")
	// Regex toggle.
	d.keys("/")
	d.keys("ctrl+u")
	d.typ("line [23]0$")
	d.waitFor("0 matches")
	d.keys("alt+r")
	d.waitFor("8 matches", "[regex]")
	d.keys("enter")
	// n and N walk the matches across panes in time order, focusing their pane.
	seen := map[string]bool{}
	for range 8 {
		d.keys("n")
		if f := focused.FindStringSubmatch(d.screen()); f != nil {
			seen[f[1]] = true
		}
	}
	if len(seen) != 4 {
		t.Fatalf("n visited panes %v, want all 4", seen)
	}
	d.keys("N")
	// Esc in the search field clears the search.
	d.keys("/", "esc")
	d.lacks("matches")
	// A bad regex says so.
	d.keys("/")
	d.typ("(")
	d.contains("bad regex")
}

func TestWallRingDropsAndReadsBack(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("many", 1, `i=1; while [ $i -le 10000 ]; do echo "n $i"; i=$((i+1)); done`))
	e.wait(h)
	d := e.open(h, 100, 30, func(o *tui.Options) { o.RingLines = 4096 })
	d.waitFor("end of logs", "n 10000")
	d.contains("4.1k older lines on disk")
	d.lacks("dropped")
	// One g reads every line before the ring back: the first line shows.
	d.keys("g")
	top := regexp.MustCompile(`(?m)^ n 1$`)
	d.waitForRe(top)
	if title := regexp.MustCompile(`▸ worker/0 [^\n]*older lines on disk`); title.MatchString(d.screen()) {
		t.Fatalf("the pane still has lines on disk:\n%s", d.screen())
	}
	d.keys("G")
	d.contains("n 10000", "4.1k older lines on disk")
}

// TestWallSearchEnterBeforeMatchesCome: enter pressed before the search found the
// match (it is on disk only, and searching the logs takes a while on a busy machine)
// still shows the match once it is found. The keys are all handled before any result
// of the search is, as when a user types fast: before, the view stayed where it was.
func TestWallSearchEnterBeforeMatchesCome(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("many", 1, `i=1; while [ $i -le 10000 ]; do echo "n $i."; i=$((i+1)); done`))
	e.wait(h)
	d := e.open(h, 100, 30, func(o *tui.Options) { o.RingLines = 4096 })
	d.waitFor("end of logs", "n 10000.")
	d.keys("/")
	for _, r := range "n 30." {
		d.update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	d.update(key("enter"))
	d.waitForRe(regexp.MustCompile(`(?m)^.?\s*n 30\.$`))
	d.contains("1 match")
}

func TestWallRetryDividerAndSummary(t *testing.T) {
	e := newEnv(t)
	marker := filepath.Join(t.TempDir(), "failed-once")
	app := shApp("retry", 1, `if [ -e "$M" ]; then echo "second run"; else : > "$M"; echo "first run"; echo "boom" >&2; exit 3; fi`)
	app.Roles[0].Env["M"] = marker
	app.Roles[0].MaxRetries = 1
	app.Roles[0].RetryPolicy = spec.RetryReplica
	h := e.run(app)
	e.wait(h)
	d := e.open(h, 120, 30, nil)
	d.waitFor("end of logs", "second run", "Summary")
	// The app ended before the wall opened: the previous exit comes from the
	// replica's recorded attempts, not from a status seen between the two runs.
	d.contains("first run", "── attempt 2, previous exit 3 ──", "restarts 1", "last stderr: boom", "↻1")
}

func TestWallSaveCopyAndRestore(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("four", 4, fourWorkers))
	e.wait(h)
	d := e.open(h, 160, 48, nil)
	d.waitFor("end of logs", "w3 done")
	// Save the focused pane.
	out := filepath.Join(t.TempDir(), "w0.log")
	d.keys("S")
	d.contains("save to: /", "/four-")
	d.keys("ctrl+u")
	d.typ(out)
	d.keys("enter")
	d.settle()
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(data)), "\n"); len(lines) != 32 || lines[0] != "w0 line 1" || lines[31] != "w0 done" {
		t.Fatalf("saved %d lines: %q", len(lines), data)
	}
	// Select three lines and copy them through OSC 52.
	d.keys("v", "k", "k", "y")
	if d.clipboard != "w0 line 30\nw0 warning: low disk\nw0 done" {
		t.Fatalf("clipboard = %q", d.clipboard)
	}
	// Set a layout, a search and a pause, close, reopen: they are back.
	d.keys("tab", "z", "/")
	d.typ("done")
	// Enter jumps to the latest match, focusing its pane.
	d.keys("enter", "f", "t")
	f := focused.FindStringSubmatch(d.screen())
	if f == nil {
		t.Fatalf("no focused pane:\n%s", d.screen())
	}
	d.close()
	d2 := e.open(h, 160, 48, nil)
	d2.waitFor("end of logs")
	d2.contains("zoomed on "+f[1], "/done", "4 matches")
	if !regexp.MustCompile(`\d\d:\d\d:\d\d\.\d{3} w`).MatchString(d2.screen()) {
		t.Fatalf("timestamps were not restored:\n%s", d2.screen())
	}
}

// TestWallEveryLineReachable: with most lines on disk only, the search finds them
// all (n moves to one, reading it back), g shows line 1, and a match past the 16 KB
// cut of a long line is found.
func TestWallEveryLineReachable(t *testing.T) {
	e := newEnv(t)
	// 30k numbered lines, then a 20 KB line whose only "needle" is past the cut.
	h := e.run(shApp("deep", 1, `seq -f "n %g" 1 30000; head -c 20000 /dev/zero | tr '\0' x; echo " needle"; echo tail`))
	e.wait(h)
	d := e.open(h, 120, 30, func(o *tui.Options) { o.RingLines = 4096 })
	d.waitFor("end of logs", "tail")
	scr := d.screen()
	if !regexp.MustCompile(`▸ worker/0 [^\n]*\d+(\.\d)?k older lines on disk`).MatchString(scr) {
		t.Fatalf("no count of the lines on disk:\n%s", scr)
	}
	d.lacks("dropped")
	d.keys("i")

	// "n 1234" is n 1234 and n 12340-12349: all far before the ring.
	d.keys("/")
	d.typ("n 1234")
	d.waitFor("11 matches")
	d.lacks("searching")
	d.keys("enter")
	// Enter went to the latest match, n wraps to the first: read back from disk.
	d.waitForRe(regexp.MustCompile(`(?m)^ n 12349$`))
	d.keys("n")
	d.waitForRe(regexp.MustCompile(`(?m)^ n 1234$`))
	d.contains("n 1233", "n 1235")

	// The long line's match past the cut.
	d.keys("/", "ctrl+u")
	d.typ("needle")
	d.waitFor("1 match")
	d.lacks("searching")
	d.keys("enter")
	d.keys("/", "esc")

	// g goes to line 1, G back to the end.
	d.keys("g")
	d.waitForRe(regexp.MustCompile(`(?m)^ n 1$`))
	d.contains("n 2", "n 3")
	d.keys("G")
	d.waitFor("tail")
	d.lacks(" n 1\n")
}

// TestWallPendingLine: a progress bar redrawn with \r shows live as the pane's last
// line, marked in progress, replaced as it changes and committed by its newline.
func TestWallPendingLine(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	// The replica moves on when the test has seen each state (files as signals; every
	// wait of the script has a deadline).
	script := `w() { i=0; while [ ! -e "$D/$1" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; }
echo "start"
printf 'epoch 1:  10%%|#         |'; w a
printf '\repoch 1:  50%%|#####     |'; w b
printf '\repoch 1: 100%%|##########|\n'; w c
echo "after"`
	app := shApp("bar", 1, script)
	app.Roles[0].Env["D"] = dir
	h := e.run(app)
	d := e.open(h, 120, 30, nil)
	signal := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	scr := d.waitFor("start", "⋯epoch 1:  10%|#         |")
	// It is the pane's last line, right below the committed ones.
	if !regexp.MustCompile(`(?m)^ start\n⋯epoch 1:  10%`).MatchString(scr) {
		t.Fatalf("the pending line is not the pane's last line:\n%s", scr)
	}
	signal("a")
	d.waitFor("⋯epoch 1:  50%|#####     |")
	d.lacks("10%")
	// Paused, the pane shows committed lines only.
	d.keys("f")
	d.lacks("50%")
	d.keys("f")
	d.contains("⋯epoch 1:  50%")
	signal("b")
	d.waitFor(" epoch 1: 100%|##########|")
	d.lacks("⋯", "50%")
	signal("c")
	d.waitFor("after", "end of logs")
	d.lacks("⋯")
}

// TestWallFocusesTheFailure: when the app fails, the wall focuses the replica whose
// failure failed it (not replica 0) and shows the app's error in the header and the
// summary.
func TestWallFocusesTheFailure(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("fail", 4, `if [ "$K" = 2 ]; then sleep 0.5; echo "w2 raises" >&2; exit 3; fi; echo "w$K waits"; sleep 60`))
	d := e.open(h, 160, 48, nil)
	d.waitFor("w0 waits", "▸ worker/0")
	d.waitFor("FAILED", "Summary")
	desc, err := e.r.Describe(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	msg := render.FirstLine(spec.ErrorMessage(desc.Status.StructuredError))
	if msg == "" {
		t.Fatalf("the app has no error: %+v", desc.Status)
	}
	d.contains("▸ worker/2", "error: "+msg)
	if head := strings.SplitN(d.screen(), "\n", 3)[1]; !strings.Contains(head, msg) {
		t.Fatalf("the header lacks the app's error %q:\n%s", msg, d.screen())
	}
}

// TestWallPendingLineCapped: a replica writing 200 KB without a newline shows the
// start of it as its pending line and says the rest is in the logs.
func TestWallPendingLineCapped(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	app := shApp("huge", 1, `head -c 200000 /dev/zero | tr '\0' x; i=0; while [ ! -e "$D/done" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; echo; echo end`)
	app.Roles[0].Env["D"] = dir
	h := e.run(app)
	d := e.open(h, 120, 30, nil)
	d.waitFor("⋯xxxxxxxx", "[line over 16 KB: the rest is in the logs]")
	if err := os.WriteFile(filepath.Join(dir, "done"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d.waitFor("end of logs", "end")
	d.lacks("⋯", "line over 16 KB")
}
