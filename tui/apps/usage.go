package apps

import (
	"context"
	"fmt"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/render"
)

// The list's CPU/RSS column: what each running app's replicas use together, read
// after a listing at most every usageEvery, all running apps at once (at most
// usageParallel at a time), in a command of its own so that a slow read (the Docker
// Engine answers stats at its collector's next tick, within a second) never delays
// the listing. A local app costs one scan of /proc per read (see engine/local's
// BenchmarkUsage8).
const (
	usageEvery    = 1500 * time.Millisecond // every other tick of a second
	usageTimeout  = 5 * time.Second
	usageParallel = 4
	// usageHeader heads the column, shown only while an app in the list has usage.
	usageHeader = "CPU/RSS"
)

// usageState is the list's last usage read.
type usageState struct {
	loading bool
	at      time.Time // when the last read started (wall clock: it paces the cost)
	byApp   map[string]spec.Usage
}

type usageMsg struct {
	common.ViewID
	byApp map[string]spec.Usage
}

// refreshUsage reads the usage of the running apps, unless a read is under way or the
// last one is recent.
func (m *Model) refreshUsage() tea.Cmd {
	now := time.Now()
	if m.usage.loading || now.Sub(m.usage.at) < usageEvery {
		return nil
	}
	var running []spec.AppStatus
	for i := range m.apps {
		if st := m.apps[i].State; !st.Terminal() && st != spec.UnknownState && st != spec.Queued {
			running = append(running, m.apps[i])
		}
	}
	if len(running) == 0 {
		m.usage.byApp = nil
		return nil
	}
	m.usage.loading, m.usage.at = true, now
	id, b, parent := m.ID(), m.Ctx.Backend, m.Ctx.Ctx
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, usageTimeout)
		defer cancel()
		byApp := map[string]spec.Usage{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, usageParallel)
		for i := range running {
			h, err := spec.ParseHandle(running[i].Handle)
			if err != nil {
				continue
			}
			wg.Add(1)
			sem <- struct{}{}
			go func(st *spec.AppStatus) {
				defer func() { <-sem; wg.Done() }()
				if b.AttachUsage(ctx, h, st) != nil {
					return // shown without usage: the app just ended, or its scheduler is slow
				}
				if u, ok := total(st); ok {
					mu.Lock()
					byApp[st.Handle] = u
					mu.Unlock()
				}
			}(&running[i])
		}
		wg.Wait()
		return usageMsg{ViewID: id, byApp: byApp}
	}
}

// total sums the usage of an app's replicas; ok is false when none has any. Its GPU
// use, where its replicas have one, is over their devices (gpuTotal).
func total(st *spec.AppStatus) (spec.Usage, bool) {
	var sum spec.Usage
	ok := false
	var uses []*spec.GPUUse
	for _, r := range st.Roles {
		for _, rep := range r.Replicas {
			if u := rep.Usage; u != nil {
				sum.CPU += u.CPU
				sum.RSS += u.RSS
				if u.At.After(sum.At) {
					sum.At = u.At
				}
				if u.GPU != nil {
					uses = append(uses, u.GPU)
				}
				ok = true
			}
		}
	}
	sum.GPU = gpuTotal(uses)
	return sum, ok
}

// gpuTotal is the GPU use of an app from its replicas': their devices (each once),
// the mean utilization of the devices that tell it, the devices' memory, and the
// memory the replicas' processes hold in all; nil without any.
func gpuTotal(uses []*spec.GPUUse) *spec.GPUUse {
	if len(uses) == 0 {
		return nil
	}
	out := &spec.GPUUse{Util: -1}
	seen := map[string]bool{}
	utilSum, n := 0, 0
	for _, g := range uses {
		out.Own += g.Own
		fresh := false
		for _, d := range g.Devices {
			if !seen[d] {
				seen[d], fresh = true, true
				out.Devices = append(out.Devices, d)
			}
		}
		// A replica's memory and utilization are its devices'; devices shared with a
		// replica counted before are not counted again (replicas own theirs, in wick).
		if fresh {
			out.Used += g.Used
			out.Total += g.Total
			if g.Util >= 0 {
				utilSum += g.Util * len(g.Devices)
				n += len(g.Devices)
			}
		}
	}
	if n > 0 {
		out.Util = utilSum / n
	}
	return out
}

func (m *Model) tookUsage(msg usageMsg) {
	m.usage.loading = false
	m.usage.byApp = msg.byApp
	m.rebuild(m.selectedHandle())
}

// addUsageColumn adds the CPU/RSS column to the table's headers and rows (the rows of
// the visible apps), when one of them has usage: a list of finished apps keeps the
// columns of `wick list`.
func (m *Model) addUsageColumn(rows [][]string) {
	shown := false
	for _, i := range m.visible {
		if m.usageOf(&m.apps[i]) != nil {
			shown = true
			break
		}
	}
	if !shown {
		return
	}
	head := usageHeader
	switch arrow := map[bool]string{false: " ↓", true: " ↑"}[m.reverse]; m.sort {
	case byCPU:
		head = "CPU" + arrow + "/RSS"
	case byRSS:
		head += arrow
	}
	m.table.Headers = append(m.table.Headers, head)
	for r, i := range m.rows {
		cell := ""
		if i < 0 {
			rows[r] = append(rows[r], cell) // a sweep's row
			continue
		}
		if u := m.usageOf(&m.apps[i]); u != nil {
			// Right-aligned in fixed widths (99%, 74.2MiB): the figures line up
			// down the column, and the column keeps its width as they change.
			cpu, rss := render.UsageCells(u)
			cell = fmt.Sprintf("%3s %7s", cpu, rss)
			if g := render.GPUBadge(u); g != "" {
				cell += "  " + g // where there are GPUs (nvidia-smi)
			}
		}
		rows[r] = append(rows[r], cell)
	}
}

// usageOf is the usage of a running app, or nil (an app that ended since the read
// shows none).
func (m *Model) usageOf(a *spec.AppStatus) *spec.Usage {
	if a.State.Terminal() || a.State == spec.UnknownState {
		return nil
	}
	if u, ok := m.usage.byApp[a.Handle]; ok {
		return &u
	}
	return nil
}
