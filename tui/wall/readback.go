package wall

import (
	"context"
	"errors"
	"io"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/common"
)

// readBack is how many lines one scroll past the top of a ring reads back from the
// logs: a few pages, so that scrolling on feels continuous.
const readBack = 2000

// readTimeout bounds one read of the logs (a scan of a replica's whole log for a
// window far back included).
const readTimeout = time.Minute

// backfill reads lines that are no longer in memory back from the logs, through the
// Backend's log iterators, off the UI loop, one read at a time per pane. Lines just
// before a ring are put in front of it while it has room (ring.back); lines further
// back go in a window (pane.far) that the pane shows instead of its ring until it
// follows again.
type backfill struct {
	busy  []bool // by pane: a read is under way
	epoch int    // reads of an older epoch (before a refresh) are ignored
}

// windowLines is how many lines a window read back holds: half a ring.
func (m *Model) windowLines() int64 { return int64(max(chunkLines, m.opts.RingLines/2)) }

// then is what to do once a window is in place.
type then int

const (
	thenTop    then = iota // show its first lines
	thenReveal             // show line at
	thenBottom             // show its last lines (scrolling up into it)
	thenStay               // keep the view where it is (scrolling down into it)
	thenFill               // keep the view where it is (lines above it, to fill it)
)

// fetchedMsg carries lines read back from before a pane's ring.
type fetchedMsg struct {
	common.ViewID
	p     int
	epoch int
	first int64 // the ring's first seq when asked
	skip  int   // lines at the end that the ring already holds
	lines []sched.Line
	err   error
	// merged is set when the merged view asked (mergedBack.busy marks the read), gen
	// is then its mergedBack.gen.
	merged bool
	gen    int
}

// loadedMsg carries the lines [base, base+len(entries)) of a pane, numbered as the
// wall numbers them, read by a scan of its logs from the first line.
type loadedMsg struct {
	common.ViewID
	p       int
	epoch   int
	base    int64
	entries []entry
	// then and at say what the pane's view shows then.
	then then
	at   int64
	err  error
}

// scanLogs reads the logs of one replica from the first line, keeps those filter
// selects (nil keeps all; a line where torchrun's tee glued several workers' lines is
// each of them, as ingest takes it), numbers them as the wall's ring does (a divider
// before the first line of each later attempt takes a seq of its own), and calls fn
// with each line (div: the divider before it) until fn returns false. The entry is
// fn's to make (scanned), for the lines it keeps only: most of a scan is lines skipped
// on the way to a window far down.
func scanLogs(ctx context.Context, b common.Backend, h spec.Handle, role string, k int, filter *lineFilter, fn func(seq int64, l *sched.Line, div bool) bool) error {
	it, err := b.LogLines(ctx, h, role, k, sched.LogOptions{})
	if err != nil {
		return err
	}
	defer it.Close()
	var seq int64
	attempt := 0
	// one numbers line l and hands it to fn, if filter keeps it; false: fn is done.
	one := func(l *sched.Line) bool {
		if filter != nil && !filter.keep(l) {
			return true
		}
		if l.Attempt > attempt {
			if !fn(seq, l, true) {
				return false
			}
			seq++
		}
		attempt = l.Attempt
		if !fn(seq, l, false) {
			return false
		}
		seq++
		return true
	}
	var l sched.Line // one for the scan: fn and filter take its address
	for {
		if l, err = it.Next(ctx); errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		var parts []sched.Line
		if filter != nil {
			parts = filter.split(l)
		}
		if parts == nil {
			if !one(&l) {
				return nil
			}
			continue
		}
		for i := range parts {
			if !one(&parts[i]) {
				return nil
			}
		}
	}
}

// scanned is the entry of what scanLogs hands fn: line l, or the divider before it.
func scanned(l *sched.Line, div bool) entry { return cook(rawEntry(l, div)) }

// load reads the lines [from, to) of pane pi back from its logs; then says what the
// pane's view shows once they are in place.
func (m *Model) load(pi int, from, to int64, th then, at int64) tea.Cmd {
	if pi >= len(m.panes) || m.back.busy[pi] || to <= from {
		return nil
	}
	m.back.busy[pi] = true
	p := m.panes[pi]
	id, b, parent, h, epoch := m.ID(), m.Ctx.Backend, m.Ctx.Ctx, m.h, m.back.epoch
	role, k, filter := p.role, p.k, p.filter()
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, readTimeout)
		defer cancel()
		msg := loadedMsg{ViewID: id, p: pi, epoch: epoch, base: from, then: th, at: at}
		msg.err = scanLogs(ctx, b, h, role, k, filter, func(seq int64, l *sched.Line, div bool) bool {
			if seq >= from {
				msg.entries = append(msg.entries, scanned(l, div))
			}
			return seq+1 < to
		})
		return msg
	}
}

// loaded puts lines read back in place: in front of the ring when they end where it
// starts and it has room, else as the pane's window. Then the view that asked moves.
func (m *Model) loaded(msg loadedMsg) {
	if msg.p >= len(m.panes) || msg.epoch != m.back.epoch {
		return
	}
	m.back.busy[msg.p] = false
	p := m.panes[msg.p]
	if msg.err != nil || len(msg.entries) == 0 {
		return
	}
	end := msg.base + int64(len(msg.entries))
	switch {
	case p.far != nil && msg.then == thenStay && msg.base == p.far.n:
		// Scrolling down a window: its next lines, up to the ring.
		for _, e := range msg.entries {
			p.far.push(e)
		}
	case p.far != nil && (msg.then == thenBottom || msg.then == thenFill) && end == p.far.first:
		// Scrolling up a window: its previous lines; its newest go when it is full.
		w := newRing(int(m.windowLines()))
		w.base, w.first, w.n = msg.base, msg.base, msg.base
		for _, e := range msg.entries {
			w.push(e)
		}
		for seq := p.far.first; seq < p.far.n && w.len() < m.windowLines(); seq++ {
			w.push(*p.far.at(seq))
		}
		p.far = w
	default:
		w := newRing(int(m.windowLines()))
		w.base, w.first, w.n = msg.base, msg.base, msg.base
		for _, e := range msg.entries {
			w.push(e)
		}
		p.far = w
	}
	// A window that reached the ring joins it when the ring has room for it.
	if w := p.far; w != nil && w.n >= p.ring.first {
		if room := int64(p.ring.limit) - p.ring.back; p.ring.first-w.first <= room {
			es := make([]entry, 0, p.ring.first-w.first)
			for seq := w.first; seq < p.ring.first; seq++ {
				es = append(es, *w.at(seq))
			}
			p.ring.prepend(es)
			p.far = nil
		}
	}
	s := p.view
	k := m.walkerOf(s)
	h, tw := m.geometryOf(s)
	sh := p.shown()
	switch msg.then {
	case thenTop:
		k.top(h, tw)
	case thenReveal:
		if msg.at >= sh.first && msg.at < sh.n {
			k.reveal(ref{msg.p, msg.at}, h, tw)
		}
	case thenBottom:
		s.anchor[msg.p] = min(end, sh.n)
	}
}

// readBackIfTop reads older lines back when the current view stands at the top of
// what its pane holds: into the ring while it has room, else into a window.
func (m *Model) readBackIfTop(s *scroller) tea.Cmd {
	if m.merged || m.focus >= len(m.panes) {
		return nil
	}
	return m.readBackPane(m.focus, thenBottom)
}

// moved drops the restored positions: the user moved, the view is theirs now.
func (m *Model) moved() {
	for _, p := range m.panes {
		p.want = 0
	}
}

// fill reads back the lines a paused pane on screen lacks to fill its rows: those
// above a restored position, or above a window read back that a zoom made taller. A
// pane shows blank rows (or "no lines yet") only when the logs have no more.
func (m *Model) fill() tea.Cmd {
	if m.merged {
		return m.mergedFill()
	}
	if len(m.panes) == 0 || len(m.back.busy) != len(m.panes) {
		return nil
	}
	var cmds []tea.Cmd
	for _, r := range m.rects {
		if r.p < 0 || r.p >= len(m.panes) {
			continue
		}
		pi, p := r.p, m.panes[r.p]
		if p.view.follow {
			p.want = 0
			continue
		}
		if m.back.busy[pi] || p.view.selecting {
			continue
		}
		sh := p.shown()
		if p.want > 0 && p.want <= sh.first {
			from := max(0, p.want-m.windowLines())
			cmds = append(cmds, m.load(pi, from, p.want, thenBottom, 0))
			p.want = 0
			continue
		}
		k := m.walker(p.view, []int{pi})
		h, tw := max(1, r.h-1), m.textWidth(p.view, r.w)
		lines, skip, more := k.window(h, tw)
		used := -skip
		for _, l := range lines {
			used += k.rows(l, tw)
		}
		if more || used >= h {
			continue
		}
		if sh.first == 0 || sh.first == p.filledAt {
			// Nothing more above: the lines below come up instead (a pane at the
			// top of the logs, made taller).
			k.down(h - used)
			continue
		}
		p.filledAt = sh.first
		cmds = append(cmds, m.readBackPane(pi, thenFill))
	}
	return tea.Batch(cmds...)
}

// readBackPane reads older lines of pane pi back, before what it holds: into the ring
// while it has room, else into a window; th says where the view stands then.
func (m *Model) readBackPane(pi int, th then) tea.Cmd {
	p := m.panes[pi]
	if m.back.busy[pi] {
		return nil
	}
	if w := p.far; w != nil {
		if w.first == 0 {
			return nil
		}
		return m.load(pi, max(0, w.first-readBack*4), w.first, th, 0)
	}
	if p.ring.first == 0 || p.ring.len() == 0 {
		return nil
	}
	if p.ring.back+readBack > int64(p.ring.limit) || p.nproc > 0 {
		// Past the ring's room, or a pane of some of a replica's lines (a rank's, a
		// node's own) whose place in the logs only a scan tells.
		return m.load(pi, max(0, p.ring.first-m.windowLines()/2), p.ring.first, th, 0)
	}
	m.back.busy[pi] = true
	return m.fetch(pi, false)
}

// canFetch reports whether lines just before pane pi's ring can be read back into
// it: the ring has room for a read, and the pane shows every line of its replica
// (a rank's or a node's place in the logs only a scan tells).
func (m *Model) canFetch(pi int) bool {
	p := m.panes[pi]
	return p.ring.first > 0 && p.ring.len() > 0 && p.ring.back+readBack <= int64(p.ring.limit) && p.nproc == 0
}

// fetch reads the lines just before pane pi's ring, the last readBack before its
// first line, by their time (no scan from the first line); fetched puts them in front
// of the ring. The caller marks the read busy.
func (m *Model) fetch(pi int, merged bool) tea.Cmd {
	p := m.panes[pi]
	first := p.ring.at(p.ring.first)
	t := first.time
	same := 0
	for seq := p.ring.first; seq < p.ring.n && p.ring.at(seq).time == t; seq++ {
		if !p.ring.at(seq).divider() {
			same++
		}
	}
	id, b, parent, h, epoch, gen := m.ID(), m.Ctx.Backend, m.Ctx.Ctx, m.h, m.back.epoch, m.mb.gen
	role, k, firstSeq := p.role, p.k, p.ring.first
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, readTimeout)
		defer cancel()
		msg := fetchedMsg{ViewID: id, p: pi, epoch: epoch, first: firstSeq, skip: same, merged: merged, gen: gen}
		it, err := b.LogLines(ctx, h, role, k, sched.LogOptions{Until: time.Unix(0, t+1), Tail: readBack + same})
		if err != nil {
			msg.err = err
			return msg
		}
		defer it.Close()
		for {
			l, err := it.Next(ctx)
			if err != nil {
				break
			}
			msg.lines = append(msg.lines, l)
		}
		return msg
	}
}

// readOnIfBottom reads the lines after a window when the current view stands at its
// bottom: up to the ring, which the window then joins.
func (m *Model) readOnIfBottom(s *scroller) tea.Cmd {
	if m.merged || m.focus >= len(m.panes) {
		return nil
	}
	p := m.panes[m.focus]
	if p.far == nil {
		return nil
	}
	return m.load(m.focus, p.far.n, min(p.ring.first, p.far.n+readBack*4), thenStay, 0)
}

// readAction answers g: the top of the current view, its first lines read back from
// the logs when they are no longer held (a selection's cursor goes to the first line
// held).
func (m *Model) readAction(action common.ActionName) (tea.Cmd, bool) {
	if action != common.ActTop {
		return nil, false
	}
	s, _ := m.current()
	if s.selecting {
		return m.scroll(-1 << 30), true
	}
	return m.toTop(s), true
}

// toTop shows the first line of the logs in view s: at once when it is held, else
// once it is read back.
func (m *Model) toTop(s *scroller) tea.Cmd {
	m.moved()
	if s == m.mview {
		return m.mergedTop()
	}
	k := m.walkerOf(s)
	h, tw := m.geometryOf(s)
	s.follow = false
	var cmds []tea.Cmd
	for _, pi := range k.srcs {
		p := m.panes[pi]
		if p.shown().first > 0 {
			if p.ring.first > 0 {
				cmds = append(cmds, m.load(pi, 0, min(p.ring.first, m.windowLines()), thenTop, 0))
			} else {
				p.far = nil
			}
		}
	}
	k.top(h, tw)
	return tea.Batch(cmds...)
}

// show shows line r (a match at time t) in the current view, reading it back first
// when it is not held.
func (m *Model) show(r ref, t int64) tea.Cmd {
	m.moved()
	if m.merged {
		return m.mergedShow(key{t: t, p: r.p, seq: r.seq})
	}
	m.focus = r.p
	s := m.panes[r.p].view
	h, tw := m.geometry()
	p := m.panes[r.p]
	if p.far != nil && (r.seq < p.far.first || r.seq >= p.far.n) && r.seq >= p.ring.first {
		p.far = nil
	}
	if sh := p.shown(); r.seq >= sh.first && r.seq < sh.n {
		m.walkerOf(s).reveal(r, h, tw)
		return nil
	}
	s.follow = false
	half := m.windowLines() / 2
	from := max(0, r.seq-half)
	to := min(p.ring.first, from+m.windowLines())
	return m.load(r.p, from, to, thenReveal, r.seq)
}

// fetched puts lines read back in front of a ring.
func (m *Model) fetched(msg fetchedMsg) {
	if msg.p >= len(m.panes) || msg.epoch != m.back.epoch {
		return
	}
	p := m.panes[msg.p]
	if msg.merged {
		m.mb.busy[msg.p] = false
	} else {
		m.back.busy[msg.p] = false
	}
	if msg.err != nil || p.ring.first != msg.first || !msg.merged && p.far != nil {
		return
	}
	lines := msg.lines
	lines = lines[:max(0, len(lines)-msg.skip)]
	if room := int64(p.ring.limit) - p.ring.back; int64(len(lines)) > room {
		lines = lines[int64(len(lines))-room:]
	}
	if len(lines) == 0 {
		return
	}
	es := make([]entry, 0, len(lines))
	for i, l := range lines {
		if i > 0 && l.Attempt > lines[i-1].Attempt {
			es = append(es, entry{time: l.Time.UnixNano(), attempt: int32(l.Attempt), flags: flagDivider})
		}
		es = append(es, makeEntry(l))
	}
	// The ring's first line may start an attempt whose divider left the ring.
	if f := p.ring.at(p.ring.first); !f.divider() && int(f.attempt) > lines[len(lines)-1].Attempt {
		es = append(es, entry{time: f.time, attempt: f.attempt, flags: flagDivider})
	}
	p.ring.prepend(es)
}

// forget drops what was read back for the panes of view s, which follows again:
// its windows, and the lines read back in front of the rings that no paused view
// stands in.
func (m *Model) forget(s *scroller, srcs []int) {
	if s == m.mview {
		m.mb.redirect()
	}
	for _, pi := range srcs {
		p := m.panes[pi]
		if s == m.mview {
			m.mb.far[pi] = nil
		} else {
			p.far = nil
		}
		if p.view.follow && (m.mview.follow || p.hidden) {
			p.ring.forget()
		}
	}
}
