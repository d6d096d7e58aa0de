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

	"github.com/wick-dev/wick/tui"
)

// TestMain pins the local time zone (screens print local times), makes the golden
// directory absolute (tests change directory) and builds the wick binary once: the
// local schedulers re-execute it as every app's supervisor.
func TestMain(m *testing.M) {
	time.Local = time.UTC
	// A local_cwd dry run lists PYTHONUNBUFFERED in a replica's env only when the
	// launching environment lacks it, so a preview's length (its "1-29/49") would
	// depend on the shell the tests run from: the goldens are written with it set.
	_ = os.Setenv("PYTHONUNBUFFERED", "1")
	flag.Parse()
	if abs, err := filepath.Abs(goldenDir); err == nil {
		goldenDir = abs
	}
	buildWick()
	code := m.Run()
	removeFixtures()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

var update = flag.Bool("update", false, "rewrite the golden screens in testdata/tui")

// goldenDir holds the golden screens, at the repository root.
var goldenDir = filepath.Join("..", "testdata", "tui")

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

// cmdTimeout bounds one command: the local schedulers answer within a few seconds.
const cmdTimeout = 20 * time.Second

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
	if d.async {
		// With it, what async commands produced meanwhile: a view whose work is under
		// way returns no command (a listing in flight), and nothing else would deliver
		// that work's result.
		queue = append(queue, d.drainFor(0)...)
	}
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
func (d *driver) drain() []tea.Msg { return d.drainFor(50 * time.Millisecond) }

// drainFor collects the messages async commands produced so far, waiting up to wait
// for more.
func (d *driver) drainFor(wait time.Duration) []tea.Msg {
	var out []tea.Msg
	timeout := time.After(wait)
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

// maxPresses bounds the presses of a key that move to a field: more than any form has
// fields, so a renamed field fails the test instead of hanging it.
const maxPresses = 40

// focus presses key (tab or shift+tab) until the form's cursor is on the field named
// name, failing the test after maxPresses.
func (d *driver) focus(name, key string) {
	d.t.Helper()
	for range maxPresses {
		if strings.Contains(d.screen(), "▸  "+name) {
			return
		}
		d.keys(key)
	}
	d.t.Fatalf("no field %q after %d presses of %s:\n%s", name, maxPresses, key, d.screen())
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

// screen is the screen as plain text, normalized (see plain): what golden screens hold.
func (d *driver) screen() string {
	s := d.m.Screen()
	if err := d.m.Fault(); err != nil {
		d.t.Fatalf("drawing: %v", err)
	}
	return plain(s)
}

// What varies from run to run on a screen of real apps, and what stands for it in the
// golden screens. Replacements keep the width of what they replace (with the padding
// that follows it), so that columns line up as they did.
var (
	// appID matches the random suffix of app ids.
	appID = regexp.MustCompile(`-[bcdfghjklmnpqrstvwxz][bcdfghjklmnpqrstvwxz0-9]{11}\b`)
	// cutID matches the start of an app id's suffix that an overlay's border cuts.
	cutID = regexp.MustCompile(`-[bcdfghjklmnpqrstvwxz][bcdfghjklmnpqrstvwxz0-9]{0,10}[│╭╮╰╯]`)
	// uuid matches session ids.
	uuid = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	// rootDir matches a test's directory (see newRoot): its length is fixed, so that
	// screens wrap and cut paths in the same places on every run.
	rootDir = regexp.MustCompile(`/tmp/wick-tui-[0-9a-f]{16}`)
	// dateTime and clockTime match wall-clock times (creation, start, end).
	dateTime  = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\b`)
	clockTime = regexp.MustCompile(`\b\d{2}:\d{2}:\d{2}\b`)
	// shortDur matches the durations of apps that ran for less than a minute (an echo
	// takes some milliseconds), padding included. Ages are stable: see clockLead.
	shortDur = regexp.MustCompile(`\b(\d+ms|\d+\.\ds)\b *`)
	// replicaPID matches the PID of a row of the describe view's replica table
	// (REPLICA STATE EXIT RESTARTS PID ...), padding included.
	// usageCell is a running app's CPU and RSS in the app list (or a replica's in a
	// status table): real processes' figures. The list right-aligns them in a cell of
	// fixed width, so what stands for them is right-aligned where they were: 0% and
	// 12% read alike.
	usageCell  = regexp.MustCompile(`\b\d+% +\d+(?:\.\d+)?(?:B|KiB|MiB|GiB|TiB|PiB|EiB)\b`)
	replicaPID = regexp.MustCompile(`(?m)^(\S+/\d+ +[A-Z]+ +\S+ +\d+ +)(\d+ *)`)
)

// keepWidth is with, padded to the width of was when it is shorter.
func keepWidth(was, with string) string {
	if n := len([]rune(was)) - len([]rune(with)); n > 0 {
		return with + strings.Repeat(" ", n)
	}
	return with
}

// plain is a screen as plain text, with what varies between runs replaced and
// trailing spaces trimmed.
func plain(s string) string {
	s = ansi.Strip(s)
	s = uuid.ReplaceAllString(s, "UUID")
	s = appID.ReplaceAllString(s, "-XXXXXXXXXXXX")
	s = cutID.ReplaceAllStringFunc(s, func(m string) string {
		r := []rune(m)
		return "-" + strings.Repeat("X", len(r)-2) + string(r[len(r)-1])
	})
	s = rootDir.ReplaceAllString(s, "/tmp/wick-tui-XXXXXXXXXXXXXXXX")
	s = dateTime.ReplaceAllString(s, "YYYY-MM-DD hh:mm:ss")
	s = clockTime.ReplaceAllString(s, "hh:mm:ss")
	s = shortDur.ReplaceAllStringFunc(s, func(m string) string { return keepWidth(m, "DUR") })
	s = usageCell.ReplaceAllStringFunc(s, func(m string) string {
		return strings.Repeat(" ", max(0, len(m)-len("CPU RSS"))) + "CPU RSS"
	})
	s = replicaPID.ReplaceAllStringFunc(s, func(m string) string {
		g := replicaPID.FindStringSubmatch(m)
		return g[1] + keepWidth(g[2], "PID")
	})
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// raw is the screen as plain text, as it is: real app ids, paths and times.
func (d *driver) raw() string {
	s := d.m.Screen()
	if err := d.m.Fault(); err != nil {
		d.t.Fatalf("drawing: %v", err)
	}
	return ansi.Strip(s)
}

// shows reports whether the screen shows w, as it is (a real handle) or normalized
// (a golden's "-XXXXXXXXXXXX").
func (d *driver) shows(w string) bool {
	return strings.Contains(d.raw(), w) || strings.Contains(d.screen(), w)
}

// contains fails unless the screen shows every want.
func (d *driver) contains(want ...string) {
	d.t.Helper()
	for _, w := range want {
		if !d.shows(w) {
			d.t.Fatalf("screen lacks %q:\n%s", w, d.raw())
		}
	}
}

// selected fails unless the selected row (the one marked ▸) is the app of handle: the
// list writes the handle whole, or as SCHED and APP ID where the columns need the room
// (a failed app's ERROR column), so the row is matched by the app id. A part of an id
// ("old-04-") matches too.
func (d *driver) selected(handle string) {
	d.t.Helper()
	id := handle[strings.LastIndex(handle, "/")+1:]
	scr := d.raw()
	for _, l := range strings.Split(scr, "\n") {
		if strings.HasPrefix(l, "▸ ") {
			if !strings.Contains(l, id) {
				d.t.Fatalf("the selected row is not %s's:\n%s", handle, scr)
			}
			return
		}
	}
	d.t.Fatalf("no row selected (want %s):\n%s", handle, scr)
}

// lacks fails if the screen shows any of these.
func (d *driver) lacks(unwanted ...string) {
	d.t.Helper()
	for _, w := range unwanted {
		if d.shows(w) {
			d.t.Fatalf("screen shows %q:\n%s", w, d.raw())
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
