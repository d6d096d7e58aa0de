// Package wall is the log wall: every replica of an app tailed live side by side, one
// pane each, tiled to fit the screen; a merged view of them in time order; search
// across all panes; and bounded memory, with older lines read back from the logs.
//
// Lines are read off the UI loop (a goroutine per replica, gathered by a pump) and
// handed over in one batch per frame; each replica's lines go into a ring buffer of
// chunks, and a frame draws only the rows on screen. See the constants in feed.go,
// ring.go and search.go for the performance knobs.
package wall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/common"
)

// Options tune the wall.
type Options struct {
	// RingLines is how many lines each pane keeps in memory; 0 means DefaultRingLines.
	RingLines int
	// StateDir is where the wall keeps its small per-app state (layout, focus, search,
	// follow) for the next time it opens on the app; "" keeps none.
	StateDir string
}

// readBack is how many lines one scroll past the top of a ring reads back from the
// logs: a few pages, so that scrolling on feels continuous.
const readBack = 2000

// pane is one replica: its lines and how they are shown.
type pane struct {
	role string
	k    int
	ring *ring
	view *scroller
	st   spec.ReplicaStatus
	// known reports whether the status has been read.
	known bool
	ended bool
	err   error
	// attempt is the attempt of the last line; a later one draws a divider.
	attempt int
	// exits remembers the exit code of each attempt seen in the status, for the
	// retry dividers (see dividerText).
	exits      map[int]int
	lastStderr string
	rate       float64
	rateN      int64
	hidden     bool
	// Search results: matching seqs in order, known for the lines before scanned.
	matches []int64
	scanned int64
	// fetching is set while lines before the ring are being read back.
	fetching bool
}

func (p *pane) name() string { return fmt.Sprintf("%s/%d", p.role, p.k) }

// Model is the log wall view of one app.
type Model struct {
	common.Base
	h    spec.Handle
	opts Options

	panes   []*pane
	focus   int
	zoom    bool
	merged  bool
	mview   *scroller
	summary bool // the end-of-app summary is shown
	sumSeen bool // it was shown once automatically

	status   spec.AppStatus
	haveApp  bool
	polling  bool
	lastTick time.Time
	ended    bool // every stream ended
	err      error
	cancel   context.CancelFunc
	gen      int

	// Search.
	input      common.Input
	typing     bool
	query      string
	regex      bool
	caseSens   bool
	match      *matcher
	searchErr  error
	searchGen  int
	stopSearch context.CancelFunc
	only       bool
	ctxStep    int
	cur        ref // the current match of n/N
	haveCur    bool

	// Saving.
	saveInput  common.Input
	savePrompt bool

	// The layout of the last frame, for the mouse.
	rects []rect
	// restored state, applied when the panes are known.
	saved *state
}

// rect is where a pane was drawn, in body coordinates.
type rect struct {
	p          int
	x, y, w, h int
}

// New returns the wall of app h.
func New(ctx *common.Context, h spec.Handle, opts Options) *Model {
	if opts.RingLines <= 0 {
		opts.RingLines = DefaultRingLines
	}
	m := &Model{Base: common.NewBase(ctx, common.KindLogs), h: h, opts: opts, ctxStep: 0}
	m.input = common.NewInput("/")
	m.input.Placeholder = "search all panes (alt+r regex, alt+c case)"
	m.saveInput = common.NewInput("save to: ")
	m.saved = loadState(opts.StateDir, h)
	return m
}

// Title is the view's crumb.
func (m *Model) Title() string { return "logs " + m.h.AppID }

// Typing reports whether the search or save field has focus.
func (m *Model) Typing() bool { return m.typing || m.savePrompt }

type describedMsg struct {
	common.ViewID
	desc *sched.Description
	err  error
	// first is set for the description that lays out the panes.
	first bool
}

func (m *Model) describe(first bool) tea.Cmd {
	id, b, parent, h := m.ID(), m.Ctx.Backend, m.Ctx.Ctx, m.h
	m.polling = true
	return func() tea.Msg {
		d, err := b.Describe(parent, h)
		return describedMsg{ViewID: id, desc: d, err: err, first: first}
	}
}

// Init finds the app's replicas.
func (m *Model) Init() tea.Cmd { return m.describe(true) }

// Close stops the readers and the search, and saves the wall's state for next time.
func (m *Model) Close() {
	if m.cancel != nil {
		m.cancel()
	}
	if m.stopSearch != nil {
		m.stopSearch()
	}
	if len(m.panes) > 0 {
		saveState(m.opts.StateDir, m.h, m.state())
	}
}

// layOut makes the panes from the first description.
func (m *Model) layOut(d *sched.Description) {
	for _, role := range d.Status.Roles {
		for _, r := range role.Replicas {
			m.panes = append(m.panes, &pane{role: role.Role, k: r.ID})
		}
	}
	if len(m.panes) == 0 && d.App != nil {
		for _, role := range d.App.Roles {
			for k := range role.NumReplicas {
				m.panes = append(m.panes, &pane{role: role.Name, k: k})
			}
		}
	}
	for _, p := range m.panes {
		p.ring = newRing(m.opts.RingLines)
		p.view = newScroller(len(m.panes))
		p.exits = map[int]int{}
	}
	m.mview = newScroller(len(m.panes))
	if m.saved != nil {
		m.restore(m.saved)
		m.saved = nil
	}
}

// open starts reading every replica from its first line.
func (m *Model) open() tea.Cmd {
	if m.cancel != nil {
		m.cancel()
	}
	m.gen++
	if len(m.panes) == 0 {
		m.ended = true
		return nil
	}
	ctx, cancel := context.WithCancel(m.Ctx.Ctx)
	m.cancel = cancel
	srcs := make([]source, len(m.panes))
	for i, p := range m.panes {
		srcs[i] = source{role: p.role, k: p.k}
	}
	return feed(ctx, m.Ctx.Backend, m.h, srcs, func(int) sched.LogOptions {
		return sched.LogOptions{Follow: true}
	}, m.ID(), m.gen)
}

// Update takes descriptions, batches of lines, search results, ticks, the mouse and
// the keys of the text fields.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case describedMsg:
		m.polling = false
		if msg.err != nil {
			if msg.first {
				m.err = msg.err
			}
			return nil
		}
		m.applyStatus(msg.desc)
		if msg.first {
			m.layOut(msg.desc)
			m.applyStatus(msg.desc)
			return tea.Batch(m.open(), m.research())
		}
	case batchMsg:
		if msg.gen == m.gen {
			m.ingest(msg)
		}
	case searchMsg:
		m.searched(msg)
	case fetchedMsg:
		m.fetched(msg)
	case common.TickMsg:
		m.tick(msg.Time)
		if !m.polling && m.haveApp && !m.status.State.Terminal() {
			return m.describe(false)
		}
	case tea.MouseClickMsg:
		if p, ok := m.paneAt(msg.X, msg.Y); ok {
			m.focus = p
		}
	case tea.MouseWheelMsg:
		if p, ok := m.paneAt(msg.X, msg.Y); ok && !m.merged {
			m.focus = p
		}
		return m.scroll(common.WheelDelta(msg))
	case tea.KeyPressMsg, tea.PasteMsg:
		return m.typed(msg)
	}
	return nil
}

// ingest puts a batch's lines in the rings.
func (m *Model) ingest(b batchMsg) {
	for i, lines := range b.lines {
		if i >= len(m.panes) || len(lines) == 0 {
			continue
		}
		p := m.panes[i]
		from := p.ring.n
		for _, l := range lines {
			if l.Attempt > p.attempt {
				p.ring.push(entry{time: l.Time.UnixNano(), attempt: int32(l.Attempt), flags: flagDivider})
			}
			p.attempt = l.Attempt
			e := makeEntry(l)
			if e.stderr() {
				p.lastStderr = e.text
			}
			p.ring.push(e)
		}
		m.matchNew(p, from)
		if len(p.matches) > 0 && p.matches[0] < p.ring.first {
			p.matches = p.matches[lowerBound(p.matches, p.ring.first):]
		}
	}
	for i, err := range b.ended {
		if i < len(m.panes) {
			m.panes[i].ended = true
			if !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
				m.panes[i].err = err
			}
		}
	}
	all := true
	for _, p := range m.panes {
		all = all && p.ended
	}
	m.ended = all
}

// applyStatus takes a description: the app's state and each replica's.
func (m *Model) applyStatus(d *sched.Description) {
	if d == nil {
		return
	}
	m.status, m.haveApp = d.Status, true
	for _, role := range d.Status.Roles {
		for _, r := range role.Replicas {
			for _, p := range m.panes {
				if p.role == role.Role && p.k == r.ID {
					p.st, p.known = r, true
					// An exit code is that of the replica's latest run, whose number
					// is its restarts (it is kept while a restart is pending). Runs
					// the status records are kept too: a retry's divider still
					// finds its previous exit once they fall out of Attempts.
					if r.ExitCode != nil {
						p.exits[r.Restarts] = *r.ExitCode
					}
					for _, a := range r.Attempts {
						if a.ExitCode != nil {
							p.exits[a.Attempt] = *a.ExitCode
						}
					}
				}
			}
		}
	}
	if m.status.State.Terminal() && !m.sumSeen {
		m.summary, m.sumSeen = true, true
	}
}

// tick updates the lines-per-second figures.
func (m *Model) tick(now time.Time) {
	if !m.lastTick.IsZero() {
		if dt := now.Sub(m.lastTick).Seconds(); dt > 0 {
			for _, p := range m.panes {
				p.rate = float64(p.ring.n-p.rateN) / dt
			}
		}
	}
	for _, p := range m.panes {
		p.rateN = p.ring.n
	}
	m.lastTick = now
}

// visible lists the panes not hidden, in order.
func (m *Model) visible() []int {
	out := make([]int, 0, len(m.panes))
	for i, p := range m.panes {
		if !p.hidden {
			out = append(out, i)
		}
	}
	return out
}

// current is the scroller keys act on, and its panes.
func (m *Model) current() (*scroller, []int) {
	if m.merged {
		return m.mview, m.visible()
	}
	if m.focus < len(m.panes) {
		return m.panes[m.focus].view, []int{m.focus}
	}
	return nil, nil
}

// onlyMatches reports whether only matching lines (and their context) are shown.
func (m *Model) onlyMatches() bool { return m.only && m.match != nil }

// context is the number of lines of context around matches.
func (m *Model) context() int { return contextSteps[m.ctxStep] }

// Position is the status line's right side.
func (m *Model) Position() string {
	if len(m.panes) == 0 {
		return ""
	}
	var held, dropped int64
	for _, p := range m.panes {
		held += p.ring.len()
		dropped += p.ring.first
	}
	s := fmt.Sprintf("%s lines held", count(held))
	if dropped > 0 {
		s += fmt.Sprintf(" · %s older ones read back on scroll", count(dropped))
	}
	return s
}

// count prints n briefly: 950, 12.3k, 4.1M.
func count(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e3), ".0") + "k"
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e6), ".0") + "M"
}
