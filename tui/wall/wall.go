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
	"slices"
	"strings"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/appops"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/render"
	"github.com/wick-dev/wick/tui/widget"
)

// Options tune the wall.
type Options struct {
	// RingLines is how many lines each pane keeps in memory at most; 0 means
	// DefaultRingLines.
	RingLines int
	// HeldLines is how many lines the panes keep in memory in all (each an equal
	// share, at most RingLines); 0 means DefaultHeldLines.
	HeldLines int
	// StateDir is where the wall keeps its small per-app state (layout, focus, search,
	// follow) for the next time it opens on the app; "" keeps none.
	StateDir string
	// Metrics says which numbers of the lines are metrics (nil: the defaults);
	// NoMetrics reads none (no sparklines, chart or alarms).
	Metrics   *metrics.Config
	NoMetrics bool
}

// pane is one replica: its lines and how they are shown.
type pane struct {
	role string
	k    int // the replica (for a rank: the node it is on)
	// rank is the global rank of a torchrun worker's pane, else -1; node marks the
	// pane of a torchrun node's own lines. nproc and world are the role's workers per
	// node and in all (0 unless it runs torchrun).
	rank         int
	node         bool
	nproc, world int
	// ranks is the wall's tracker of the ranks, for a torchrun role's panes.
	ranks *ranks.Tracker
	src   int // the feed source (m.srcs) the pane's lines come from
	ring  *ring
	label string // name's, once made
	// far, when set, is a window of older lines read back from the logs that the
	// pane shows instead of its ring: lines too far back to fit in front of it.
	far  *ring
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
	// pend is each stream's line still being written (a progress bar), by stream
	// (stdout, stderr): drawn below the lines while following, not in the ring.
	pend   [2]*entry
	rate   float64
	rateN  int64
	hidden bool
	// want is a restored anchor of a paused pane, until the lines above it are read
	// back (fill); filledAt is the first seq shown when fill last read back for the
	// pane, so that a read that brings nothing is not repeated.
	want     int64
	filledAt int64
}

// shown is the ring the pane's views walk: the window read back, else the ring.
func (p *pane) shown() *ring {
	if p.far != nil {
		return p.far
	}
	return p.ring
}

func (p *pane) name() string {
	// Kept once made: a pane's role, replica and rank never change, and the name is
	// asked for in every frame (for every pane, by the merged view's prefix width).
	if p.label == "" {
		if p.rank >= 0 {
			p.label = fmt.Sprintf("rank %d", p.rank)
		} else {
			p.label = fmt.Sprintf("%s/%d", p.role, p.k)
		}
	}
	return p.label
}

// Model is the log wall view of one app.
type Model struct {
	common.Base
	h    spec.Handle
	opts Options

	panes []*pane
	// prefix is prefixWidth's, for the panes it was measured for.
	prefix struct {
		n     int
		first *pane
		w     int
	}
	srcs  []replica // the replicas read, whose lines go to the panes
	ranks *ranks.Tracker
	focus int
	// hangAt is when the wall last checked the app for a hang (hang.go).
	hangAt time.Time
	zoom   bool
	merged bool
	mview  *scroller
	// reattributed is set when a status moved lines between panes (reattribute);
	// misrouted when it changed the ranks of a node some of whose lines went to rank
	// panes already.
	reattributed, misrouted bool
	summary                 bool // the end-of-app summary is shown
	sumSeen                 bool // it was shown once automatically
	// failSeen is set once the failure of the app has been focused.
	failSeen bool

	status   spec.AppStatus
	haveApp  bool
	polling  bool
	lastTick time.Time
	ended    bool // every stream ended
	err      error
	cancel   context.CancelFunc
	gen      int
	room     *inFlight // the current feed's budget of lines in flight

	find   search     // the search across panes (search.go)
	back   backfill   // lines read back from the logs (readback.go)
	mb     mergedBack // lines the merged view read back (mergedback.go)
	saving saver      // the save prompt (save.go)

	mx  metricState // the numbers in the lines (metrics.go)
	use usageState  // each running replica's CPU and RSS (usage.go)

	// The layout of the last frame, for the mouse.
	rects []rect
	// restored state, applied when the panes are known.
	saved *state
	// unwatch tells the app list's alarm Book that the wall no longer reads the app.
	unwatch func()
	// onScreen says, by source, whether a pane of it was drawn by the last frame:
	// the readers of the others pace their reads (see offScreenPace); nil for an
	// app of at most paceAbove replicas. drawn is the sources of that frame, to
	// update onScreen only when they change.
	onScreen []atomic.Bool
	drawn    []int
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
	if opts.HeldLines <= 0 {
		opts.HeldLines = DefaultHeldLines
	}
	m := &Model{Base: common.NewBase(ctx, Kind), h: h, opts: opts, find: newSearch(), saving: newSaver()}
	m.saved = loadState(opts.StateDir, h)
	m.mx = newMetricState(opts)
	return m
}

// Title is the view's crumb.
func (m *Model) Title() string { return "logs " + m.h.AppID }

// Typing reports whether the search or save field has focus.
func (m *Model) Typing() bool { return m.find.typing || m.saving.open }

type describedMsg struct {
	common.ViewID
	desc *sched.Description
	err  error
	// first is set for the description that lays out the panes.
	first bool
	// hang is set when the description was checked for a hang (hangCheck).
	hang bool
}

// describeTimeout bounds one Describe: a Docker Engine or a state file that does not
// answer must not leave the wall waiting forever (it polls again on the next tick).
const describeTimeout = 10 * time.Second

func (m *Model) describe(first bool) tea.Cmd {
	id, b, parent, h := m.ID(), m.Ctx.Backend, m.Ctx.Ctx, m.h
	m.polling = true
	checkHang := m.hangCheck()
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, describeTimeout)
		defer cancel()
		d, err := b.Describe(ctx, h)
		if err == nil && checkHang {
			attachHang(ctx, b, h, d)
		}
		return describedMsg{ViewID: id, desc: d, err: err, first: first, hang: checkHang}
	}
}

// Init finds the app's replicas. While the wall reads them, the alarm Book leaves the
// app alone: the wall extracts the same metrics from the same lines (MetricAlarms).
func (m *Model) Init() tea.Cmd {
	if m.unwatch == nil {
		m.unwatch = m.Ctx.Alarms.Watch(m.h)
	}
	return m.describe(true)
}

// Close stops the readers and the search, and saves the wall's state for next time.
func (m *Model) Close() {
	if m.cancel != nil {
		m.cancel()
	}
	if m.find.stop != nil {
		m.find.stop()
	}
	if m.unwatch != nil {
		m.unwatch()
	}
	if len(m.panes) > 0 {
		saveState(m.opts.StateDir, m.h, m.state())
	}
}

// layOut makes the panes from the first description.
func (m *Model) layOut(d *sched.Description) {
	m.layOutReplicas(d)
	// A pane's own view reads and moves its pane's anchor alone (its walker walks
	// that pane), so the panes' views share one slice of anchors: one each was n^2,
	// 8 MB at 1,024 panes.
	own := newScroller(len(m.panes)).anchor
	for _, p := range m.panes {
		p.ring = newRing(m.paneLines())
		p.view = newScroller(0)
		p.view.anchor = own
		p.exits = map[int]int{}
	}
	m.mview = newScroller(len(m.panes))
	m.back.busy = make([]bool, len(m.panes))
	m.mb = newMergedBack(len(m.panes))
	m.find.hits = make([]hits, len(m.panes))
	if m.saved != nil {
		m.restore(m.saved)
		m.saved = nil
	}
}

// paneLines is how many lines each pane keeps in memory: its share of the wall's
// budget (Options.HeldLines), at most Options.RingLines.
func (m *Model) paneLines() int {
	return min(m.opts.RingLines, m.opts.HeldLines/max(1, len(m.panes)))
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
	srcs := make([]source, len(m.srcs))
	m.onScreen, m.drawn = nil, nil
	if len(m.srcs) > paceAbove {
		m.onScreen = make([]atomic.Bool, len(m.srcs))
	}
	for i, r := range m.srcs {
		// The reader's own node tracker, to split the lines torchrun's tee glued.
		var node *ranks.Node
		if m.ranks != nil && m.ranks.NProc(r.role) > 0 {
			node = m.ranks.Fresh(r.role, r.k)
		}
		srcs[i] = source{role: r.role, k: r.k, observe: m.mx.observer(node)}
		if m.onScreen != nil {
			srcs[i].onScreen = &m.onScreen[i]
		}
	}
	m.room = newInFlight(maxInFlight)
	return feed(ctx, m.Ctx.Backend, m.h, srcs, m.room, func(int) sched.LogOptions {
		// Pending: each stream's unfinished line (a progress bar) comes live.
		return sched.LogOptions{Follow: true, Pending: true}
	}, m.ID(), m.gen)
}

// reset forgets every line, every value read from them and every read under way,
// and reads every replica again from its first line (ctrl+r).
func (m *Model) reset() tea.Cmd {
	for i, p := range m.panes {
		p.ring, p.far = newRing(m.paneLines()), nil
		p.attempt = 0
		p.ended, p.err = false, nil
		m.back.busy[i] = false
	}
	m.back.epoch++
	m.mb = newMergedBack(len(m.panes))
	if m.ranks != nil {
		m.ranks.Reset() // what the status says stays known
	}
	for i := range m.srcs {
		if r := &m.srcs[i]; r.node != nil {
			// The group rank the node's lines taught it (a failure summary's
			// ranks) holds for the lines read again, as the status does: the lines
			// before those are what is read again to be routed so.
			old := r.node
			r.node = m.ranks.Node(r.role, r.k)
			r.node.SetGroupRank(old.GroupRank())
			r.routed, r.misrouted = false, false
		}
	}
	m.ended = false
	m.mx.reset()
	return tea.Batch(m.open(), m.research())
}

// Update takes descriptions, batches of lines, search results, ticks, the mouse and
// the keys of the text fields.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	cmd := m.update(msg)
	if fill := m.fill(); fill != nil {
		return tea.Batch(cmd, fill)
	}
	return cmd
}

func (m *Model) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case describedMsg:
		m.polling = false
		if msg.err != nil {
			if msg.first {
				m.err = msg.err
			}
			return nil
		}
		if !msg.hang {
			msg.desc.Status.Hang = m.status.Hang // until the next check
		}
		m.applyStatus(msg.desc)
		if msg.first {
			m.layOut(msg.desc)
			m.applyStatus(msg.desc)
			m.reattributed, m.misrouted = false, false
			return tea.Batch(m.open(), m.research())
		}
		if m.misrouted {
			m.misrouted, m.reattributed = false, false
			return m.reset()
		}
		if m.reattributed {
			// The search's hits are of the panes' old numbering.
			m.reattributed = false
			return m.research()
		}
	case batchMsg:
		if msg.gen == m.gen {
			m.ingest(msg)
		}
		msg.done()
		if m.misrouted {
			m.misrouted, m.reattributed = false, false
			return m.reset()
		}
	case searchMsg:
		return m.searched(msg)
	case fetchedMsg:
		m.fetched(msg)
		if msg.merged {
			return m.mergedFetched(msg)
		}
	case loadedMsg:
		m.loaded(msg)
	case mergedMsg:
		return m.mergedLoaded(msg)
	case appops.Done:
		if msg.Err == nil && !m.polling {
			return tea.Batch(msg.Notice(), m.describe(false))
		}
		return msg.Notice()
	case usageMsg:
		m.tookUsage(msg)
	case common.TickMsg:
		m.tick(msg.Time)
		use := m.refreshUsage(msg.Time)
		if !m.polling && m.haveApp && !m.status.State.Terminal() {
			return tea.Batch(m.describe(false), use)
		}
		return use
	case tea.MouseClickMsg:
		if p, ok := m.paneAt(msg.X, msg.Y); ok {
			m.focus = p
		}
	case tea.MouseWheelMsg:
		if p, ok := m.paneAt(msg.X, msg.Y); ok && !m.merged {
			m.focus = p
		}
		return m.scroll(widget.WheelDelta(msg))
	case tea.KeyPressMsg, tea.PasteMsg:
		return m.typed(msg)
	}
	return nil
}

// ingest puts a batch's lines in the rings.
func (m *Model) ingest(b batchMsg) {
	for si, lines := range b.lines {
		if si >= len(m.srcs) {
			continue
		}
		r := &m.srcs[si]
		for j := range lines {
			if parts := r.split(lines[j]); parts != nil {
				// torchrun's tee glued several workers' lines into this one: each
				// part goes to its rank's pane.
				for i := range parts {
					m.ingestLine(si, r, &parts[i])
				}
				continue
			}
			m.ingestLine(si, r, &lines[j])
		}
		if r.misrouted {
			r.misrouted, m.misrouted = false, true
		}
	}
	for si, err := range b.ended {
		if si >= len(m.srcs) {
			continue
		}
		for _, p := range m.panes {
			if p.src != si {
				continue
			}
			p.ended = true
			p.pend = [2]*entry{}
			if !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
				p.err = err
			}
		}
	}
	all := true
	for _, p := range m.panes {
		all = all && p.ended
	}
	m.ended = all
	if len(b.ended) > 0 {
		m.focusFailure()
	}
}

// ingestLine puts line l of source si (replica r) in the pane it goes to.
func (m *Model) ingestLine(si int, r *replica, l *sched.Line) {
	pi := r.route(l)
	if p := m.panes[pi]; p.rank >= 0 && p.k != r.k {
		// The rendezvous put this rank on another node than assumed: it takes that
		// node's status.
		np := m.panes[r.pane]
		p.k, p.src, p.st, p.known = r.k, si, np.st, np.known
	}
	m.push(pi, l)
}

// push puts line l in pane pi: a pending line stands aside until its stream's next
// line; a committed one goes in the ring (after a divider when it starts a new
// attempt) and is searched when the search is up to date.
func (m *Model) push(pi int, l *sched.Line) {
	p := m.panes[pi]
	si := streamIndex(l.Stream)
	if l.Pending {
		e := makeEntry(*l)
		if l.Cut {
			e.flags |= flagLong
		}
		p.pend[si] = &e
		return
	}
	p.pend[si] = nil
	h := m.find.upToDate(pi, p.ring.n)
	if l.Attempt > p.attempt {
		p.ring.push(entry{time: l.Time.UnixNano(), attempt: int32(l.Attempt), flags: flagDivider})
		if h != nil {
			h.scanned++
		}
	}
	p.attempt = l.Attempt
	e := makeEntry(*l)
	if e.stderr() {
		p.lastStderr = e.text
	}
	seq := p.ring.n
	p.ring.push(e)
	if h != nil {
		// The line itself is matched, not the text kept: a match past the cut of a
		// long line is found.
		if m.find.match.matchEntry(&e, l.Text) {
			h.add(seq, e.time)
		}
		h.scanned = seq + 1
	}
}

// streamIndex is the index of a line's stream in pane.pend.
func streamIndex(s sched.Stream) int {
	if s == sched.Stderr {
		return 1
	}
	return 0
}

// applyStatus takes a description: the app's state and each replica's.
func (m *Model) applyStatus(d *sched.Description) {
	if d == nil {
		return
	}
	m.status, m.haveApp = d.Status, true
	// What the scheduler learned of the torchrun nodes: their group ranks, the
	// traceback the root cause puts on one of their ranks.
	var moved []sched.ReplicaRef
	blamed := make([]bool, len(m.srcs))
	for i, src := range m.srcs {
		if src.node != nil {
			_, blamed[i] = src.node.Blamed()
		}
	}
	if m.ranks != nil { // nil until the panes are laid out
		moved = m.ranks.Update(d)
	}
	for _, ref := range moved {
		for i := range m.srcs {
			if src := &m.srcs[i]; src.node != nil && src.role == ref.Role && src.k == ref.Replica {
				src.place()
				// Lines of its ranks came before the scheduler said which ranks
				// they are (the node was taken for group rank k): read them again,
				// now routed to the right panes (see reset).
				m.misrouted = m.misrouted || src.routed
			}
		}
	}
	for i := range m.srcs {
		// A traceback the root cause now puts on one of the node's ranks.
		if src := &m.srcs[i]; src.node != nil && !blamed[i] {
			if _, now := src.node.Blamed(); now && m.reattribute(src) {
				m.reattributed = true
			}
		}
	}
	// The panes of each replica (a torchrun node's ranks share it), found once: a
	// scan of every pane for every replica is a million steps a second at 1,024.
	byReplica := make(map[sched.ReplicaKey][]*pane, len(m.panes))
	for _, p := range m.panes {
		key := sched.ReplicaKey{Role: p.role, Replica: p.k}
		byReplica[key] = append(byReplica[key], p)
	}
	for _, role := range d.Status.Roles {
		for _, r := range role.Replicas {
			for _, p := range byReplica[sched.ReplicaKey{Role: role.Role, Replica: r.ID}] {
				p.st, p.known = r, true
				// An exit code is that of the replica's latest run, whose number is
				// its restarts (it is kept while a restart is pending). Runs the
				// status records are kept too: a retry's divider still finds its
				// previous exit once they fall out of Attempts.
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
	if m.status.State.Terminal() && !m.sumSeen {
		m.summary, m.sumSeen = true, true
	}
	m.focusFailure()
}

// focusFailure focuses, once, the pane of the app's failure. For a torchrun node it
// waits for the node's lines to end, where torchrun names the root cause's rank.
func (m *Model) focusFailure() {
	if m.status.State != spec.Failed || m.failSeen || len(m.panes) == 0 {
		return
	}
	i, ok := m.failedPane()
	if !ok {
		return
	}
	if p := m.panes[i]; p.node && !p.ended {
		return
	}
	m.failSeen = true
	m.focus = i
	m.panes[i].hidden = false
}

// appError is the app's error as the header and the summary say it: the first line of
// its first failure's message, as `wick status` shows it; "" without one.
func (m *Model) appError() string {
	if e := m.hangError(); e != "" {
		return e
	}
	if m.status.State != spec.Failed || m.status.StructuredError == "" {
		return ""
	}
	return render.Escape(render.FirstLine(spec.ErrorMessage(m.status.StructuredError)))
}

// failedPane is the pane of the replica whose failure failed the app: the one whose
// error is the app's, else the first to fail. For a torchrun node, it is the pane of
// the rank whose exception the app's error is, as torchrun's failure summary says.
func (m *Model) failedPane() (int, bool) {
	if i, ok := m.causePane(); ok {
		return i, true
	}
	// A node whose failure summary holds the app's error names the rank that raised
	// it, whichever node ended first (the other node's agent often does, stopped by
	// the failure; its own summary then names one of its victims as root cause).
	if err := render.FirstLine(spec.ErrorMessage(m.status.StructuredError)); err != "" {
		for _, node := range m.panes {
			if !node.node || !node.known || node.st.State != spec.Failed {
				continue
			}
			if g, _ := summaryRanks(node.ring, err); g >= 0 {
				for i, p := range m.panes {
					if p.rank == g && p.role == node.role {
						return i, true
					}
				}
			}
		}
	}
	best := -1
	for i, p := range m.panes {
		if !p.known || p.st.State != spec.Failed || p.rank >= 0 {
			continue
		}
		if m.status.StructuredError != "" && p.st.StructuredError == m.status.StructuredError {
			best = i
			break
		}
		if best < 0 || !p.st.Ended.IsZero() && p.st.Ended.Before(m.panes[best].st.Ended) {
			best = i
		}
	}
	if best < 0 || !m.panes[best].node {
		return best, best >= 0
	}
	node := m.panes[best]
	if g, ok := failedRank(node.ring, render.FirstLine(spec.ErrorMessage(m.status.StructuredError))); ok {
		for i, p := range m.panes {
			if p.rank == g && p.role == node.role {
				return i, true
			}
		}
	}
	return best, true
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

// markDrawn tells the readers which sources the frame just drawn shows a pane of
// (m.rects; the merged view and the chart show every visible pane): those are read
// as their lines come, the others paced.
func (m *Model) markDrawn() {
	if len(m.onScreen) == 0 {
		return
	}
	var drawn []int
	if m.merged || m.mx.chart {
		for _, p := range m.visible() {
			drawn = append(drawn, m.panes[p].src)
		}
	} else {
		for _, r := range m.rects {
			if r.p >= 0 && r.p < len(m.panes) {
				drawn = append(drawn, m.panes[r.p].src)
			}
		}
	}
	if slices.Equal(drawn, m.drawn) {
		return
	}
	for _, src := range m.drawn {
		if src < len(m.onScreen) {
			m.onScreen[src].Store(false)
		}
	}
	for _, src := range drawn {
		if src < len(m.onScreen) {
			m.onScreen[src].Store(true)
		}
	}
	m.drawn = drawn
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

// Position is the status line's right side.
func (m *Model) Position() string {
	if len(m.panes) == 0 {
		return ""
	}
	var held, older int64
	for i, p := range m.panes {
		held += p.ring.len()
		if p.far != nil {
			held += p.far.len()
		}
		if m.mb.windowed(i) {
			held += m.mb.far[i].len()
		}
		older += p.ring.first
	}
	s := fmt.Sprintf("%s %s held", count(held), lines(held))
	if older > 0 {
		s += fmt.Sprintf(" · %s older %s on disk (g, scrolling and search read them)", count(older), lines(older))
	}
	return s
}

// lines is "line" for one, else "lines".
func lines(n int64) string {
	if n == 1 {
		return "line"
	}
	return "lines"
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
