package wall_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/tui"
)

// The search prompt starts empty: typing starts a new query rather than appending to
// the last one, which up recalls and enter on the untouched field keeps.
func TestWallSearchPromptStartsEmpty(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("four", 4, fourWorkers))
	e.wait(h)
	d := e.open(h, 160, 48, nil)
	d.waitFor("end of logs", "w3 done")
	d.keys("i", "/")
	d.typ("line 1")
	d.keys("enter")
	d.waitFor("/line 1 44 matches")
	d.keys("/")
	d.contains("search all panes (↑ previous query")
	d.typ("w2 done")
	d.keys("enter")
	d.waitFor("/w2 done 1 match")
	// Up recalls the previous query.
	d.keys("/", "up")
	d.contains("/w2 done")
	d.keys("enter")
	d.waitFor("/w2 done 1 match")
	// Enter on the untouched field keeps the query, and n still walks it.
	d.keys("/", "enter", "n")
	d.waitFor("/w2 done 1 match", "▸ worker/2")
}

// Follow is per pane, and the header says which panes are paused: "following" only
// when every pane follows; F (and G) make them all follow. Timestamps are the wall's
// (t), or one pane's (T).
func TestWallFollowAllAndStamps(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("ticker", 2, `i=0; while true; do i=$((i+1)); echo "tick $i of w$K"; sleep 0.01; done`))
	d := e.open(h, 120, 30, nil)
	d.waitFor("tick 40 of w0", "tick 40 of w1", "following")
	d.keys("f", "tab")
	// worker/1 has the focus and follows; worker/0 is still paused, and the header says so.
	d.contains("▸ worker/1", "paused: worker/0 (F follows all)")
	d.lacks("following")
	d.keys("f")
	d.contains("all panes paused (F follows all)")
	d.keys("F")
	d.contains("following")
	d.lacks("paused", "new")
	d.keys("f", "G")
	d.contains("following")
	d.lacks("paused")

	both := regexp.MustCompile(`(?m)^ \d\d:\d\d:\d\d\.\d{3} tick .*│ \d\d:\d\d:\d\d\.\d{3} tick `)
	left := regexp.MustCompile(`(?m)^ \d\d:\d\d:\d\d\.\d{3} tick .*│ tick `)
	d.keys("t")
	if !both.MatchString(d.screen()) {
		t.Fatalf("t did not show timestamps in every pane:\n%s", d.screen())
	}
	// T: this pane only (worker/1 has the focus).
	d.keys("T")
	if !left.MatchString(d.screen()) {
		t.Fatalf("T did not hide the timestamps of worker/1 only:\n%s", d.screen())
	}
	d.keys("t")
	if regexp.MustCompile(`\d\d:\d\d:\d\d\.\d{3} tick`).MatchString(d.screen()) {
		t.Fatalf("t did not hide every pane's timestamps:\n%s", d.screen())
	}
}

// The layout does not jump when the app ends: 2 panes stacked while running stay
// stacked once the summary takes its rows (it tiled them side by side).
func TestWallLayoutHoldsWhenTheAppEnds(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	app := shApp("two", 2, `echo "w$K up"; i=0; while [ ! -e "$D/done" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; echo "w$K done"`)
	app.Roles[0].Env["D"] = dir
	h := e.run(app)
	d := e.open(h, 100, 30, nil)
	d.waitFor("w0 up", "w1 up", "RUNNING")
	d.lacks("│")
	if err := os.WriteFile(filepath.Join(dir, "done"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d.waitFor("Summary", "end of logs", "w0 done", "w1 done")
	d.lacks("│")
	d.keys("i")
	d.lacks("Summary", "│")
}

// The summary's columns line up, whatever the widths of exit codes and durations.
func TestWallSummaryAligned(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("codes", 3, `echo "w$K" >&2; sleep 0.$K; exit $((K*7))`))
	e.wait(h)
	d := e.open(h, 160, 48, nil)
	scr := d.waitFor("Summary", "end of logs", "exit 14")
	cols := map[int]bool{}
	stderr := map[int]bool{}
	n := 0
	for _, l := range strings.Split(scr, "\n") {
		if !strings.Contains(l, "restarts 0") {
			continue
		}
		n++
		cols[strings.Index(l, "restarts 0")] = true
		stderr[strings.Index(l, "last stderr:")] = true
	}
	if n != 3 || len(cols) != 1 || len(stderr) != 1 {
		t.Fatalf("the summary's columns are not aligned (%d rows):\n%s", n, scr)
	}
}

// Save offers the app's log directory, writes files only their owner reads, asks
// before overwriting one, and creates no directory.
func TestWallSaveAsksAndCreatesNoDirectory(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("four", 4, fourWorkers))
	e.wait(h)
	desc, err := e.r.Describe(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	logDir := filepath.Dir(filepath.Dir(desc.Status.Roles[0].Replicas[0].LogDir))
	d := e.open(h, 200, 48, nil)
	d.waitFor("end of logs", "w3 done")
	want := filepath.Join(logDir, h.AppID+"-worker-0.log")
	d.keys("S")
	d.contains("save to: " + appID.ReplaceAllString(logDir, "-XXXXXXXXXXXX") + "/four-")
	d.keys("enter")
	d.waitFor("saved 32 lines to ")
	fi, err := os.Stat(want)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("saved with mode %v, want 0600", fi.Mode().Perm())
	}
	// Saving again asks; no leaves the file as it was.
	if err := os.WriteFile(want, []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.keys("S", "enter")
	d.waitFor("exists: overwrite it?")
	d.keys("n")
	if b, _ := os.ReadFile(want); string(b) != "mine\n" {
		t.Fatalf("the file was overwritten without a yes: %q", b)
	}
	d.keys("S", "enter")
	d.waitFor("exists: overwrite it?")
	d.keys("y")
	d.waitFor("saved 32 lines to ")
	if b, _ := os.ReadFile(want); !strings.HasPrefix(string(b), "w0 line 1\n") {
		t.Fatalf("the file was not overwritten after a yes: %q", b)
	}
	// A missing directory is refused, not created.
	missing := filepath.Join(t.TempDir(), "no", "such")
	d.keys("S", "ctrl+u")
	d.typ(filepath.Join(missing, "x.log"))
	d.keys("enter")
	d.waitFor("save: no directory " + missing)
	if _, err := os.Stat(filepath.Dir(missing)); err == nil {
		t.Fatalf("save created %s", filepath.Dir(missing))
	}
}

// x cancels the app from the wall, with the app list's confirmation; H hides a pane.
func TestWallCancelsTheApp(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("sleepy", 2, `echo "w$K up"; sleep 60`))
	d := e.open(h, 120, 30, nil)
	d.waitFor("w0 up", "w1 up", "RUNNING")
	d.keys("H")
	d.contains("1 hidden (X shows)")
	d.keys("X", "x")
	d.contains("Cancel local_cwd://wick/sleepy-", "Its replicas get SIGTERM, then SIGKILL.")
	d.keys("n")
	d.contains("nothing done", "RUNNING")
	d.keys("x", "y")
	d.waitFor("cancelled local_cwd://wick/sleepy-")
	d.waitFor("CANCELLED", "end of logs")
}

// y says the lines were sent to the terminal's clipboard (whether it took them cannot
// be known), and the help tells tmux users about set-clipboard.
func TestWallCopySaysSent(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("four", 4, fourWorkers))
	e.wait(h)
	d := e.open(h, 200, 48, nil)
	d.waitFor("end of logs", "w3 done")
	d.keys("i", "v", "k", "y")
	if d.clipboard != "w0 warning: low disk\nw0 done" {
		t.Fatalf("clipboard = %q", d.clipboard)
	}
	d.contains("sent 2 lines to the terminal's clipboard")
	d.lacks("copied")
	d.keys("f1")
	d.waitFor("set-clipboard on")
}

// A paused pane standing in the lines on disk fills its rows: zoomed (made taller),
// and restored on reopening, it shows lines, not blank rows or "no lines yet".
func TestWallPaneOnDiskFills(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("many", 4, `i=1; while [ $i -le 10000 ]; do echo "n $i"; i=$((i+1)); done`))
	e.wait(h)
	ring := func(o *tui.Options) { o.RingLines = 4096 }
	d := e.open(h, 100, 30, ring)
	d.waitFor("end of logs", "n 10000")
	d.keys("i", "g")
	d.waitForRe(regexp.MustCompile(`(?m)^ n 1 `))
	d.keys("z")
	d.waitForRe(regexp.MustCompile(`(?m)^ n 20$`))
	// Up a few lines from the end of the logs, into the window read back, then close
	// and reopen: the pane stands where it was, its lines read back.
	d.keys("z", "G", "pgup", "pgup")
	scr := d.screen()
	top := regexp.MustCompile(`(?m)^ n (\d+) `).FindStringSubmatch(scr)
	if top == nil {
		t.Fatalf("no lines:\n%s", scr)
	}
	d.keys("g")
	d.waitForRe(regexp.MustCompile(`(?m)^ n 1 `))
	d.keys("j", "j", "j")
	d.close()
	d2 := e.open(h, 100, 30, ring)
	d2.waitFor("end of logs")
	d2.waitForRe(regexp.MustCompile(`(?m)^ n 4 `))
	d2.lacks("no lines yet")
}

// A running replica's pane title shows its CPU and RSS, read every second or two.
func TestWallTitlesShowUsage(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("sleepy", 2, `echo "w$K up"; sleep 60`))
	d := e.open(h, 160, 30, nil)
	d.waitFor("w0 up", "w1 up", "RUNNING")
	d.waitForRe(regexp.MustCompile(`worker/0 RUNNING .*CPU \d+% RSS [\d.]+[KMG]?i?B.*│.*worker/1 RUNNING .*CPU \d+% RSS`))
}

// TestWallTitlesAt80Columns: two panes at 80 columns cut a title's usage to "RSS
// 12.0…", a size without its unit. The usage gives way whole; the replica and its
// state stay, and a wider window shows the usage again.
func TestWallTitlesAt80Columns(t *testing.T) {
	e := newEnv(t)
	// Lines every 0.1s: the titles show a rate too ("10/s").
	h := e.run(shApp("ticking", 2, `echo "w$K up"; while :; do echo tick; sleep 0.1; done`))
	d := e.open(h, 160, 30, nil)
	d.waitFor("w0 up", "w1 up", "RUNNING")
	usage := regexp.MustCompile(`worker/0 RUNNING .*/s CPU \d+% RSS [\d.]+[KMG]?i?B.*│.*worker/1 RUNNING .*CPU \d+% RSS`)
	d.waitForRe(usage)
	d.update(tea.WindowSizeMsg{Width: 80, Height: 24})
	scr := d.screen()
	if regexp.MustCompile(`(CPU|RSS) [\d.%]*…`).MatchString(scr) || !regexp.MustCompile(`worker/0 RUNNING.*│.*worker/1 RUNNING`).MatchString(scr) {
		t.Errorf("at 80 columns the pane titles:\n%s", scr)
	}
	d.update(tea.WindowSizeMsg{Width: 160, Height: 30})
	d.waitForRe(usage)
}
