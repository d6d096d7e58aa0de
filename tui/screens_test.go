package tui_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui"
	"github.com/wick-dev/wick/tui/common"
)

// fakeOptions are testOptions over a real runner whose one scheduler, "test", is the
// in-memory fakeSched; scheduled apps are in state end at once.
func fakeOptions(t testing.TB, end spec.AppState) (tui.Options, *fakeSched) {
	t.Helper()
	opts := testOptions(t)
	r, fs := fakeRunner(func() time.Time { return fixedNow }, end)
	t.Cleanup(func() { _ = r.Close() })
	opts.Runner = r
	opts.DefaultScheduler = "test"
	return opts, fs
}

// seed adds apps of every state to the fake scheduler.
func seed(fs *fakeSched) {
	mk := func(id, name string, st spec.AppState, age time.Duration, replicas int, exit *int) {
		a := spec.AppStatus{AppID: id, Name: name, State: st, Created: fixedNow.Add(-age)}
		rs := spec.RoleStatus{Role: name}
		for k := range replicas {
			rep := spec.ReplicaStatus{ID: k, Role: name, State: st, PID: 100 + k, Started: a.Created, ExitCode: exit}
			if st.Terminal() {
				rep.Ended = a.Created.Add(age / 2)
				a.Ended = rep.Ended
			}
			rs.Replicas = append(rs.Replicas, rep)
		}
		a.Roles = []spec.RoleStatus{rs}
		fs.add(a)
	}
	mk("train-1", "train", spec.Running, 5*time.Minute, 4, nil)
	mk("echo-2", "echo", spec.Succeeded, 2*time.Hour, 1, spec.IntPtr(0))
	mk("sh-3", "sh", spec.Failed, 30*time.Second, 2, spec.IntPtr(3))
	mk("eval-4", "eval", spec.Cancelled, 26*time.Hour, 1, spec.IntPtr(143))
	mk("serve-5", "serve", spec.Pending, 2*time.Second, 2, nil)
}

// openForm goes from the app list to the form of component name.
func openForm(d *driver, name string) {
	d.t.Helper()
	d.keys("n")
	d.typ(name)
	d.keys("enter")
	d.contains("Arguments")
}

func TestAppListEmpty(t *testing.T) {
	opts, _ := fakeOptions(t, spec.Succeeded)
	d := newDriver(t, opts, 100, 20)
	d.contains("No apps yet. Press n to launch one.")
	d.golden("apps_empty_100x20")
}

func TestAppListLiveSortFilter(t *testing.T) {
	opts, fs := fakeOptions(t, spec.Succeeded)
	seed(fs)
	d := newDriver(t, opts, 120, 24)
	d.golden("apps_120x24")

	d.keys("o") // sort by name
	d.contains("sorted by name ↓", "NAME ↓")
	s := d.screen()
	if strings.Index(s, "test://wick/echo-") > strings.Index(s, "test://wick/train-") {
		t.Fatalf("echo is not above train when sorted by name:\n%s", s)
	}
	d.keys("O")
	d.contains("sorted by name ↑")

	d.keys("/")
	d.typ("fail")
	d.contains("1 shown", "sh-3")
	d.lacks("train-1")
	d.keys("enter") // stop typing; the filter stays
	d.keys("esc")   // clear it
	d.contains("train-1", "sh-3")
	d.lacks("shown")

	// Live: a new app appears on the next tick.
	fs.add(spec.AppStatus{AppID: "late-6", Name: "late", State: spec.Running, Created: fixedNow})
	d.lacks("late-6")
	d.send(tea.Msg(tickFor()))
	d.contains("late-6", "6 apps")
}

func TestLaunchEchoEndToEndInModel(t *testing.T) {
	opts, _ := fakeOptions(t, spec.Succeeded)
	d := newDriver(t, opts, 120, 32)
	d.keys("n")
	d.typ("echo")
	d.golden("picker_echo_120x32")
	d.keys("enter")
	d.golden("form_echo_120x32")
	d.keys("ctrl+u")
	d.typ("hi there")
	d.keys("enter")
	d.contains("=== APPLICATION ===", "args:         [hi there]", "=== SCHEDULER REQUEST (test) ===")
	d.golden("preview_echo_120x32")
	d.keys("enter")
	d.contains("launched test://wick/echo-", "SUCCEEDED", "▸ test://wick/echo-")
	d.golden("apps_after_launch_120x32")
}

func TestFormValidatesAsYouType(t *testing.T) {
	opts, _ := fakeOptions(t, spec.Succeeded)
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
	opts, _ := fakeOptions(t, spec.Succeeded)
	d := newDriver(t, opts, 120, 32)
	openForm(d, "utils.touch")
	d.contains("*file", "✗ required", "Run options · test", "retries", "verbose")
	d.keys("enter")
	d.contains("file: required")
	d.typ("/tmp/x")
	d.lacks("✗ required")
	// Move to the run option "retries" and give it a bad value.
	for !strings.Contains(d.screen(), "▸  retries") {
		d.keys("tab")
	}
	d.contains("how many times to retry") // its help
	d.keys("ctrl+u")
	d.typ("many")
	d.contains("✗ want an integer")
	d.keys("ctrl+u")
	d.typ("3")
	d.keys("tab") // verbose, a toggle
	d.contains("[ ]")
	d.keys("space")
	d.contains("[x]")
	d.keys("enter")
	d.contains("=== SCHEDULER REQUEST (test) ===", "touch", "/tmp/x")
}

func TestFormTypingIsNotAnAction(t *testing.T) {
	opts, _ := fakeOptions(t, spec.Succeeded)
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
	opts, _ := fakeOptions(t, spec.Succeeded)
	d := newDriver(t, opts, 120, 40)
	openForm(d, "utils.sh")
	for !strings.Contains(d.screen(), "▸  env") {
		d.keys("tab")
	}
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
	opts, _ := fakeOptions(t, spec.Succeeded)
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
	opts, fs := fakeOptions(t, spec.Succeeded)
	seed(fs)
	d := newDriver(t, opts, 120, 24) // newest first: serve (PENDING) is selected
	d.contains("▸ test://wick/serve-")
	d.keys("x")
	d.contains("Cancel test://wick/serve-5? Its replicas get SIGTERM, then SIGKILL.")
	d.golden("confirm_cancel_120x24")
	d.keys("n")
	d.contains("nothing done")
	d.lacks("CANCELLED  0/2")
	d.keys("D") // delete a running app: refused
	d.contains("cancel it first")
	d.keys("x", "y")
	d.contains("cancelled test://wick/serve-5")
	d.keys("D")
	d.contains("Delete test://wick/serve-5?")
	d.keys("y")
	d.contains("deleted test://wick/serve-5", "4 apps")
	d.lacks("serve-5  serve")
}

func TestRelaunchRunsTheSameAppDef(t *testing.T) {
	opts, _ := fakeOptions(t, spec.Succeeded)
	d := newDriver(t, opts, 120, 32)
	openForm(d, "utils.echo")
	d.keys("ctrl+u")
	d.typ("again")
	d.keys("enter", "enter")
	d.contains("1 app ")
	d.keys("r")
	d.contains("2 apps", "launched test://wick/echo-")
	d.keys("d")
	d.contains("args:         [again]")
}

func TestDescribeView(t *testing.T) {
	opts, fs := fakeOptions(t, spec.Succeeded)
	seed(fs)
	d := newDriver(t, opts, 120, 24)
	d.keys("j") // sh, FAILED
	d.keys("enter")
	d.contains("handle:   test://wick/sh-3", "state:    FAILED", "REPLICA", "sh/1")
	d.golden("describe_120x24")
	d.keys("esc")
	d.contains("Apps")
}

func TestHelpOverlayAndPalette(t *testing.T) {
	opts, fs := fakeOptions(t, spec.Succeeded)
	seed(fs)
	d := newDriver(t, opts, 120, 30)
	d.keys("?")
	d.contains("This view (apps)", "Everywhere", "cancel", "command palette")
	d.golden("help_apps_120x30")
	d.keys("j") // any key closes
	d.lacks("This view (apps)")

	d.keys(":")
	d.typ("descr")
	d.contains("describe")
	d.golden("palette_120x30")
	d.keys("enter")
	d.contains("handle:   test://wick/serve-5")
}

func TestQuitSaysRunningAppsKeepRunning(t *testing.T) {
	opts, fs := fakeOptions(t, spec.Succeeded)
	seed(fs)
	d := newDriver(t, opts, 120, 24)
	d.keys("q")
	if !d.quit {
		t.Fatal("q did not quit")
	}
	if got := d.m.QuitNote(); !strings.Contains(got, "2 apps are still running and keep running") {
		t.Fatalf("quit note = %q", got)
	}
}

func TestQuitWithNothingRunningSaysNothing(t *testing.T) {
	opts, _ := fakeOptions(t, spec.Succeeded)
	d := newDriver(t, opts, 120, 24)
	d.keys("ctrl+c")
	if !d.quit || d.m.QuitNote() != "" {
		t.Fatalf("quit=%v note=%q", d.quit, d.m.QuitNote())
	}
}

func TestResizeAnyTime(t *testing.T) {
	opts, fs := fakeOptions(t, spec.Succeeded)
	seed(fs)
	d := newDriver(t, opts, 160, 48)
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
	opts, fs := fakeOptions(t, spec.Succeeded)
	seed(fs)
	d := newDriver(t, opts, 120, 24)
	// Rows start at screen line 3 (title, summary, header): line 5 is the third app.
	d.send(tea.MouseClickMsg{X: 10, Y: 5, Button: tea.MouseLeft})
	d.contains("▸ test://wick/train-1")
	d.send(tea.MouseClickMsg{X: 10, Y: 5, Button: tea.MouseLeft}) // again: describe
	d.contains("handle:   test://wick/train-1")
	d.keys("esc")

	for i := range 40 {
		fs.add(spec.AppStatus{AppID: fmt.Sprintf("old-%02d", i), Name: "old", State: spec.Succeeded, Created: fixedNow.Add(-time.Duration(i+30) * time.Hour)})
	}
	d.send(tickFor())
	d.keys("g")
	d.contains("▸ test://wick/serve-5")
	for range 3 {
		d.send(tea.MouseWheelMsg{X: 10, Y: 5, Button: tea.MouseWheelDown})
	}
	// Nine rows scrolled away: the selection moved along with the first visible row.
	d.lacks("serve-5", "sh-3")
	d.contains("▸ test://wick/old-04")
	d.send(tea.MouseWheelMsg{X: 10, Y: 5, Button: tea.MouseWheelUp})
	d.contains("test://wick/old-01", "▸ test://wick/old-04")

	// A click on a crumb of the title bar goes back to that view.
	openForm(d, "utils.echo")
	d.keys("enter")
	d.contains("wick › apps › new app › utils.echo › preview")
	d.send(tea.MouseClickMsg{X: 16, Y: 0, Button: tea.MouseLeft}) // "wick › apps › ne|w app"
	d.contains("wick › apps › new app", "▸ utils.echo")
	d.lacks("utils.echo › preview")
}

func TestOpenOnLogs(t *testing.T) {
	opts, _ := fakeOptions(t, spec.Succeeded)
	d := newDriver(t, opts, 120, 24)
	openForm(d, "utils.echo")
	d.keys("ctrl+u")
	d.typ("to the logs")
	d.keys("enter", "enter")
	h := selectedHandle(t, d)

	opts2 := opts
	opts2.Logs = h
	d2 := newDriver(t, opts2, 120, 24)
	d2.contains("logs echo-", "echo/0", "to the logs", "end of logs")
	d2.keys("esc")
	d2.contains("Apps")
}

func TestBadLogsHandle(t *testing.T) {
	opts, _ := fakeOptions(t, spec.Succeeded)
	opts.Logs = "nonsense"
	if _, err := tui.NewModel(opts); err == nil || !strings.Contains(err.Error(), "malformed app handle") {
		t.Fatalf("err = %v", err)
	}
}

// selectedHandle reads the handle of the selected row of the app list.
func selectedHandle(t *testing.T, d *driver) string {
	t.Helper()
	for _, l := range strings.Split(ansi.Strip(d.m.Screen()), "\n") {
		if strings.HasPrefix(l, "▸ ") {
			return strings.Fields(l)[1]
		}
	}
	t.Fatalf("no selected app:\n%s", d.screen())
	return ""
}

func tickFor() tea.Msg { return common.TickMsg{Time: fixedNow} }

func TestLaunchShowsProgressAndFailure(t *testing.T) {
	opts, fs := fakeOptions(t, spec.Succeeded)
	fs.fail = errors.New("image ghcr.io/nope:latest does not exist")
	d := newDriver(t, opts, 100, 20)
	openForm(d, "utils.echo")
	d.keys("enter", "enter")
	d.contains("Launching echo on test", "✓ building image for echo", "starting 1 replicas",
		"✗ test: image ghcr.io/nope:latest does not exist", "launch failed")
	d.golden("launch_failed_100x20")
	d.keys("esc")
	d.contains("=== APPLICATION ===")
}

func TestPickerShowsUserComponents(t *testing.T) {
	opts, _ := fakeOptions(t, spec.Succeeded)
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
	opts, _ := fakeOptions(t, spec.Succeeded)
	opts.Components = func() ([]*components.Component, error) {
		return components.Builtins(), errors.New("bad.yaml:3: unknown parameter \"ecpohs\"")
	}
	d := newDriver(t, opts, 120, 30)
	d.keys("n")
	d.contains(`bad.yaml:3: unknown parameter "ecpohs"`, "utils.echo")
}

// fakeConfig is a .torchxconfig with defaults for utils.echo and the test scheduler.
type fakeConfig struct{}

func (fakeConfig) ComponentDefaults(name string) map[string]string {
	if name == "utils.echo" {
		return map[string]string{"msg": "from torchxconfig"}
	}
	return nil
}

func (fakeConfig) RunOpts(scheduler string, opts spec.RunOpts) (spec.Cfg, error) {
	if scheduler == "test" {
		return spec.Cfg{"retries": 5, "verbose": true}, nil
	}
	return nil, nil
}

func TestFormTakesTorchxconfigDefaults(t *testing.T) {
	opts, _ := fakeOptions(t, spec.Succeeded)
	opts.Config = fakeConfig{}
	d := newDriver(t, opts, 120, 32)
	openForm(d, "utils.echo")
	d.contains("│from torchxconfig", "│5 ", "[x]")
	d.keys("enter")
	d.contains("args:         [from torchxconfig]")
}

// TestGoroutinesEnd follows the logs of a running app (a reader blocked on the
// iterator), leaves them, and closes the UI: every goroutine the UI started ends.
func TestGoroutinesEnd(t *testing.T) {
	opts, _ := fakeOptions(t, spec.Running)
	before := runtime.NumGoroutine()
	d := newDriver(t, opts, 120, 24)
	openForm(d, "utils.echo")
	d.keys("enter", "enter")
	d.contains("RUNNING")
	// The stream's commands block while following: run them as Bubble Tea would, in
	// goroutines, and check that leaving the view ends them.
	d.async = true
	d.keys("l")
	d.contains("following")
	d.keys("esc")
	d.m.Close()
	deadline := time.Now().Add(5 * time.Second)
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
	for _, name := range []string{"dark", "light", "high-contrast", "plain"} {
		t.Run(name, func(t *testing.T) {
			opts, fs := fakeOptions(t, spec.Succeeded)
			seed(fs)
			opts.Theme = name
			if name == "plain" {
				opts.Theme = ""
				opts.Getenv = func(k string) string {
					if k == "NO_COLOR" {
						return "1"
					}
					return ""
				}
			}
			d := newDriver(t, opts, 120, 30)
			d.contains("▸ test://wick/serve-5", "PENDING")
			d.keys("?")
			d.contains("Everywhere")
			d.keys("esc", "enter")
			d.contains("handle:   test://wick/serve-5")
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
	opts, fs := fakeOptions(t, spec.Succeeded)
	seed(fs)
	d := newDriver(t, opts, 120, 24)
	d.keys("G")
	d.contains("▸ test://wick/eval-4")
	for _, id := range []string{"eval-4", "echo-2", "train-1", "sh-3"} {
		fs.remove(id)
	}
	d.send(tickFor())
	d.contains("1 app ", "▸ test://wick/serve-5")
	fs.remove("serve-5")
	d.send(tickFor())
	d.contains("No apps yet")
	d.keys("enter", "x", "D", "r", "l")
	d.contains("no app selected")
}

// boom is a view that panics when asked to do anything.
type boom struct{ common.Base }

func (*boom) Title() string             { return "boom" }
func (*boom) Init() tea.Cmd             { return nil }
func (*boom) Update(tea.Msg) tea.Cmd    { return nil }
func (*boom) Do(string) (tea.Cmd, bool) { panic("kaboom") }
func (*boom) View() string              { return "boom view" }

// TestPanicsBecomeMessages: a view's panic is no stack trace but a line in the status
// bar, and the UI goes on.
func TestPanicsBecomeMessages(t *testing.T) {
	opts, _ := fakeOptions(t, spec.Succeeded)
	m, err := tui.NewModel(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 20})
	v := &boom{Base: common.NewBase(&common.Context{}, common.KindDescribe)}
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
