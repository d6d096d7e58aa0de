package tui_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/config"
	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
	"github.com/wick-dev/wick/tui"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/describe"
)

// openForm goes from the app list to the form of component name.
func openForm(d *driver, name string) {
	d.t.Helper()
	d.keys("n")
	d.typ(name)
	d.keys("enter")
	d.contains("Arguments")
}

func TestAppListEmpty(t *testing.T) {
	e := newEnv(t)
	d := newDriver(t, e.opts, 100, 20)
	d.contains("No apps yet. Press n to launch one.")
	d.golden("apps_empty_100x20")
}

func TestAppListLiveSortFilter(t *testing.T) {
	e := newEnv(t)
	seed(e)
	d := newDriver(t, e.opts, 120, 24)
	d.golden("apps_120x24")

	d.keys("o") // sort by name
	d.contains("sorted by name ↓", "NAME ↓")
	s := d.screen()
	if strings.Index(s, "local_cwd://wick/echo-") > strings.Index(s, "local_cwd://wick/train-") {
		t.Fatalf("echo is not above train when sorted by name:\n%s", s)
	}
	d.keys("O")
	d.contains("sorted by name ↑")

	d.keys("/")
	d.typ("fail")
	d.contains("1 shown", "wick/sh-")
	d.lacks("wick/train-")
	d.keys("enter") // stop typing; the filter stays
	d.keys("esc")   // clear it
	d.contains("wick/train-", "wick/sh-")
	d.lacks("shown")

	// Live: an app launched elsewhere appears on the next tick.
	e.launch(shApp("late", sleeper, 1))
	d.lacks("wick/late-")
	d.send(tick())
	d.contains("wick/late-", "6 apps", "3 running")
}

func TestLaunchEchoEndToEndInModel(t *testing.T) {
	// The replica's PATH (the working directory, then the inherited PATH) is in the
	// dry run, wrapped at the screen's width: a fixed PATH keeps the dry run's length,
	// which the pager shows ("1-29/47"), the same whatever PATH the tests run under
	// (CI with one more directory on it saw 50 lines).
	t.Setenv("PATH", "/usr/bin:/bin")
	e := newEnv(t)
	d := newDriver(t, e.opts, 120, 32)
	d.keys("n")
	d.typ("echo")
	d.golden("picker_echo_120x32")
	d.keys("enter")
	d.golden("form_echo_120x32")
	d.keys("ctrl+u")
	d.typ("hi there")
	d.keys("enter")
	d.contains("=== APPLICATION ===", `args:         ["hi there"]`, "=== SCHEDULER REQUEST (local_cwd) ===")
	d.golden("preview_echo_120x32")
	d.keys("enter")
	d.contains("launched local_cwd://wick/echo-", "▸ local_cwd://wick/echo-")
	h := selectedHandle(t, d)
	if st := e.wait(h); st.State != spec.Succeeded {
		t.Fatalf("%s is %s", h, st.State)
	}
	d.send(tick())
	d.contains("SUCCEEDED")
	d.golden("apps_after_launch_120x32")
	d.keys("l")
	d.contains("hi there", "end of logs")
}

func TestFormValidatesAsYouType(t *testing.T) {
	opts := newEnv(t).opts
	d := newDriver(t, opts, 120, 32)
	openForm(d, "utils.echo")
	d.keys("tab", "tab") // num_replicas
	d.keys("ctrl+u")
	d.typ("two")
	d.contains("✗")
	d.keys("enter")
	d.contains("Arguments", "num_replicas:")
	d.lacks("=== APPLICATION ===")
	d.keys("ctrl+u")
	d.typ("2")
	d.lacks("✗")
	d.keys("enter")
	d.contains("num_replicas: 2")
}

func TestFormRequiredAndRunOptions(t *testing.T) {
	opts := newEnv(t).opts
	d := newDriver(t, opts, 120, 32)
	openForm(d, "utils.touch")
	d.contains("*file", "✗ required", "Run options · local_cwd", "log_dir", "prepend_cwd", "stop_timeout")
	d.keys("enter")
	d.contains("file: required")
	d.typ("/tmp/x")
	d.lacks("✗ required")
	// Move to the run option "prepend_cwd", a toggle.
	d.focus("prepend_cwd", "tab")
	d.contains("put the working directory") // its help
	d.contains("[ ]")
	d.keys("space")
	d.contains("[x]")
	// Then to "stop_timeout", and give it a bad value.
	d.focus("stop_timeout", "tab")
	d.keys("ctrl+u")
	d.typ("soon")
	d.contains("✗ want a number")
	d.keys("enter")
	d.lacks("=== APPLICATION ===")
	d.keys("ctrl+u")
	d.typ("3")
	d.lacks("✗")
	d.keys("enter")
	d.contains("=== SCHEDULER REQUEST (local_cwd) ===", "touch", "/tmp/x", "stop_timeout: 3")
}

// TestFormOffersEveryScheduler runs over the runner `wick ui` uses (runner.Builtin:
// local_cwd, local_dir and local_docker): the form offers each scheduler, and the run
// options follow the one chosen.
func TestFormOffersEveryScheduler(t *testing.T) {
	e := newEnvWith(t, envConfig{reg: runner.Builtin()})
	d := newDriver(t, e.opts, 120, 32)
	openForm(d, "utils.echo")
	d.contains("◂ local_cwd ▸  local_dir  local_docker", "Run options · local_cwd", "log_dir")
	d.focus("scheduler", "tab")
	d.keys("right", "right")
	d.contains("local_cwd  local_dir  ◂ local_docker ▸", "Run options · local_docker", "copy_env", "privileged", "network")
	d.lacks("log_dir")
	d.keys("left")
	d.contains("◂ local_dir ▸", "Run options · local_dir", "log_dir")

	// An edit to local_cwd's run options survives a trip to another scheduler.
	d.keys("left")
	d.focus("prepend_cwd", "tab")
	d.keys("space")
	d.contains("[x]")
	d.focus("scheduler", "shift+tab")
	d.keys("right")
	d.contains("Run options · local_dir")
	d.keys("left")
	d.contains("Run options · local_cwd", "[x]")
}

// TestFormPlansThroughTheRunner: the form plans its command line with the Runner's
// DryRunComponent, as `wick run` does: the same error, word for word, and the
// component's warnings.
func TestFormPlansThroughTheRunner(t *testing.T) {
	opts := newEnv(t).opts
	d := newDriver(t, opts, 160, 40)
	openForm(d, "dist.spmd")
	d.focus("script", "tab")
	d.typ("train.py")
	d.focus("j", "tab")
	d.keys("ctrl+u")
	d.typ("2y4")
	d.keys("enter")
	_, want := opts.Runner.DryRunComponent(context.Background(), "dist.spmd", []string{"--script", "train.py", "-j", "2y4"}, "local_cwd", nil, "", components.Lookup{})
	if want == nil {
		t.Fatal("the Runner planned -j 2y4")
	}
	d.contains("dry run failed: " + want.Error()[:80])
	d.keys("esc")
	d.keys("ctrl+u")
	d.typ("1x2")
	d.keys("enter")
	d.contains("=== APPLICATION ===", "warning: -j 1x2 sets nproc_per_node=2, but a gpu.small host has 1 GPUs")
}

// TestFormToggleKeysAreActions: the keys of a toggle are rows of the action table, so
// help lists them and [keys] rebinds them.
func TestFormToggleKeysAreActions(t *testing.T) {
	opts := newEnv(t).opts
	opts.SettingsPath = filepath.Join(t.TempDir(), "config.toml")
	writeFile(t, opts.SettingsPath, "[keys]\ntoggle = \"t\"\n")
	d := newDriver(t, opts, 120, 32)
	openForm(d, "utils.echo")
	d.focus("prepend_cwd", "tab")
	d.contains("t toggle / next choice")
	d.keys("space")
	d.lacks("[x]")
	d.keys("t")
	d.contains("[x]")
	d.keys("?")
	d.contains("toggle / next choice", "previous choice", "prev-choice")
	d.keys("esc")
	d.keys("t")
	d.lacks("[x]")
}

func TestFormTypingIsNotAnAction(t *testing.T) {
	opts := newEnv(t).opts
	d := newDriver(t, opts, 120, 32)
	openForm(d, "utils.echo")
	d.keys("ctrl+u")
	d.typ("q?:n/x")
	if d.quit {
		t.Fatal("q typed in a field quit the UI")
	}
	d.contains("│q?:n/x", "Arguments")
}

func TestPreviewMasksSecretsUntilRevealed(t *testing.T) {
	opts := newEnv(t).opts
	d := newDriver(t, opts, 120, 40)
	openForm(d, "utils.sh")
	d.focus("env", "tab")
	d.typ("API_TOKEN=s3cr3t,PLAIN=visible")
	d.keys("enter")
	d.contains("API_TOKEN:", "••••••••", "visible")
	d.lacks("s3cr3t")
	d.keys("s")
	d.contains("s3cr3t")
	d.keys("s")
	d.lacks("s3cr3t")
}

func TestEscGoesBackKeepingValues(t *testing.T) {
	opts := newEnv(t).opts
	d := newDriver(t, opts, 120, 32)
	openForm(d, "utils.echo")
	d.keys("ctrl+u")
	d.typ("kept")
	d.keys("enter")
	d.contains("=== APPLICATION ===")
	d.keys("esc")
	d.contains("│kept")
	d.keys("esc")
	d.contains("› utils.echo", "1/9")
	d.keys("esc") // clears the filter first
	d.contains("type to filter components", "9/9")
	d.keys("esc")
	d.contains("No apps yet")
	d.keys("esc") // nothing below the app list
	d.contains("No apps yet")
}

func TestCancelAndDeleteAskFirst(t *testing.T) {
	e := newEnv(t)
	s := seed(e)
	d := newDriver(t, e.opts, 120, 24) // newest first: serve (RUNNING) is selected
	d.selected(s.serve)
	d.keys("x")
	d.contains("Cancel " + s.serve + "? Its replicas get SIGTERM, then SIGKILL.")
	d.golden("confirm_cancel_120x24")
	d.keys("n")
	d.contains("nothing done")
	d.lacks("CANCELLED  0/2")
	d.keys("D") // delete a running app: refused
	d.contains("cancel it first")
	d.keys("x", "y")
	d.contains("cancelled " + s.serve)
	if st := e.wait(s.serve); st.State != spec.Cancelled {
		t.Fatalf("%s is %s after the cancel", s.serve, st.State)
	}
	d.send(tick())
	d.contains("CANCELLED  0/2")
	d.keys("D")
	d.contains("Delete " + s.serve + "?")
	d.keys("y")
	d.contains("deleted "+s.serve, "4 apps")
	d.lacks(s.serve + "  serve") // its row
	if _, err := e.r.Status(context.Background(), e.handle(s.serve)); !errors.Is(err, runner.ErrNoSuchApp) {
		t.Fatalf("status of the deleted app: %v", err)
	}
}

func TestRelaunchRunsTheSameAppDef(t *testing.T) {
	opts := newEnv(t).opts
	d := newDriver(t, opts, 120, 32)
	openForm(d, "utils.echo")
	d.keys("ctrl+u")
	d.typ("again")
	d.keys("enter", "enter")
	d.contains("1 app ")
	d.keys("r", "y")
	d.contains("2 apps", "launched local_cwd://wick/echo-")
	d.keys("d")
	d.contains("args:         [again]")
}

func TestDescribeView(t *testing.T) {
	e := newEnv(t)
	s := seed(e)
	d := newDriver(t, e.opts, 120, 24)
	d.keys("j") // sh, FAILED
	d.keys("enter")
	d.contains("handle:   "+s.sh, "state:    FAILED", "error:    sh/0: exit code 3", "REPLICA", "sh/1")
	d.golden("describe_120x24")
	d.keys("esc")
	d.contains("Apps")
}

func TestHelpOverlayAndPalette(t *testing.T) {
	e := newEnv(t)
	s := seed(e)
	d := newDriver(t, e.opts, 120, 30)
	d.keys("?")
	d.contains("This view (apps)", "cancel", "delete all finished")
	d.golden("help_apps_120x30")
	d.keys("G")
	d.contains("Everywhere", "command palette")
	d.keys("q") // any key but a move closes
	d.lacks("Everywhere")

	d.keys(":")
	d.typ("descr")
	d.contains("describe")
	d.golden("palette_120x30")
	d.keys("enter")
	d.contains("handle:   " + s.serve)
}

func TestQuitSaysRunningAppsKeepRunning(t *testing.T) {
	e := newEnv(t)
	s := seed(e)
	d := newDriver(t, e.opts, 120, 24)
	d.keys("q")
	if !d.quit {
		t.Fatal("q did not quit")
	}
	if got := d.m.QuitNote(); !strings.Contains(got, "2 apps are still running and keep running") {
		t.Fatalf("quit note = %q", got)
	}
	// And they do.
	for _, h := range []string{s.train, s.serve} {
		if st, err := e.r.Status(context.Background(), e.handle(h)); err != nil || st.State != spec.Running {
			t.Fatalf("%s after quitting: %v, %v", h, st, err)
		}
	}
}

func TestQuitWithNothingRunningSaysNothing(t *testing.T) {
	opts := newEnv(t).opts
	d := newDriver(t, opts, 120, 24)
	d.keys("ctrl+c")
	if !d.quit || d.m.QuitNote() != "" {
		t.Fatalf("quit=%v note=%q", d.quit, d.m.QuitNote())
	}
}

func TestResizeAnyTime(t *testing.T) {
	e := newEnv(t)
	d := newDriver(t, e.opts, 160, 48)
	openForm(d, "utils.echo")
	for _, sz := range [][2]int{{59, 30}, {100, 11}, {20, 5}, {60, 12}, {80, 24}, {200, 60}} {
		d.send(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		s := d.screen()
		lines := strings.Split(s, "\n")
		if len(lines) != sz[1] && !strings.Contains(s, "bigger terminal") {
			t.Fatalf("%dx%d: %d lines", sz[0], sz[1], len(lines))
		}
		for i, l := range lines {
			if w := len([]rune(l)); w > sz[0] {
				t.Fatalf("%dx%d: line %d is %d wide:\n%s", sz[0], sz[1], i, w, s)
			}
		}
		small := sz[0] < 60 || sz[1] < 12
		if small != strings.Contains(s, "wick needs") {
			t.Fatalf("%dx%d: small=%v but screen:\n%s", sz[0], sz[1], small, s)
		}
	}
	d.send(tea.WindowSizeMsg{Width: 50, Height: 10})
	d.golden("too_small_50x10")
	d.send(tea.WindowSizeMsg{Width: 100, Height: 30})
	d.contains("Arguments", "utils.echo")
}

func TestMouseWheelAndClick(t *testing.T) {
	e := newEnv(t)
	// Older apps first, enough to scroll: old-00 is the newest of them.
	const old = 25
	for i := old - 1; i >= 0; i-- {
		e.wait(e.launch(echoApp(fmt.Sprintf("old-%02d", i), "old", 1)))
	}
	s := seed(e)
	d := newDriver(t, e.opts, 120, 24)
	d.contains(fmt.Sprintf("%d apps", old+5))
	id := func(h string) string { return h[strings.LastIndex(h, "/")+1:] }
	// Rows start at screen line 3 (title, summary, header): line 5 is the third app.
	d.send(tea.MouseClickMsg{X: 10, Y: 5, Button: tea.MouseLeft})
	d.selected(s.train)
	d.send(tea.MouseClickMsg{X: 10, Y: 5, Button: tea.MouseLeft}) // again: describe
	d.contains("handle:   " + s.train)
	d.keys("esc")

	d.keys("g")
	d.selected(s.serve)
	for range 3 {
		d.send(tea.MouseWheelMsg{X: 10, Y: 5, Button: tea.MouseWheelDown})
	}
	// Nine rows scrolled away: the selection moved along with the first visible row.
	d.lacks(id(s.serve), id(s.sh))
	d.selected("old-04-")
	d.send(tea.MouseWheelMsg{X: 10, Y: 5, Button: tea.MouseWheelUp})
	d.contains("old-01-")
	d.selected("old-04-")

	// A click on a crumb of the title bar goes back to that view.
	openForm(d, "utils.echo")
	d.keys("enter")
	d.contains("wick › apps › new app › utils.echo › preview")
	d.send(tea.MouseClickMsg{X: 16, Y: 0, Button: tea.MouseLeft}) // "wick › apps › ne|w app"
	d.contains("wick › apps › new app", "▸ utils.echo")
	d.lacks("utils.echo › preview")
}

func TestOpenOnLogs(t *testing.T) {
	e := newEnv(t)
	opts := e.opts
	d := newDriver(t, opts, 120, 24)
	openForm(d, "utils.echo")
	d.keys("ctrl+u")
	d.typ("to the logs")
	d.keys("enter", "enter")
	h := selectedHandle(t, d)
	e.wait(h)

	opts2 := opts
	opts2.Logs = h
	d2 := newDriver(t, opts2, 120, 24)
	d2.contains("logs echo-", "echo/0", "to the logs", "end of logs")
	d2.keys("esc")
	d2.contains("Apps")
}

// TestWallStateUnderTheRunnersStateDir: the wall keeps its layout under the state
// directory the Runner was given, whatever the environment says.
func TestWallStateUnderTheRunnersStateDir(t *testing.T) {
	e := newEnv(t)
	h := e.launch(echoApp("echo", "kept", 2))
	e.wait(h)
	saveWallLayout(t, e, h)
}

// saveWallLayout opens the wall of app h, changes its layout (zoom), closes the UI and
// returns the file the layout was saved to, under the Runner's state directory.
func saveWallLayout(t *testing.T, e *env, h string) string {
	t.Helper()
	opts := e.opts
	opts.Logs = h
	d := newDriver(t, opts, 120, 24)
	d.contains("echo/1", "kept")
	d.keys("z")
	d.m.Close()
	hd := e.handle(h)
	path := filepath.Join(e.r.StateDir(), "ui", "wall", hd.Scheduler+"_"+hd.Session+"_"+hd.AppID+".json")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the wall's state is not under the Runner's state directory: %v", err)
	}
	return path
}

func TestBadLogsHandle(t *testing.T) {
	opts := newEnv(t).opts
	opts.Logs = "nonsense"
	if _, err := tui.NewModel(opts); err == nil || !strings.Contains(err.Error(), "malformed app handle") {
		t.Fatalf("err = %v", err)
	}
}

// selectedHandle reads the handle of the selected row of the app list: from the row
// where it is written whole, else (the list writes SCHED and APP ID where the columns
// need the room) from the row's describe view, as a user would.
func selectedHandle(t *testing.T, d *driver) string {
	t.Helper()
	for _, l := range strings.Split(ansi.Strip(d.m.Screen()), "\n") {
		if !strings.HasPrefix(l, "▸ ") {
			continue
		}
		if f := strings.Fields(l); len(f) > 1 && strings.Contains(f[1], "://") {
			return f[1]
		}
		d.keys("enter")
		defer d.keys("esc")
		for _, l := range strings.Split(d.raw(), "\n") {
			if _, h, ok := strings.Cut(l, "handle:   "); ok {
				return strings.Fields(h)[0]
			}
		}
		t.Fatalf("no handle in the selected app's describe view:\n%s", d.raw())
	}
	t.Fatalf("no selected app:\n%s", d.screen())
	return ""
}

// tick is the UI's clock tick, on which live views refresh.
func tick() tea.Msg { return common.TickMsg{Time: time.Now()} }

// TestLaunchShowsProgressAndFailure launches with a wick binary that cannot run (an
// empty file, as an interrupted install leaves): the launch gets as far as starting
// the supervisor, then fails, and says why. (The screen is wide enough for the whole
// message: the launch view cuts long ones.)
func TestLaunchShowsProgressAndFailure(t *testing.T) {
	root := newRoot(t)
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	broken := filepath.Join(root, "bin", "wick")
	writeFile(t, broken, "")
	if err := os.Chmod(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, envConfig{self: []string{broken}})
	d := newDriver(t, e.opts, 120, 20)
	openForm(d, "utils.echo")
	d.keys("enter", "enter")
	d.contains("Launching echo on local_cwd", "✓ starting 1 replica",
		"✗ local_cwd: start supervisor: fork/exec "+broken+": exec format error", "launch failed")
	d.lacks("1 replicas")
	d.golden("launch_failed_120x20")
	d.keys("esc")
	d.contains("=== APPLICATION ===")
	// The app that could not start is recorded as FAILED, with the reason.
	d.keys("esc", "esc", "esc", "esc")
	d.send(tick())
	d.contains("1 app ", "FAILED")
	d.keys("d")
	d.contains("state:    FAILED", "exec format error")
}

// TestLaunchFailsOnALogDirTakenSinceThePreview: the log directory was fine when the
// preview was made, but a file took its place before the launch.
func TestLaunchFailsOnALogDirTakenSinceThePreview(t *testing.T) {
	e := newEnv(t)
	d := newDriver(t, e.opts, 160, 30)
	openForm(d, "utils.echo")
	d.focus("log_dir", "tab")
	logDir := filepath.Join(e.root, "logs")
	d.keys("ctrl+u")
	d.typ(logDir)
	d.keys("enter")
	d.contains("=== SCHEDULER REQUEST (local_cwd) ===", logDir+"/wick/echo-")
	writeFile(t, logDir, "not a directory\n")
	d.keys("enter")
	d.contains("✗ local_cwd: log directory "+logDir+"/wick/echo-", "cannot be created", "launch failed")
	d.lacks("✓ starting")
	d.keys("esc", "esc", "esc", "esc", "esc")
	d.send(tick())
	d.contains("No apps yet") // nothing was started
}

func TestPickerShowsUserComponents(t *testing.T) {
	opts := newEnv(t).opts
	user := &components.Component{
		Name: "train_mnist", Summary: "Trains MNIST.", Source: "/home/me/.wick/components/ml.yaml",
		Params: []components.Param{{Name: "epochs", Type: components.Int, Default: "3", Help: "passes over the data"}},
	}
	opts.Components = func() ([]*components.Component, error) {
		return append(components.Builtins(), user), nil
	}
	d := newDriver(t, opts, 120, 30)
	d.keys("n")
	d.contains("10/10", "[ml.yaml] Trains MNIST.")
	d.typ("mnist")
	d.contains("1/10", "▸ train_mnist", "/home/me/.wick/components/ml.yaml", "--epochs int = 3", "passes over the data")
	d.typ("zzz")
	d.contains("0/10", "no component matches")
}

func TestPickerLoadError(t *testing.T) {
	opts := newEnv(t).opts
	opts.Components = func() ([]*components.Component, error) {
		return components.Builtins(), errors.New("bad.yaml:3: unknown parameter \"ecpohs\"")
	}
	d := newDriver(t, opts, 120, 30)
	d.keys("n")
	d.contains(`bad.yaml:3: unknown parameter "ecpohs"`, "utils.echo")
}

func TestFormTakesTorchxconfigDefaults(t *testing.T) {
	opts := newEnv(t).opts
	// A .torchxconfig in the working directory, read by the real reader.
	writeFile(t, ".torchxconfig", "[local_cwd]\nstop_timeout = 5\nprepend_cwd = True\n\n[component:utils.echo]\nmsg = from torchxconfig\n")
	conf, err := config.LoadFiles(".torchxconfig")
	if err != nil {
		t.Fatal(err)
	}
	opts.Config = conf
	d := newDriver(t, opts, 120, 32)
	openForm(d, "utils.echo")
	d.contains("│from torchxconfig", "│5 ", "[x]")
	d.keys("enter")
	d.contains(`args:         ["from torchxconfig"]`, "stop_timeout: 5")
}

// TestGoroutinesEnd follows the logs of a running app (a reader blocked on the
// iterator), leaves them, and closes the UI: every goroutine the UI started ends.
func TestGoroutinesEnd(t *testing.T) {
	e := newEnv(t)
	// Launched first: the engine reaps the app's supervisor from a goroutine that lives
	// as long as the app, which is not the UI's.
	e.launch(shApp("sh", "echo started; "+sleeper, 1))
	before := runtime.NumGoroutine()
	d := newDriver(t, e.opts, 120, 24)
	d.contains("RUNNING")
	// The stream's commands block while following: run them as Bubble Tea would, in
	// goroutines, and check that leaving the view ends them.
	d.async = true
	d.keys("l")
	d.contains("following")
	d.waitScreen("started")
	d.keys("esc")
	d.m.Close()
	deadline := time.Now().Add(testkit.Scale(5 * time.Second))
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEveryThemeDraws walks the main views in each builtin theme and the plain one.
func TestEveryThemeDraws(t *testing.T) {
	e := newEnv(t)
	s := seed(e)
	for _, name := range []string{"dark", "light", "high-contrast", "plain"} {
		t.Run(name, func(t *testing.T) {
			opts := e.opts
			opts.Theme = name
			if name == "plain" {
				opts.Theme = ""
				opts.Getenv = func(k string) string {
					if k == "NO_COLOR" {
						return "1"
					}
					return e.opts.Getenv(k)
				}
			}
			d := newDriver(t, opts, 120, 30)
			d.selected(s.serve)
			d.contains("RUNNING", "SUCCEEDED", "FAILED", "CANCELLED")
			d.keys("?")
			d.contains("Moving") // the overlay drew (Everywhere is below the fold at 30 rows)
			d.keys("esc", "enter")
			d.contains("handle:   " + s.serve)
			d.keys("esc")
			openForm(d, "utils.echo")
			d.keys("enter")
			d.contains("=== APPLICATION ===")
		})
	}
}

// TestAppsVanishBehindTheList deletes apps elsewhere while the last row is selected:
// the next listing has fewer apps, and the selection moves to one that is left.
func TestAppsVanishBehindTheList(t *testing.T) {
	e := newEnv(t)
	s := seed(e)
	d := newDriver(t, e.opts, 120, 24)
	d.keys("G")
	d.selected(s.eval)
	for _, h := range []string{s.eval, s.echo, s.train, s.sh} {
		e.remove(h)
	}
	d.send(tick())
	d.contains("1 app ")
	d.selected(s.serve)
	e.remove(s.serve)
	d.send(tick())
	d.contains("No apps yet")
	d.keys("enter", "x", "D", "r", "l")
	d.contains("no app selected")
}

// boom is a view that panics when asked to do anything.
type boom struct{ common.Base }

func (*boom) Title() string                        { return "boom" }
func (*boom) Init() tea.Cmd                        { return nil }
func (*boom) Update(tea.Msg) tea.Cmd               { return nil }
func (*boom) Do(common.ActionName) (tea.Cmd, bool) { panic("kaboom") }
func (*boom) View() string                         { return "boom view" }

// TestPanicsBecomeMessages: a view's panic is no stack trace but a line in the status
// bar, and the UI goes on.
func TestPanicsBecomeMessages(t *testing.T) {
	opts := newEnv(t).opts
	m, err := tui.NewModel(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 20})
	v := &boom{Base: common.NewBase(&common.Context{}, describe.Kind)}
	m.Update(common.PushMsg{View: v})
	m.Update(key("j"))
	if err := m.Fault(); err == nil || !strings.Contains(err.Error(), "kaboom") {
		t.Fatalf("fault = %v", err)
	}
	if s := plain(m.Screen()); !strings.Contains(s, "internal error: kaboom (please report it)") || !strings.Contains(s, "boom view") {
		t.Fatalf("screen:\n%s", s)
	}
	m.Update(key("esc")) // panics again: still no crash
}
