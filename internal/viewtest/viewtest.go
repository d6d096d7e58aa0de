// Package viewtest drives one view of wick's UI alone, as the root model would, for the
// tests beside each view package: keys in (through the view's rows of the action table,
// as the root matches them, else to Update), the commands it returns run and their
// messages delivered back to it, and its View() out as plain text. What a view sends
// the root (push a view, pop, a notice, a confirmation) is kept for the test to read.
// Only tests import it.
package viewtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/internal/testkit"
	"github.com/wick-dev/wick/themes"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/widget"
)

// cmdWait bounds one command on a quiet machine (testkit scales it): a dry run or a
// listing takes milliseconds; a command still running after it is a stream or a timer
// the test did not wait for, and is left running.
const cmdWait = 10 * time.Second

// maxSteps bounds the messages one input may cause: a view that keeps producing
// messages fails the test instead of hanging it.
const maxSteps = 10000

// Context is a UI context for a view under test: the body w x h, the plain theme (no
// colours in what tests read), the action rows given, a clock fixed at now. Backend,
// Config and Components are the test's to set. Its Ctx is cancelled when t ends.
func Context(t testing.TB, w, h int, now time.Time, rows ...[]common.Action) *common.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &common.Context{
		Ctx: ctx, Config: common.NoConfig{}, Theme: themes.Plain(), Actions: common.NewRegistry(rows...),
		Width: w, Height: h, Now: func() time.Time { return now },
	}
}

// Driver is one view driven alone.
type Driver struct {
	t testing.TB
	// V is the view.
	V common.View
	// Sent is what the view sent the root, in order: PushMsg, PopMsg, HomeMsg,
	// OpenLogsMsg, ConfirmMsg, NoticeMsg, and any message addressed to another view.
	Sent []tea.Msg
	// Unhandled lists the actions the view said it had nothing to do for (the root
	// then applies its default, e.g. Esc pops the view).
	Unhandled []common.ActionName
	ctx       *common.Context
}

// New starts v (its Init, and what that produces) in ctx; v is closed when t ends.
func New(t testing.TB, ctx *common.Context, v common.View) *Driver {
	t.Helper()
	d := &Driver{t: t, V: v, ctx: ctx}
	t.Cleanup(v.Close)
	d.Run(v.Init())
	return d
}

// Keys presses each named key ("enter", "esc", "tab", "shift+tab", "up", "down",
// "backspace", "space", "ctrl+X", or one character): a text field takes editing keys
// first, then the view's action rows, then Update, as in the root.
func (d *Driver) Keys(names ...string) {
	d.t.Helper()
	for _, n := range names {
		d.key(Key(n))
	}
}

// Type types text one character at a time.
func (d *Driver) Type(text string) {
	d.t.Helper()
	for _, r := range text {
		d.key(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

func (d *Driver) key(k tea.KeyPressMsg) {
	d.t.Helper()
	if d.V.Typing() && widget.IsEditKey(k) {
		d.Run(d.V.Update(k))
		return
	}
	if a, ok := d.ctx.Actions.Match(k, d.V.Kind()); ok {
		cmd, handled := d.V.Do(a.Name)
		if !handled {
			d.Unhandled = append(d.Unhandled, a.Name)
		}
		d.Run(cmd)
		return
	}
	d.Run(d.V.Update(k))
}

// Send delivers msg to the view, then what its commands produce.
func (d *Driver) Send(msg tea.Msg) {
	d.t.Helper()
	d.deliver([]tea.Msg{msg})
}

// Screen is what the view draws, as plain text, trailing spaces cut.
func (d *Driver) Screen() string {
	lines := strings.Split(ansi.Strip(d.V.View()), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// WaitFor ticks the view until its screen shows every one of want (within cmdWait,
// scaled by the load), and returns that screen.
func (d *Driver) WaitFor(want ...string) string {
	d.t.Helper()
	var scr string
	testkit.Wait(d.t, cmdWait, "the view shows "+strings.Join(want, ", "), func() (bool, string) {
		d.Send(common.TickMsg{Time: d.ctx.Now()})
		scr = d.Screen()
		for _, w := range want {
			if !strings.Contains(scr, w) {
				return false, "\n" + scr
			}
		}
		return true, ""
	})
	return scr
}

// Contains fails the test unless the screen shows every one of want now.
func (d *Driver) Contains(want ...string) {
	d.t.Helper()
	scr := d.Screen()
	for _, w := range want {
		if !strings.Contains(scr, w) {
			d.t.Fatalf("the view does not show %q:\n%s", w, scr)
		}
	}
}

// Lacks fails the test if the screen shows any of unwanted.
func (d *Driver) Lacks(unwanted ...string) {
	d.t.Helper()
	scr := d.Screen()
	for _, w := range unwanted {
		if strings.Contains(scr, w) {
			d.t.Fatalf("the view shows %q:\n%s", w, scr)
		}
	}
}

// Run runs cmd as the root would (a confirmation's yes, say) and delivers what it
// produces to the view.
func (d *Driver) Run(cmd tea.Cmd) {
	d.t.Helper()
	d.deliver(d.exec(cmd))
}

func (d *Driver) deliver(queue []tea.Msg) {
	d.t.Helper()
	for steps := 0; len(queue) > 0; steps++ {
		if steps > maxSteps {
			d.t.Fatalf("the view keeps producing messages (the next: %s)", kinds(queue))
		}
		msg := queue[0]
		queue = queue[1:]
		switch m := msg.(type) {
		case common.PushMsg, common.PopMsg, common.HomeMsg, common.OpenLogsMsg, common.ConfirmMsg, common.NoticeMsg:
			d.Sent = append(d.Sent, msg)
			continue
		case common.StreamMsg:
			if m.To != d.V.ID() {
				d.Sent = append(d.Sent, msg)
				continue
			}
			queue = append(queue, d.exec(d.V.Update(m.Msg))...)
			queue = append(queue, d.exec(m.Next)...)
			continue
		case common.Addressed:
			if m.Target() != d.V.ID() {
				d.Sent = append(d.Sent, msg)
				continue
			}
		}
		queue = append(queue, d.exec(d.V.Update(msg))...)
	}
}

// kinds names the types of the first messages of queue, for a view that never stops.
func kinds(queue []tea.Msg) string {
	var out []string
	for _, m := range queue[:min(len(queue), 5)] {
		if s, ok := m.(common.StreamMsg); ok {
			out = append(out, fmt.Sprintf("StreamMsg(%T)", s.Msg))
			continue
		}
		out = append(out, fmt.Sprintf("%T", m))
	}
	return strings.Join(out, ", ")
}

// exec runs cmd, waiting cmdWait (scaled) at most, and returns its messages, batches
// flattened. A command that does not return in time is left running (a stream, a
// timer) and produces nothing.
func (d *Driver) exec(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	var msg tea.Msg
	select {
	case msg = <-done:
	case <-time.After(testkit.Scale(cmdWait)):
		return nil
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
		d.Sent = append(d.Sent, msg)
		return nil
	}
	return []tea.Msg{msg}
}

// Pushed returns the views the view pushed, in order.
func (d *Driver) Pushed() []common.View {
	var vs []common.View
	for _, m := range d.Sent {
		if p, ok := m.(common.PushMsg); ok {
			vs = append(vs, p.View)
		}
	}
	return vs
}

// Notices returns the notices the view sent, in order.
func (d *Driver) Notices() []common.NoticeMsg {
	var ns []common.NoticeMsg
	for _, m := range d.Sent {
		if n, ok := m.(common.NoticeMsg); ok {
			ns = append(ns, n)
		}
	}
	return ns
}

// Key is the key press a user makes for name: "enter", "esc", "tab", "shift+tab",
// "up", "down", "left", "right", "backspace", "space", "pgdown", "pgup", "home", "end",
// "f1", "ctrl+X", or one character.
func Key(name string) tea.KeyPressMsg {
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
