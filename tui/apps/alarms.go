package apps

import (
	"context"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/hang"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/common"
)

// The list's alarm marks (⚠ before the name) come from the apps' logs, read by the
// shared metrics.Book one app at a time, in a command of their own: the apps shown
// first, running ones before finished ones. A running app's hang alarm (engine/hang,
// shown in the ERROR column) is checked in the same reading. A finished app is read once (the Book
// remembers it in a file, so reopening the UI reads nothing); a running app's new
// lines are read at most every alarmEvery.
const (
	alarmEvery = 3 * time.Second
	// alarmRetry is how long a finished app whose logs could not be read waits.
	alarmRetry   = time.Minute
	alarmTimeout = time.Minute
)

// alarmState is the list's reading of alarms.
type alarmState struct {
	loading bool
	tried   map[string]time.Time // when each app was last read (wall clock)
}

type alarmsMsg struct {
	common.ViewID
	handle string
	n      int
	// hang is the app's hang alarm, nil when it has none (or has ended); hangErr why
	// it could not be checked.
	hang    *spec.Hang
	hangErr error
	err     error
}

// scanAlarms reads the alarms of the next app that needs it, unless a reading is under
// way.
func (m *Model) scanAlarms() tea.Cmd {
	book := m.Ctx.Alarms
	if book == nil || m.alarm.loading {
		return nil
	}
	h, ok := m.nextAlarmScan()
	if !ok {
		return nil
	}
	if m.alarm.tried == nil {
		m.alarm.tried = map[string]time.Time{}
	}
	m.alarm.loading = true
	m.alarm.tried[h.String()] = time.Now()
	id, b, parent := m.ID(), m.Ctx.Backend, m.Ctx.Ctx
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, alarmTimeout)
		defer cancel()
		d, err := b.Describe(ctx, h)
		if err != nil {
			return alarmsMsg{ViewID: id, handle: h.String(), err: err}
		}
		msg := alarmsMsg{ViewID: id, handle: h.String()}
		if d.Status.State == spec.Running {
			msg.hang, msg.hangErr = hang.Check(ctx, b, h, d, time.Now())
		}
		f, err := book.Scan(ctx, h, d)
		msg.n, msg.err = f.N, err
		return msg
	}
}

// nextAlarmScan picks the app to read: a shown running app not read for alarmEvery,
// else a shown finished app the Book does not know yet.
func (m *Model) nextAlarmScan() (spec.Handle, bool) {
	now := time.Now()
	for pass := range 2 {
		for _, i := range m.visible {
			a := &m.apps[i]
			running := !a.State.Terminal()
			if a.State == spec.UnknownState || a.State == spec.Queued || running != (pass == 0) {
				continue
			}
			h, err := spec.ParseHandle(a.Handle)
			if err != nil {
				continue
			}
			wait := alarmEvery
			if !running {
				if _, ok := m.Ctx.Alarms.Known(h); ok {
					continue
				}
				wait = alarmRetry
			}
			if t, ok := m.alarm.tried[a.Handle]; ok && now.Sub(t) < wait {
				continue
			}
			return h, true
		}
	}
	return spec.Handle{}, false
}

// tookAlarms marks the app read and goes on to the next one.
func (m *Model) tookAlarms(msg alarmsMsg) tea.Cmd {
	m.alarm.loading = false
	if msg.hangErr == nil {
		m.setHang(msg.handle, msg.hang)
	}
	if msg.err == nil {
		m.SetAlarms(msg.handle, msg.n)
	}
	return m.scanAlarms()
}

// setHang records app h's hang alarm (nil: none) and redraws the rows when it rose,
// changed or went.
func (m *Model) setHang(h string, hg *spec.Hang) {
	old := m.hangs[h]
	switch {
	case hg == nil && old == nil:
		return
	case hg == nil:
		delete(m.hangs, h)
	default:
		if m.hangs == nil {
			m.hangs = map[string]*spec.Hang{}
		}
		m.hangs[h] = hg
	}
	m.rebuild(m.selectedHandle())
}

// alarmCount is the number of alarms of app a: as last read or set, else as the Book
// remembers of a finished app.
func (m *Model) alarmCount(a *spec.AppStatus) int {
	if n, ok := m.alarms[a.Handle]; ok || !a.State.Terminal() {
		return n
	}
	h, err := spec.ParseHandle(a.Handle)
	if err != nil {
		return 0
	}
	f, ok := m.Ctx.Alarms.Known(h)
	if !ok {
		return 0
	}
	if m.alarms == nil {
		m.alarms = map[string]int{}
	}
	m.alarms[a.Handle] = f.N
	return f.N
}

// retainAlarms lets the Book drop the readings of running apps no longer listed, and
// forgets their hang alarms.
func (m *Model) retainAlarms() {
	listed := make(map[string]bool, len(m.apps))
	for i := range m.apps {
		listed[m.apps[i].Handle] = true
	}
	for h := range m.hangs {
		if !listed[h] {
			delete(m.hangs, h)
		}
	}
	if m.Ctx.Alarms != nil {
		m.Ctx.Alarms.Retain(listed)
	}
}

// Alarms is the number of metric alarms the list knows app h has raised (0 when none,
// or not read yet).
func (m *Model) Alarms(h string) int { return m.alarms[h] }
