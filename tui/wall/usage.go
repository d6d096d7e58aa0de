package wall

import (
	"context"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/render"
)

// The CPU and RSS of each running replica in its pane's title, read through the
// Backend every usageEvery while the app runs, in a command of its own so that a slow
// read (the Docker Engine answers stats at its collector's next tick) never delays
// the wall. A local app costs one scan of /proc per read (engine/local's
// BenchmarkUsage8).
const (
	usageEvery   = 1500 * time.Millisecond
	usageTimeout = 5 * time.Second
)

// usageState is the wall's last usage read.
type usageState struct {
	loading bool
	at      time.Time // when the last read started (wall clock: it paces the cost)
	by      map[sched.ReplicaKey]sched.Usage
}

type usageMsg struct {
	common.ViewID
	by  map[sched.ReplicaKey]sched.Usage
	err error
}

// refreshUsage reads the usage of the app's replicas, unless the app has ended, a
// read is under way or the last one is recent.
func (m *Model) refreshUsage(now time.Time) tea.Cmd {
	if !m.haveApp || m.status.State.Terminal() {
		m.use.by = nil
		return nil
	}
	if m.use.loading || now.Sub(m.use.at) < usageEvery {
		return nil
	}
	m.use.loading, m.use.at = true, now
	id, b, parent, h := m.ID(), m.Ctx.Backend, m.Ctx.Ctx, m.h
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, usageTimeout)
		defer cancel()
		by, err := b.Usage(ctx, h)
		return usageMsg{ViewID: id, by: by, err: err}
	}
}

// tookUsage keeps a usage read; a failed read shows none (the titles just lack it).
func (m *Model) tookUsage(msg usageMsg) {
	m.use.loading = false
	if msg.err != nil || m.status.State.Terminal() {
		m.use.by = nil
		return
	}
	m.use.by = msg.by
}

// usageBadge is the CPU and RSS of pane p's replica while it runs, else "". A rank's
// pane has none: the replica's usage is its node's (shown on the node's pane).
func (m *Model) usageBadge(p *pane) string {
	if p.rank >= 0 || p.ended {
		return ""
	}
	u, ok := m.use.by[sched.ReplicaKey{Role: p.role, Replica: p.k}]
	if !ok {
		return ""
	}
	cpu, rss := render.UsageCells(&u)
	return "CPU " + cpu + " RSS " + rss
}

// gpuBadge is what pane p's replica does on its GPUs while it runs (render.GPUBadge:
// its devices, their utilization and memory, its own processes' memory), else "":
// where there is no GPU or no nvidia-smi there is none.
func (m *Model) gpuBadge(p *pane) string {
	if p.rank >= 0 || p.ended {
		return ""
	}
	u, ok := m.use.by[sched.ReplicaKey{Role: p.role, Replica: p.k}]
	if !ok {
		return ""
	}
	return render.GPUBadge(&u)
}
