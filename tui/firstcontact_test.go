package tui_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
	"github.com/wick-dev/wick/tui/common"
)

// TestPreviewWrapsTheCommand: the dry-run preview cut the torchrun command, the line a
// user checks before launching, with "…" at the view's width, and nothing showed the
// rest. The preview now folds long lines under their start; w cuts them again.
func TestPreviewWrapsTheCommand(t *testing.T) {
	e := newEnv(t)
	d := newDriver(t, e.opts, 80, 24)
	openForm(d, "dist.ddp")
	d.typ("examples/ddp/train.py")
	d.keys("enter")
	d.contains("=== APPLICATION ===")
	screen := plain(d.screen())
	for _, want := range []string{"--nproc_per_node 2", "examples/ddp/train.py\""} {
		if !strings.Contains(screen, want) {
			t.Errorf("the preview at 80 columns does not show %q of the command:\n%s", want, screen)
		}
	}
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, "torchrun") && strings.HasSuffix(l, "…") {
			t.Errorf("the command is still cut: %q", l)
		}
	}
	d.keys("w")
	screen = plain(d.screen())
	if strings.Contains(screen, "--nproc_per_node 2") {
		t.Errorf("w did not cut the long lines again:\n%s", screen)
	}
	d.contains("torchrun --rdzv_backend c10d")
}

// TestPickerOpensATypedComponentFile: a TorchX project's ./component.py:trainer, what
// `wick run` takes, filtered the picker to nothing. Typed, it is the first row; enter
// reads it through the user's TorchX and opens its form, and its preview plans it.
func TestPickerOpensATypedComponentFile(t *testing.T) {
	e := newEnv(t)
	find := withTorchX(t, e)
	src := "import torchx.specs as specs\n\n\ndef trainer(script: str = \"train.py\", nproc: int = 2) -> specs.AppDef:\n    \"\"\"Trains the model.\n\n    Args:\n        script: the training script\n        nproc: processes per node\n    \"\"\"\n    return specs.AppDef(name=\"trainer\", roles=[specs.Role(name=\"trainer\", image=\"/tmp\", entrypoint=\"python3\", args=[script])])\n"
	if err := os.WriteFile(filepath.Join(find.WorkDir, "component.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	d := newDriver(t, e.opts, 120, 30)
	d.keys("n")
	d.typ("./component.py:trainer")
	d.contains("▸ ./component.py:trainer", "a component file: enter reads it")
	d.lacks("no component matches")
	d.keys("enter")
	d.contains("trainer  Trains the model.", "▸  script", "train.py", "nproc")
	d.keys("enter")
	d.contains("=== APPLICATION ===", "entrypoint:   python3", "args:         [train.py]")

	// A typo is one line in the status bar, and the picker stays.
	d.keys("esc", "esc")
	d.keys("ctrl+u")
	d.typ("./component.py:trainr")
	d.keys("enter")
	d.contains("✗ ./component.py:trainr is not a TorchX component", "› ./component.py:trainr")
}

// TestBulkConfirmCountsAtConfirmTime: the confirm of a bulk cancel counted the marked
// apps from the last listing, which may be minutes old ("Cancel 2 marked apps?" of
// which one had ended). It reads their states when it asks.
func TestBulkConfirmCountsAtConfirmTime(t *testing.T) {
	e := newEnv(t)
	a := e.launch(shApp("first", sleeper, 1))
	b := e.launch(shApp("second", sleeper, 1))
	d := newDriver(t, e.opts, 140, 24)
	d.send(tick())
	d.waitScreen("2 running")
	d.keys("space", "space")
	d.contains("2 marked")
	// One ends behind the list's back, before its next listing.
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	if err := e.r.Cancel(ctx, e.handle(a)); err != nil {
		t.Fatal(err)
	}
	e.wait(a)
	d.keys("x")
	d.contains("Cancel 1 marked app? (1 already ended: skipped)")
	d.keys("y")
	if st := e.wait(b); st.State != spec.Cancelled {
		t.Errorf("%s: %s, want CANCELLED", b, st.State)
	}

	// P counts the finished apps when it asks too: both have ended since the listing.
	d.keys("P")
	d.contains("Delete 2 finished apps?")
	d.keys("n")
}

// TestWallHeaderKeepsItsPartsBesideAnError: a failed app's error filled the wall's
// header and pushed out the replica count, follow/paused and the search. The error now
// gets the room the other parts leave, cut with "…".
func TestWallHeaderKeepsItsPartsBesideAnError(t *testing.T) {
	e := newEnv(t)
	long := "ValueError: " + strings.Repeat("the loss went somewhere it should not have gone ", 4)
	h := e.launch(shApp("bad", "echo 'Traceback (most recent call last):' >&2; echo '  File \"train.py\", line 3, in <module>' >&2; echo '"+long+"' >&2; exit 1", 2))
	e.wait(h)
	d := newDriver(t, e.opts, 100, 24)
	d.send(tick())
	d.waitScreen("FAILED")
	d.keys("l")
	d.waitScreen("2 replicas")
	header := strings.Split(plain(d.screen()), "\n")[1]
	for _, want := range []string{"FAILED", "ValueError: the loss", "…", "2 replicas"} {
		if !strings.Contains(header, want) {
			t.Errorf("the header lacks %q: %q", want, header)
		}
	}
	d.keys("/")
	d.typ("loss")
	d.keys("enter")
	header = strings.Split(plain(d.screen()), "\n")[1]
	if !strings.Contains(header, "2 replicas") || !strings.Contains(header, "loss") || !strings.Contains(header, "ValueError") {
		t.Errorf("with a search, the header is %q", header)
	}
}

// TestHelpBarSaysWhatTheRowDoes: the help bar was the same on a sweep's row as on an
// app's (describe, logs, relaunch, none of which a sweep's row does; z, p and c only
// in ?), and the wall's chart keys M L E Z were only in ?. The bar now starts with what
// works where the cursor is.
func TestHelpBarSaysWhatTheRowDoes(t *testing.T) {
	e := newEnv(t)
	sw := startSleepSweep(t, e)
	d := newDriver(t, e.opts, 140, 24)
	testkit.Wait(t, 20*time.Second, "the sweep's row", func() (bool, string) {
		d.send(tick())
		return strings.Contains(d.screen(), "+ "+sw), d.screen()
	})
	d.keys("g") // the sweep's row is the newest
	bar := lastLine(d.screen())
	if !strings.HasPrefix(bar, "z unfold • x cancel sweep • p chart • c compare") || strings.Contains(bar, "l logs") || strings.Contains(bar, "relaunch") {
		t.Errorf("on a sweep's row the help bar is %q", bar)
	}
	d.keys("z")
	if bar := lastLine(d.screen()); !strings.HasPrefix(bar, "z fold") {
		t.Errorf("on an unfolded sweep's row the help bar is %q", bar)
	}
	d.keys("down")
	if bar := lastLine(d.screen()); !strings.Contains(bar, "l logs") || strings.Contains(bar, "unfold") {
		t.Errorf("on an app's row the help bar is %q", bar)
	}
	d.keys("space")
	if bar := lastLine(d.screen()); !strings.HasPrefix(bar, "x cancel 1 marked • D delete 1 marked") {
		t.Errorf("with an app marked the help bar is %q", bar)
	}
}

// lastLine is the last line of screen, its trailing blanks cut.
func lastLine(screen string) string {
	lines := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// TestChartKeysInTheHelpBar: with the wall's chart shown, the help bar starts with its
// keys (they were only in ?); closed, they go.
func TestChartKeysInTheHelpBar(t *testing.T) {
	e := newEnv(t)
	h := e.launch(shApp("train", "for i in 1 2 3 4 5 6; do echo \"step $i loss 2.$i\"; done", 1))
	e.wait(h)
	d := newDriver(t, e.opts, 140, 24)
	d.send(tick())
	d.waitScreen("SUCCEEDED")
	d.keys("l")
	d.waitScreen("loss 2.6")
	d.keys("p")
	if bar := lastLine(d.screen()); !strings.HasPrefix(bar, "M metric • L log • E smooth • Z range • p close chart") {
		t.Errorf("with the chart shown the help bar is %q", bar)
	}
	d.keys("p")
	if bar := lastLine(d.screen()); strings.Contains(bar, "M metric") {
		t.Errorf("with the chart closed the help bar is %q", bar)
	}
}

// TestNoticeGoesWithItsView: a notice stayed for 8 s, shown again when the user came
// back to its view, read as the answer to what they had just done there. It goes when
// its view is left.
func TestNoticeGoesWithItsView(t *testing.T) {
	e := newEnv(t)
	h := e.launch(shApp("one", "echo one", 1))
	e.wait(h)
	d := newDriver(t, e.opts, 140, 24)
	d.send(tick())
	d.waitScreen("SUCCEEDED")
	d.keys("p") // an app of no sweep: p says what it is for
	d.contains("p charts a sweep's apps")
	d.keys("l")
	d.waitScreen("one/0")
	d.keys("esc")
	d.contains("SUCCEEDED")
	d.lacks("p charts a sweep's apps")
}

// TestFinishedPaneSaysBelowNotNew: scrolled up in the pane of a replica that has
// ended, its title said "+N new" (and "paused" at the bottom): nothing new comes to it.
// It says how many lines are below.
func TestFinishedPaneSaysBelowNotNew(t *testing.T) {
	e := newEnv(t)
	h := e.launch(shApp("many", "seq 1 200", 1))
	e.wait(h)
	d := newDriver(t, e.opts, 120, 24)
	d.send(tick())
	d.waitScreen("SUCCEEDED")
	d.keys("l")
	d.waitScreen("200")
	d.keys("pgup")
	scr := plain(d.screen())
	title := lineWith(scr, "many/0")
	if !regexp.MustCompile(`\+\d+ below`).MatchString(title) || strings.Contains(title, " new") || strings.Contains(title, "paused") {
		t.Errorf("the finished pane's title, scrolled up: %q\n%s", title, scr)
	}
}

// TestAlertWhenAnAppEnds: with [alerts] in config.toml, an app that ends while the UI
// runs is said in the status line over whatever view is open (the terminal is told by
// BEL or a notification); the apps that had ended before the UI looked are not.
func TestAlertWhenAnAppEnds(t *testing.T) {
	e := newEnv(t)
	old := e.launch(shApp("old", "exit 3", 1))
	e.wait(old)
	e.opts.SettingsPath = filepath.Join(t.TempDir(), "wick", "config.toml")
	writeFile(t, e.opts.SettingsPath, "[alerts]\nwhen = [\"ended\"]\nnotify = \"osc9\"\n")
	d := newDriver(t, e.opts, 140, 24)
	t0 := time.Now()
	d.send(common.TickMsg{Time: t0}) // the first listing: what is known
	d.lacks("FAILED;", e.handle(old).AppID+" FAILED")
	h := e.launch(shApp("fresh", "true", 1))
	e.wait(h)
	d.keys("n") // elsewhere: the picker
	d.send(common.TickMsg{Time: t0.Add(6 * time.Second)})
	d.contains(e.handle(h).AppID + " SUCCEEDED")
	d.lacks(e.handle(old).AppID + " FAILED")
}

// listCounter counts the listings of local_cwd asked of the engine (the list lists
// each scheduler on its own: one of them stands for all).
type listCounter struct {
	common.Backend
	n atomic.Int32
}

func (c *listCounter) List(ctx context.Context, scheduler string) ([]spec.AppStatus, []error) {
	if scheduler == "local_cwd" || scheduler == "" {
		c.n.Add(1)
	}
	return c.Backend.List(ctx, scheduler)
}

// TestAlertsTakeTheListsListing: the alerts list no apps of their own (on Slurm each
// listing is an squeue): with the app list on top they take its listing of each tick,
// and elsewhere they ask it for one every 5 s, which also keeps it fresh.
func TestAlertsTakeTheListsListing(t *testing.T) {
	e := newEnv(t)
	e.opts.SettingsPath = filepath.Join(t.TempDir(), "wick", "config.toml")
	writeFile(t, e.opts.SettingsPath, "[alerts]\nwhen = [\"ended\"]\n")
	c := &listCounter{Backend: e.opts.Runner}
	e.opts.Runner = c
	d := newDriver(t, e.opts, 140, 24)
	t0 := time.Now()
	start := c.n.Load() // the list's first listing
	for i := range 10 {
		d.send(common.TickMsg{Time: t0.Add(time.Duration(i) * time.Second)})
	}
	if n := c.n.Load() - start; n != 10 {
		t.Errorf("10 ticks with the list on top listed %d times, want 10 (the list's own)", n)
	}
	h := e.launch(shApp("fresh", "true", 1))
	e.wait(h)
	d.keys("n") // elsewhere: the picker
	start = c.n.Load()
	for i := 10; i < 21; i++ {
		d.send(common.TickMsg{Time: t0.Add(time.Duration(i) * time.Second)})
	}
	if n := c.n.Load() - start; n != 2 {
		t.Errorf("11 ticks elsewhere listed %d times, want 2 (5 s after the last, at 9 s: at 14 s and 19 s)", n)
	}
	d.contains(e.handle(h).AppID + " SUCCEEDED")
}
