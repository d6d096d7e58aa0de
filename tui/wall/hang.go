package wall

import (
	"context"
	"slices"
	"time"

	"github.com/wick-dev/wick/engine/hang"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/render"
)

// hangEvery is how often the wall checks a running app for its hang alarm
// (engine/hang reads the last lines of every replica): the alarm's time is minutes by
// default and seconds at the least, and the wall's Describe comes every tick.
const hangEvery = 3 * time.Second

// hangCheck reports whether the next Describe also checks for a hang, and notes it.
// An app of many replicas is checked less often: a check opens every replica's log
// (32 replicas every hangEvery, 1,024 every 96 s).
func (m *Model) hangCheck() bool {
	now := time.Now()
	if now.Sub(m.hangAt) < hangEvery*time.Duration(max(1, len(m.srcs)/32)) {
		return false
	}
	m.hangAt = now
	return true
}

// attachHang sets d's hang alarm, best effort (off the UI loop).
func attachHang(ctx context.Context, b hang.Lines, h spec.Handle, d *sched.Description) {
	if d != nil {
		_ = hang.Attach(ctx, b, h, d, time.Now())
	}
}

// hangError is the header's word of a running app's hang alarm, "" without one.
func (m *Model) hangError() string {
	if m.status.Hang == nil || m.status.State != spec.Running {
		return ""
	}
	return render.Escape(m.status.Hang.Message(time.Now()))
}

// stoppedFirst reports whether the running app's hang alarm names pane p's rank (or
// replica) as one that stopped first: its title says so ("stopped first", beside the
// header's alarm).
func (m *Model) stoppedFirst(p *pane) bool {
	hg := m.status.Hang
	if hg == nil || m.status.State != spec.Running || p.node {
		return false
	}
	return slices.Contains(hg.Ranks, p.name())
}
