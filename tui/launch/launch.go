// Package launch is the launch view: it starts an app (a planned dry run, or a relaunch
// of an app's AppDef on the same scheduler), shows the scheduler's progress steps while
// it starts (image builds, containers), and then hands over to the app list.
package launch

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/render"
	"github.com/wick-dev/wick/tui/widget"
)

// Kind is the launch view's kind of view.
const Kind common.Kind = "launch"

// Actions are the launch view's rows of the action table: it scrolls.
func Actions() []common.Action { return common.Moves(Kind) }

// Model is the launch view.
type Model struct {
	common.Base
	info    *sched.DryRunInfo // what to schedule, or nil for a relaunch
	from    spec.Handle       // the app to relaunch
	started time.Time
	ended   time.Time // when the launch succeeded or failed: the timer stops there
	steps   []string
	handle  spec.Handle
	err     error
	done    bool
	pager   widget.Pager
}

// progressMsg is one step reported by the scheduler.
type progressMsg struct{ step string }

// launchedMsg ends the launch: the app's handle and its status as read right after
// the launch (nil if that read failed).
type launchedMsg struct {
	h   spec.Handle
	st  *spec.AppStatus
	err error
}

// statusWait bounds the read of a launched app's status: the list shows the app at
// once from it; without it, the list shows the app at its next listing.
const statusWait = 2 * time.Second

// New returns a view that schedules a planned app.
func New(ctx *common.Context, info *sched.DryRunInfo) *Model {
	return &Model{Base: common.NewBase(ctx, Kind), info: info}
}

// Relaunch returns a view that launches the AppDef of the app h again, with the same
// run options, on the same scheduler.
func Relaunch(ctx *common.Context, h spec.Handle) *Model {
	return &Model{Base: common.NewBase(ctx, Kind), from: h}
}

// Title is the view's crumb.
func (m *Model) Title() string { return "launch" }

// Init starts the launch in a goroutine whose progress and result stream back.
func (m *Model) Init() tea.Cmd {
	m.started = m.Ctx.Now()
	ch := make(chan tea.Msg, 8)
	ctx, b := m.Ctx.Ctx, m.Ctx.Backend
	send := func(msg tea.Msg) {
		select {
		case ch <- msg:
		case <-ctx.Done():
		}
	}
	progress := func(step string) { send(progressMsg{step}) }
	info, from, workspace, cores := m.info, m.from, m.Ctx.Workspace, m.Ctx.Cores
	go func() {
		defer close(ch)
		// A launch writes and fsyncs its files at once: on one processor each
		// fsync would hold it until the runtime's monitor hands it to the others.
		defer cores.Acquire()()
		var h spec.Handle
		var err error
		if info != nil {
			h, err = b.Schedule(ctx, info, progress)
		} else {
			h, err = relaunch(ctx, b, from, workspace, progress)
		}
		msg := launchedMsg{h: h, err: err}
		if err == nil {
			msg.st = launchedStatus(ctx, b, h, info)
		}
		send(msg)
	}()
	return common.Stream(m.ID(), ch)
}

func relaunch(ctx context.Context, b common.Backend, from spec.Handle, workspace string, progress sched.Progress) (spec.Handle, error) {
	progress.Report("reading %s", from)
	d, err := b.Describe(ctx, from)
	if err != nil {
		return spec.Handle{}, err
	}
	if d.App == nil {
		return spec.Handle{}, fmt.Errorf("%s: the scheduler does not know its AppDef, so it cannot be relaunched", from)
	}
	progress.Report("relaunching %s on %s", d.App.Name, from.Scheduler)
	info, err := b.DryRun(ctx, d.App, from.Scheduler, d.Cfg, workspace)
	if err != nil {
		return spec.Handle{}, err
	}
	// The relaunch keeps its source's component call, so that it too can be relaunched
	// with edits. A call that cannot be read leaves the relaunch as an AppDef launch.
	if call, err := b.Call(from); err == nil {
		info.Call = call
	}
	return b.Schedule(ctx, info, progress)
}

// Update records progress and the result; on success it hands over to the app list.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case progressMsg:
		m.steps = append(m.steps, msg.step)
	case launchedMsg:
		m.done, m.handle, m.err = true, msg.h, msg.err
		m.ended = m.Ctx.Now()
		if msg.err != nil {
			return common.NotifyErr(fmt.Errorf("launch failed: %w", msg.err))
		}
		h := msg.h.String()
		return func() tea.Msg { return common.HomeMsg{Handle: h, Notice: "launched " + h, Launched: msg.st} }
	case tea.MouseWheelMsg:
		m.pager.Scroll(widget.WheelDelta(msg), m.Ctx.Height)
	}
	return nil
}

// Do scrolls; the rest is the root's.
func (m *Model) Do(action common.ActionName) (tea.Cmd, bool) {
	return nil, m.pager.Do(string(action), m.Ctx.Height)
}

// View draws the steps so far and the outcome.
func (m *Model) View() string {
	t := m.Ctx.Theme
	var b strings.Builder
	what := "Launching"
	if m.info != nil {
		what += " " + m.info.App.Name + " on " + m.info.Scheduler
	} else {
		what = "Relaunching " + m.from.String()
	}
	until := m.Ctx.Now()
	if m.done {
		until = m.ended
	}
	elapsed := render.Duration(until.Sub(m.started).Truncate(100 * time.Millisecond))
	b.WriteString(t.Accent.Render(what) + "  " + t.Muted.Render(elapsed) + "\n\n")
	for i, s := range m.steps {
		mark := t.State(spec.Succeeded, "✓")
		if i == len(m.steps)-1 && !m.done {
			mark = t.State(spec.Running, "…")
		}
		b.WriteString("  " + mark + " " + s + "\n")
	}
	switch {
	case !m.done:
		b.WriteString("  " + t.Muted.Render("starting…") + "\n")
	case m.err != nil:
		b.WriteString("\n  " + t.Fail.Render("✗ "+m.err.Error()) + "\n\n  " + t.Muted.Render("esc: back"))
	default:
		b.WriteString("\n  " + t.State(spec.Succeeded, "✓ launched "+m.handle.String()))
	}
	m.pager.SetText(b.String())
	return m.pager.View(m.Ctx.Width, m.Ctx.Height)
}

// launchedStatus is the status of the app h just launched, from the scheduler (as
// describe reads it), else what the launch knows of it: its handle, name and the time,
// SUBMITTED. The app list shows it at once, selected, before its next listing.
func launchedStatus(ctx context.Context, b common.Backend, h spec.Handle, info *sched.DryRunInfo) *spec.AppStatus {
	dctx, cancel := context.WithTimeout(ctx, statusWait)
	defer cancel()
	if d, err := b.Describe(dctx, h); err == nil && d.Status.Handle != "" {
		st := d.Status
		return &st
	}
	st := &spec.AppStatus{Handle: h.String(), AppID: h.AppID, Scheduler: h.Scheduler, State: spec.Submitted, Created: time.Now()}
	if info != nil && info.App != nil {
		st.Name = info.App.Name
	}
	return st
}
