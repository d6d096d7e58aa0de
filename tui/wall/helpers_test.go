package wall_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
	"github.com/wick-dev/wick/tui"
	"github.com/wick-dev/wick/tui/common"
)

// The wall's tests run real apps on the real local scheduler, whose supervisors are
// the wick binary built once in TestMain, and drive the root model as Bubble Tea
// would: commands run in goroutines and their messages come back to Update.

var update = flag.Bool("update", false, "rewrite the golden screens in testdata/tui")

// wickBin is the wick binary built for the tests ("" when it could not be built).
var (
	wickBin  string
	buildErr error
)

func TestMain(m *testing.M) {
	flag.Parse()
	time.Local = time.UTC
	testkit.UseSlurm() // SLURM_CONF once, for the Slurm tests run in parallel
	dir, err := os.MkdirTemp("", "wick-wall-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if bin := os.Getenv("WICK_TEST_BIN"); bin != "" {
		wickBin, _ = filepath.Abs(bin)
	} else if !testing.Short() {
		wickBin = filepath.Join(dir, "wick")
		buildErr = testkit.BuildWick(wickBin, filepath.Join("..", ".."))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is a runner over the real local schedulers with a private WICK_HOME.
type env struct {
	t    *testing.T
	home string
	r    *runner.Runner
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("runs real processes: skipped with -short")
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	home := t.TempDir()
	// Run after the apps' cleanups (they cancel and wait for them), before TempDir's
	// removal: a supervisor may still write its last files when its app has ended.
	t.Cleanup(func() {
		testkit.Wait(t, 10*time.Second, "the apps' supervisors to finish writing", func() (bool, string) {
			err := os.RemoveAll(home)
			return err == nil, fmt.Sprint(err)
		})
	})
	reg := &sched.Registry{}
	local.Register(reg)
	r := runner.New(reg, sched.Config{Session: spec.DefaultSession, StateDir: home, WorkDir: home, Self: []string{wickBin}})
	t.Cleanup(func() { _ = r.Close() })
	return &env{t: t, home: home, r: r}
}

// shApp is an app of one role of n replicas, each running script with sh -c.
func shApp(name string, n int, script string) *spec.AppDef {
	r := spec.NewRole("worker", spec.None, "sh", "-c", script)
	r.NumReplicas = n
	r.Env = map[string]string{"K": "${" + spec.MacroReplicaID + "}"}
	return &spec.AppDef{Name: name, Roles: []spec.Role{r}}
}

// run launches app on local_cwd and returns its handle.
func (e *env) run(app *spec.AppDef) spec.Handle {
	e.t.Helper()
	h, err := e.r.Run(context.Background(), app, local.NameCwd, nil, "", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		// Cancel and wait for the end (newEnv's cleanup then waits for the supervisor's
		// last writes), so that nothing writes in the temp dir as it is removed.
		_ = e.r.Cancel(context.Background(), h)
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(10*time.Second))
		defer cancel()
		_, _ = e.r.Wait(ctx, h, 20*time.Millisecond)
	})
	return h
}

// wait waits until app h is terminal.
func (e *env) wait(h spec.Handle) {
	e.t.Helper()
	testkit.Wait(e.t, 30*time.Second, "app "+h.String()+" ends", func() (bool, string) {
		d, err := e.r.Describe(context.Background(), h)
		if err != nil {
			return false, err.Error()
		}
		return d.Status.State.Terminal(), d.Status.State.String()
	})
}

// driver runs the root model as Bubble Tea does, from the test's goroutine.
type driver struct {
	t    *testing.T
	m    *tui.Model
	msgs chan tea.Msg
	done chan struct{}
	// clipboard holds what the UI last set through OSC 52.
	clipboard string
	notices   []string
}

// open opens the UI on the logs of h (wick ui --logs h) in a w x h terminal.
func (e *env) open(h spec.Handle, w, ht int, tweak func(*tui.Options)) *driver {
	e.t.Helper()
	vars := map[string]string{"HOME": e.home, "XDG_CONFIG_HOME": filepath.Join(e.home, "config"), "WICK_HOME": e.home}
	opts := tui.Options{
		Runner:       e.r,
		Theme:        "dark",
		Getenv:       func(k string) string { return vars[k] },
		TickInterval: -1,
		Logs:         h.String(),
	}
	if tweak != nil {
		tweak(&opts)
	}
	m, err := tui.NewModel(opts)
	if err != nil {
		e.t.Fatal(err)
	}
	d := &driver{t: e.t, m: m, msgs: make(chan tea.Msg, 1024), done: make(chan struct{})}
	e.t.Cleanup(d.close)
	d.update(tea.WindowSizeMsg{Width: w, Height: ht})
	d.exec(m.Init())
	return d
}

func (d *driver) close() {
	select {
	case <-d.done:
	default:
		close(d.done)
		d.m.Close()
	}
}

// exec runs cmd in a goroutine; its message comes back through msgs.
func (d *driver) exec(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	go func() {
		msg := cmd()
		if batch, ok := msg.(tea.BatchMsg); ok {
			for _, c := range batch {
				d.exec(c)
			}
			return
		}
		if msg == nil {
			return
		}
		select {
		case d.msgs <- msg:
		case <-d.done:
		}
	}()
}

func (d *driver) update(msg tea.Msg) {
	d.t.Helper()
	if reflect.TypeOf(msg).Name() == "setClipboardMsg" {
		d.clipboard = fmt.Sprint(msg)
		return
	}
	if n, ok := msg.(common.NoticeMsg); ok {
		d.notices = append(d.notices, n.Text)
	}
	_, cmd := d.m.Update(msg)
	if err := d.m.Fault(); err != nil {
		d.t.Fatalf("after %T: %v", msg, err)
	}
	d.exec(cmd)
}

// settle delivers the messages that arrive within a short while.
func (d *driver) settle() {
	timeout := time.After(60 * time.Millisecond)
	for {
		select {
		case msg := <-d.msgs:
			d.update(msg)
		case <-timeout:
			return
		}
	}
}

// keys sends keys by name, letting the UI settle after each.
func (d *driver) keys(names ...string) {
	d.t.Helper()
	for _, n := range names {
		d.update(key(n))
		d.settle()
	}
}

// typ types text.
func (d *driver) typ(text string) {
	d.t.Helper()
	for _, r := range text {
		d.update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	d.settle()
}

func key(name string) tea.KeyPressMsg {
	special := map[string]rune{
		"enter": tea.KeyEnter, "esc": tea.KeyEscape, "tab": tea.KeyTab, "up": tea.KeyUp,
		"down": tea.KeyDown, "left": tea.KeyLeft, "right": tea.KeyRight,
		"backspace": tea.KeyBackspace, "pgdown": tea.KeyPgDown, "pgup": tea.KeyPgUp,
		"home": tea.KeyHome, "end": tea.KeyEnd,
	}
	switch {
	case name == "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case strings.HasPrefix(name, "alt+"):
		return tea.KeyPressMsg{Code: rune(name[4]), Mod: tea.ModAlt}
	case strings.HasPrefix(name, "ctrl+") && len(name) == 6:
		return tea.KeyPressMsg{Code: rune(name[5]), Mod: tea.ModCtrl}
	}
	if r, ok := special[name]; ok {
		return tea.KeyPressMsg{Code: r}
	}
	r := []rune(name)[0]
	return tea.KeyPressMsg{Code: r, Text: name}
}

// screen is the screen as plain text, trailing spaces trimmed.
func (d *driver) screen() string {
	s := ansi.Strip(d.m.Screen())
	s = appID.ReplaceAllString(s, "-XXXXXXXXXXXX")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

var appID = regexp.MustCompile(`-[bcdfghjklmnpqrstvwxz][bcdfghjklmnpqrstvwxz0-9]{11}\b`)

// waitFor delivers messages (and a tick now and then) until the screen shows every
// want.
func (d *driver) waitFor(want ...string) string {
	d.t.Helper()
	return d.waitForIn(30*time.Second, want...)
}

// waitForIn is waitFor with a deadline of its own (real training is slow to start on
// a busy machine).
func (d *driver) waitForIn(within time.Duration, want ...string) string {
	d.t.Helper()
	deadline := time.Now().Add(testkit.Scale(within))
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		scr := d.screen()
		missing := ""
		for _, w := range want {
			if !strings.Contains(scr, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return scr
		}
		select {
		case msg := <-d.msgs:
			d.update(msg)
		case now := <-tick.C:
			d.update(common.TickMsg{Time: now})
		case <-time.After(time.Until(deadline)):
			d.t.Fatalf("the screen never showed %q:\n%s", missing, scr)
		}
	}
}

// waitForRe delivers messages (and a tick now and then) until the screen matches re.
func (d *driver) waitForRe(re *regexp.Regexp) string {
	d.t.Helper()
	deadline := time.Now().Add(testkit.Scale(30 * time.Second))
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		scr := d.screen()
		if re.MatchString(scr) {
			return scr
		}
		select {
		case msg := <-d.msgs:
			d.update(msg)
		case now := <-tick.C:
			d.update(common.TickMsg{Time: now})
		case <-time.After(time.Until(deadline)):
			d.t.Fatalf("the screen never matched %s:\n%s", re, scr)
		}
	}
}

// contains fails unless the screen shows every want, now or soon.
//
// What a key started off the UI loop (a read-back, a search of the files) may come a
// little later on a loaded machine: it delivers the messages that arrive meanwhile, for
// up to containsWait, without ticks (which would move the wall on).
func (d *driver) contains(want ...string) {
	d.t.Helper()
	deadline := time.After(containsWait)
	for {
		s := d.screen()
		missing := ""
		for _, w := range want {
			if !strings.Contains(s, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return
		}
		select {
		case msg := <-d.msgs:
			d.update(msg)
		case <-deadline:
			d.t.Fatalf("screen lacks %q:\n%s", missing, s)
		}
	}
}

// containsWait bounds how long contains waits for messages that would show what it
// wants.
const containsWait = 5 * time.Second

// lacks fails if the screen shows any of unwanted.
func (d *driver) lacks(unwanted ...string) {
	d.t.Helper()
	s := d.screen()
	for _, w := range unwanted {
		if strings.Contains(s, w) {
			d.t.Fatalf("screen shows %q:\n%s", w, s)
		}
	}
}

// golden compares the screen with testdata/tui/NAME.txt (rewritten with -update).
func (d *driver) golden(name string) {
	d.t.Helper()
	got := d.screen() + "\n"
	path := filepath.Join("..", "..", "testdata", "tui", name+".txt")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			d.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		d.t.Fatalf("%v (go test ./tui/wall -update writes it)", err)
	}
	if string(want) != got {
		d.t.Fatalf("screen differs from %s (go test ./tui/wall -update rewrites it)\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
}
