package tui_test

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/tui"
)

// TestMain pins the local time zone: screens print local times.
func TestMain(m *testing.M) {
	time.Local = time.UTC
	os.Exit(m.Run())
}

var update = flag.Bool("update", false, "rewrite the golden screens in testdata/tui")

// goldenDir holds the golden screens, at the repository root.
var goldenDir = filepath.Join("..", "testdata", "tui")

// fixedNow is the clock of every screen test.
var fixedNow = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

// driver sends messages to a root model as Bubble Tea would, running the commands it
// returns (synchronously, each bounded by cmdTimeout) and feeding their messages back.
type driver struct {
	t    testing.TB
	m    *tui.Model
	quit bool
	// async runs stream commands in goroutines whose messages come back later (as in
	// Bubble Tea), for streams that block, like a followed log.
	async   bool
	pending chan tea.Msg
}

// cmdTimeout bounds one command: the fake backend answers at once, the local
// scheduler within a few seconds.
const cmdTimeout = 20 * time.Second

// testOptions are the options of a screen test: ticks off, a fixed clock, the dark
// theme, no settings file, and WICK_HOME in a temp dir.
func testOptions(t testing.TB) tui.Options {
	t.Helper()
	home := t.TempDir()
	t.Setenv("WICK_HOME", home)
	env := map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config")}
	return tui.Options{
		Components:       func() ([]*components.Component, error) { return components.Builtins(), nil },
		DefaultScheduler: "local_cwd",
		Theme:            "dark",
		Getenv:           func(k string) string { return env[k] },
		Now:              func() time.Time { return fixedNow },
		TickInterval:     -1,
	}
}

func newDriver(t testing.TB, opts tui.Options, w, h int) *driver {
	t.Helper()
	m, err := tui.NewModel(opts)
	if err != nil {
		t.Fatalf("NewModel: %v", err)
	}
	t.Cleanup(m.Close)
	d := &driver{t: t, m: m, pending: make(chan tea.Msg, 64)}
	d.send(tea.WindowSizeMsg{Width: w, Height: h})
	d.run(m.Init())
	return d
}

// send delivers msg and everything its commands produce.
func (d *driver) send(msg tea.Msg) {
	d.t.Helper()
	queue := []tea.Msg{msg}
	for steps := 0; len(queue) > 0; steps++ {
		if steps > 10000 {
			d.t.Fatal("the model keeps producing messages")
		}
		next := queue[0]
		queue = queue[1:]
		_, cmd := d.m.Update(next)
		if err := d.m.Fault(); err != nil {
			d.t.Fatalf("after %T: %v", next, err)
		}
		queue = append(queue, d.exec(cmd)...)
	}
}

func (d *driver) run(cmd tea.Cmd) {
	d.t.Helper()
	for _, msg := range d.exec(cmd) {
		d.send(msg)
	}
}

// exec runs cmd and returns the messages it produces, flattening batches.
func (d *driver) exec(cmd tea.Cmd) []tea.Msg {
	d.t.Helper()
	if cmd == nil {
		return nil
	}
	if d.async {
		go func() {
			if msg := cmd(); msg != nil {
				select {
				case d.pending <- msg:
				case <-time.After(cmdTimeout):
				}
			}
		}()
		return d.drain()
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	var msg tea.Msg
	select {
	case msg = <-done:
	case <-time.After(cmdTimeout):
		buf := make([]byte, 1<<20)
		d.t.Fatalf("a command did not return within %v; goroutines:\n%s", cmdTimeout, buf[:runtime.Stack(buf, true)])
	}
	switch msg := msg.(type) {
	case nil:
		return nil
	case tea.BatchMsg:
		var out []tea.Msg
		for _, c := range msg {
			out = append(out, d.exec(c)...)
		}
		return out
	case tea.QuitMsg:
		d.quit = true
		return nil
	}
	return []tea.Msg{msg}
}

// drain collects the messages async commands produced so far, waiting a little for
// quick ones.
func (d *driver) drain() []tea.Msg {
	var out []tea.Msg
	timeout := time.After(50 * time.Millisecond)
	for {
		select {
		case msg := <-d.pending:
			switch msg := msg.(type) {
			case tea.BatchMsg:
				for _, c := range msg {
					out = append(out, d.exec(c)...)
				}
			case tea.QuitMsg:
				d.quit = true
			default:
				out = append(out, msg)
			}
		case <-timeout:
			return out
		}
	}
}

// keys sends each named key: "enter", "esc", "tab", "shift+tab", "up", "down",
// "left", "right", "backspace", "space", "pgdown", "pgup", "ctrl+X", or one character.
func (d *driver) keys(names ...string) {
	d.t.Helper()
	for _, n := range names {
		d.send(key(n))
	}
}

// typ types text one character at a time.
func (d *driver) typ(text string) {
	d.t.Helper()
	for _, r := range text {
		d.send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

func key(name string) tea.KeyPressMsg {
	special := map[string]rune{
		"enter": tea.KeyEnter, "esc": tea.KeyEscape, "tab": tea.KeyTab, "up": tea.KeyUp,
		"down": tea.KeyDown, "left": tea.KeyLeft, "right": tea.KeyRight,
		"backspace": tea.KeyBackspace, "pgdown": tea.KeyPgDown, "pgup": tea.KeyPgUp,
		"home": tea.KeyHome, "end": tea.KeyEnd, "f1": tea.KeyF1,
	}
	switch {
	case name == "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case name == "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
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
	s := d.m.Screen()
	if err := d.m.Fault(); err != nil {
		d.t.Fatalf("drawing: %v", err)
	}
	return plain(s)
}

// appID matches the random suffix of app ids, so that screens compare.
var appID = regexp.MustCompile(`-[bcdfghjklmnpqrstvwxz][bcdfghjklmnpqrstvwxz0-9]{11}\b`)

// uuid matches session ids.
var uuid = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

func plain(s string) string {
	s = ansi.Strip(s)
	s = uuid.ReplaceAllString(s, "UUID")
	s = appID.ReplaceAllString(s, "-XXXXXXXXXXXX")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// contains fails unless the screen shows every want.
func (d *driver) contains(want ...string) {
	d.t.Helper()
	s := d.screen()
	for _, w := range want {
		if !strings.Contains(s, w) {
			d.t.Fatalf("screen lacks %q:\n%s", w, s)
		}
	}
}

// lacks fails if the screen shows any of these.
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
	path := filepath.Join(goldenDir, name+".txt")
	if *update {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			d.t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			d.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		d.t.Fatalf("%v (run go test ./tui -update to write it)", err)
	}
	if string(want) != got {
		d.t.Fatalf("screen differs from %s (go test ./tui -update rewrites it)\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
}
