package wall

import (
	"context"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/tui/common"
)

// The merged view reads back too. Scrolled up past the oldest lines the rings hold,
// or sent to line 1 (g) or to a match on disk only, it reads the visible panes' older
// lines from the logs, off the UI loop, mergedStep lines of a pane at a time, into a
// window per pane of its own: not the pane's own window (pane.far), since a pane's
// view and the merged view stand in different places. The walk is clipped
// (walker.clip) to the lines whose place in time order is known, so that panes read
// back to different times never show out of order or with a gap; reads go to the
// panes that bound the clip, so that each brings the view at least mergedStep/2 lines
// further, whatever the panes' rates. The windows of all panes hold at most about the
// wall's budget of lines (Options.HeldLines) together: at 1,024 panes, g once read
// 50k lines of each, the whole logs.

// mergedBack is what the merged view read back, and what it waits for.
type mergedBack struct {
	// far is, by pane, the window read back that the merged view walks instead of
	// the pane's ring (nil: the ring). It holds about mergedLines lines.
	far  []*ring
	busy []bool // by pane: a read is under way
	// What the view does as the reads under way land: move lines (< 0 up, > 0
	// down), go to the first lines (top), or show line at (reveal).
	move   int
	top    bool
	reveal bool
	at     key
	// rounds is how many times reads landed without completing the move: a view
	// filtered down to a few lines does not read the whole logs back for one key.
	rounds int
	// gen counts what the view was sent to (g, a match, following): reads asked
	// for an earlier one are dropped as they land.
	gen int
	// filled is the sum of the first seqs held when fill last read back, so that a
	// read that brought nothing is not repeated.
	filled int64
	// err is why the last read failed, until the view moves.
	err error
}

// mergedStep is how many lines of a pane one read for the merged view brings:
// readBack, less when the visible panes are many, so that a read of each stays
// within a quarter of the wall's budget of lines (48 lines of each of 1,024 panes);
// at least minMergedStep. A page of the merged view takes a few lines of each pane.
func (m *Model) mergedStep() int64 {
	return min(readBack, max(minMergedStep, int64(m.opts.HeldLines)/(4*int64(max(1, m.shown())))))
}

// minMergedStep is the least mergedStep: most of a page of one pane, and a share of
// the wall's budget at 1,024 panes.
const minMergedStep = 48

// mergedLines is about how many lines the merged view's window of one pane holds
// (it may hold twice as many while it grows): its share of half the wall's budget of
// lines among the visible panes, at least two reads, at most a pane's window.
func (m *Model) mergedLines() int64 {
	return min(m.windowLines(), max(2*m.mergedStep(), int64(m.opts.HeldLines)/(2*int64(max(1, m.shown())))))
}

// shown is how many panes are visible (not hidden by a filter).
func (m *Model) shown() int {
	n := 0
	for _, p := range m.panes {
		if !p.hidden {
			n++
		}
	}
	return n
}

// maxRounds bounds the rounds of reads one move waits for: a move of a page needs
// one or two (a round brings at least mergedStep/2 lines of each pane it reads).
const maxRounds = 8

func newMergedBack(n int) mergedBack {
	return mergedBack{far: make([]*ring, n), busy: make([]bool, n), filled: -1}
}

// held is the lines of pane p the merged view walks: its window, else the ring.
func (b *mergedBack) held(panes []*pane, p int) *ring {
	if b.windowed(p) {
		return b.far[p]
	}
	return panes[p].ring
}

// windowed reports whether the merged view walks a window of pane p.
func (b *mergedBack) windowed(p int) bool { return p < len(b.far) && b.far[p] != nil }

// reading reports whether a read is under way.
func (b *mergedBack) reading() bool {
	for _, r := range b.busy {
		if r {
			return true
		}
	}
	return false
}

// pending reports whether the view waits for reads to move.
func (b *mergedBack) pending() bool { return b.top || b.reveal || b.move != 0 }

// stop forgets what the view waited for: the user moved.
func (b *mergedBack) stop() {
	b.move, b.top, b.reveal, b.err, b.filled, b.rounds = 0, false, false, nil, -1, 0
}

// redirect forgets what the view waited for and drops the reads under way: the view
// is sent elsewhere.
func (b *mergedBack) redirect() {
	b.stop()
	b.gen++
}

// growth is where lines read back for the merged view go.
type growth int

const (
	growUp   growth = iota // before the lines held: a window starts or grows up
	growDown               // after the last line of a window
	growNew                // a new window (g, a match)
)

// mergedMsg carries lines read back for the merged view: the entries of seq [base,
// base+len(entries)) of pane p.
type mergedMsg struct {
	common.ViewID
	p, epoch, gen int
	how           growth
	base          int64
	entries       []entry
	err           error
}

// scanFunc scans a replica's logs from the first line, calling fn with each line as
// the wall numbers it until fn returns false (see scanLogs).
type scanFunc func(fn func(seq int64, l *sched.Line, div bool) bool) error

// mergedCmd marks pane pi busy and returns the command that reads its lines back for
// the merged view with read, off the UI loop.
func (m *Model) mergedCmd(pi int, how growth, read func(scan scanFunc) (int64, []entry, error)) tea.Cmd {
	m.mb.busy[pi] = true
	p := m.panes[pi]
	id, b, parent, h, epoch, gen := m.ID(), m.Ctx.Backend, m.Ctx.Ctx, m.h, m.back.epoch, m.mb.gen
	role, k, filter := p.role, p.k, p.filter()
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, readTimeout)
		defer cancel()
		msg := mergedMsg{ViewID: id, p: pi, epoch: epoch, gen: gen, how: how}
		msg.base, msg.entries, msg.err = read(func(fn func(int64, *sched.Line, bool) bool) error {
			return scanLogs(ctx, b, h, role, k, filter, fn)
		})
		return msg
	}
}

// mergedRead reads the lines [from, to) of pane pi back for the merged view.
func (m *Model) mergedRead(pi int, how growth, from, to int64) tea.Cmd {
	if to <= from {
		return nil
	}
	return m.mergedCmd(pi, how, func(scan scanFunc) (int64, []entry, error) {
		var out []entry
		err := scan(func(seq int64, l *sched.Line, div bool) bool {
			if seq >= from {
				out = append(out, scanned(l, div))
			}
			return seq+1 < to
		})
		return from, out, err
	})
}

// mergedAround reads back, for the merged view, the last `before` lines of pane pi
// before key at and the first `after` lines from it: a window around a time.
func (m *Model) mergedAround(pi int, at key, before, after int) tea.Cmd {
	return m.mergedCmd(pi, growNew, func(scan scanFunc) (int64, []entry, error) {
		// The lines before at go round a buffer of `before`, their text sanitized
		// only for those kept.
		last := make([]entry, max(before, 1))
		var nb, base int64 // lines before at seen; the seq of the first kept
		var out []entry
		flush := func() {
			if out != nil {
				return
			}
			kept := min(nb, int64(before))
			out = make([]entry, 0, kept+int64(after))
			base = nb - kept
			for i := base; i < nb; i++ {
				out = append(out, cook(last[i%int64(len(last))]))
			}
		}
		na := 0
		err := scan(func(seq int64, l *sched.Line, div bool) bool {
			if (key{t: l.Time.UnixNano(), p: pi, seq: seq}).less(at) {
				if before > 0 {
					last[nb%int64(len(last))] = rawEntry(l, div)
				}
				nb++
				return true
			}
			flush()
			out = append(out, scanned(l, div))
			na++
			return na < after
		})
		flush()
		return base, out, err
	})
}

// mergedMove moves the merged view by n lines (< 0 up), reading the lines it lacks
// back from the logs; the move goes on as they land (mergedResume).
func (m *Model) mergedMove(n int) tea.Cmd {
	m.mb.stop()
	return m.moveOn(n)
}

// moveOn moves the merged view by n lines, and reads what it lacks for the rest.
func (m *Model) moveOn(n int) tea.Cmd {
	b := &m.mb
	b.move = 0
	// A window that reaches its ring grows from the ring at once: no read to wait for.
	for range 8 {
		k := m.walkerOf(m.mview)
		h, tw := m.geometryOf(m.mview)
		if n < 0 {
			n += k.up(-n, h, tw)
		} else {
			n -= k.down(n)
		}
		if n == 0 {
			return nil
		}
		var cmds []tea.Cmd
		grown := false
		if n < 0 {
			cmds = m.readUp(k)
		} else {
			cmds, grown = m.readDown(k)
		}
		if len(cmds) > 0 || b.reading() {
			b.move = n
			return tea.Batch(cmds...)
		}
		if !grown {
			return nil
		}
	}
	return nil
}

// readUp reads back, before what the merged view holds, the panes that bound its
// top: those with older lines on disk and fewer than mergedStep/2 lines held above the
// clip. Lines just before a ring go in front of it while it has room (as a pane's
// view does), else in the view's window.
func (m *Model) readUp(k *walker) []tea.Cmd {
	var cmds []tea.Cmd
	step := m.mergedStep()
	for _, p := range k.srcs {
		r := k.ring(p)
		if m.mb.busy[p] || r.first == 0 || r.len() == 0 || k.lo.at(p)-r.first >= step/2 {
			continue
		}
		if !m.mb.windowed(p) && m.canFetch(p) {
			m.mb.busy[p] = true
			cmds = append(cmds, m.fetch(p, true))
			continue
		}
		cmds = append(cmds, m.mergedRead(p, growUp, max(0, r.first-step), r.first))
	}
	return cmds
}

// readDown reads on, after the windows of the merged view, the panes that bound its
// bottom: from the logs up to the ring, from the ring itself after that (grown
// reports such a window grown at once).
func (m *Model) readDown(k *walker) (cmds []tea.Cmd, grown bool) {
	step := m.mergedStep()
	for _, p := range k.srcs {
		w := m.mb.far[p]
		if w == nil || m.mb.busy[p] || w.n-k.hi.at(p) >= step/2 {
			continue
		}
		rg := m.panes[p].ring
		if w.n >= rg.first {
			if es := rg.slice(w.n, min(rg.n, w.n+step)); len(es) > 0 {
				grown = m.put(p, growDown, w.n, es) || grown
			} else {
				m.settle(p)
			}
			continue
		}
		cmds = append(cmds, m.mergedRead(p, growDown, w.n, min(rg.first, w.n+step)))
	}
	return cmds, grown
}

// put puts lines of pane p read back (seq base on) in the merged view's window, and
// reports whether they fit where they were read for. A window keeps about
// mergedLines lines: growing one way, it drops lines at the other end, never those
// on screen.
func (m *Model) put(p int, how growth, base int64, es []entry) bool {
	cur := m.mb.held(m.panes, p)
	limit, step := m.mergedLines(), m.mergedStep()
	anchor := m.mview.anchor[p]
	end := base + int64(len(es))
	var w *ring
	switch how {
	case growUp:
		if end != cur.first {
			return false
		}
		keep := min(cur.n, base+2*limit, max(base+limit, anchor+step/2))
		w = newWindow(base, es, cur.slice(cur.first, keep))
	case growDown:
		if !m.mb.windowed(p) || base != cur.n {
			return false
		}
		h, _ := m.geometryOf(m.mview)
		from := min(max(cur.first, end-2*limit, min(end-limit, anchor-int64(h)-step/2)), cur.n)
		w = newWindow(from, cur.slice(from, cur.n), es)
	default:
		w = newWindow(base, es)
	}
	m.mb.far[p] = w
	m.settle(p)
	return true
}

// settle drops the merged view's window of pane p once the ring holds its lines: it
// starts in the ring, or it reaches the ring and the ring has room for the lines
// before it.
func (m *Model) settle(p int) {
	w, rg := m.mb.far[p], m.panes[p].ring
	if w == nil || w.n < rg.first {
		return
	}
	if w.first >= rg.first {
		m.mb.far[p] = nil
		return
	}
	if rg.first-w.first <= int64(rg.limit)-rg.back {
		rg.prepend(w.slice(w.first, rg.first))
		m.mb.far[p] = nil
	}
}

// mergedLoaded takes lines read back for the merged view, and goes on with what it
// waits for.
func (m *Model) mergedLoaded(msg mergedMsg) tea.Cmd {
	if msg.p >= len(m.panes) || msg.epoch != m.back.epoch {
		return nil
	}
	m.mb.busy[msg.p] = false
	if m.mview.follow || msg.gen != m.mb.gen {
		return m.mergedResume()
	}
	if msg.err != nil || len(msg.entries) == 0 {
		// A read that failed or found nothing ends the wait: no read loops.
		m.mb.stop()
		m.mb.err = msg.err
		return nil
	}
	m.put(msg.p, msg.how, msg.base, msg.entries)
	return m.mergedResume()
}

// mergedFetched goes on with what the merged view waits for once lines are read back
// in front of a ring.
func (m *Model) mergedFetched(msg fetchedMsg) tea.Cmd {
	if msg.epoch != m.back.epoch {
		return nil
	}
	if m.mview.follow || msg.gen != m.mb.gen {
		return m.mergedResume()
	}
	if msg.err != nil || len(msg.lines) <= msg.skip {
		m.mb.stop()
		m.mb.err = msg.err
		return nil
	}
	return m.mergedResume()
}

// mergedResume goes on with what the merged view waits for: the first lines, a line
// to show, or a move, reading more when what landed is not enough.
func (m *Model) mergedResume() tea.Cmd {
	b := &m.mb
	switch {
	case b.top:
		if cmds := m.topReads(); len(cmds) > 0 || b.reading() {
			return tea.Batch(cmds...)
		}
		b.top = false
		h, tw := m.geometryOf(m.mview)
		m.walkerOf(m.mview).top(h, tw)
	case b.reveal:
		if cmds := m.revealReads(b.at); len(cmds) > 0 || b.reading() {
			return tea.Batch(cmds...)
		}
		b.reveal = false
		k := m.walkerOf(m.mview)
		h, tw := m.geometryOf(m.mview)
		if p := b.at.p; p < len(m.panes) && b.at.seq >= k.lo.at(p) && b.at.seq < k.hi.at(p) {
			k.reveal(ref{p, b.at.seq}, h, tw)
		}
	case b.move != 0:
		if b.rounds++; b.rounds > maxRounds {
			b.move = 0
			return nil
		}
		return m.moveOn(b.move)
	}
	return nil
}

// mergedTop shows the first lines of the logs in the merged view: at once when every
// visible pane holds its first line, else once they are read back.
func (m *Model) mergedTop() tea.Cmd {
	m.mview.follow = false
	m.mb.redirect()
	m.mb.top = true
	return m.mergedResume()
}

// topReads reads the first lines of the visible panes that do not hold them.
func (m *Model) topReads() []tea.Cmd {
	var cmds []tea.Cmd
	for _, p := range m.visible() {
		if m.mb.busy[p] || m.mb.held(m.panes, p).first == 0 {
			continue
		}
		rg := m.panes[p].ring
		if rg.first == 0 {
			m.mb.far[p] = nil
			continue
		}
		cmds = append(cmds, m.mergedRead(p, growNew, 0, min(rg.first, m.mergedLines())))
	}
	return cmds
}

// mergedShow shows line at (a match) in the merged view, reading back the lines of
// its time of every visible pane that does not hold them.
func (m *Model) mergedShow(at key) tea.Cmd {
	m.mview.follow = false
	m.mb.redirect()
	m.mb.reveal, m.mb.at = true, at
	return m.mergedResume()
}

// revealReads reads back, around key at, the visible panes that do not hold the
// lines of its time.
func (m *Model) revealReads(at key) []tea.Cmd {
	var cmds []tea.Cmd
	for _, p := range m.visible() {
		if m.mb.busy[p] || m.covers(p, at, m.mb.held(m.panes, p), m.mb.windowed(p)) {
			continue
		}
		if m.covers(p, at, m.panes[p].ring, false) {
			m.mb.far[p] = nil
			continue
		}
		half := int(m.mergedLines() / 2)
		cmds = append(cmds, m.mergedAround(p, at, half, half))
	}
	return cmds
}

// covers reports whether r, lines of pane p (a window when windowed), holds the lines
// of p about key at: none of them before it or (for a window) after it is missing.
func (m *Model) covers(p int, at key, r *ring, windowed bool) bool {
	if r.len() == 0 {
		return r.first == 0 && !windowed
	}
	if r.first > 0 && at.less(key{t: r.at(r.first).time, p: p, seq: r.first}) {
		return false
	}
	return !windowed || !(key{t: r.at(r.n - 1).time, p: p, seq: r.n - 1}).less(at)
}

// mergedFill reads back the lines a paused merged view lacks to fill its rows (a
// pane shown again whose ring starts later, a restored position): its top is where
// the clip stops it. With nothing more on disk, the lines below come up instead. A
// view filtered (only matches, one stream) may rightly show few lines: it reads on
// the user's moves only.
func (m *Model) mergedFill() tea.Cmd {
	if len(m.mb.far) != len(m.panes) || m.mview.follow || m.mview.selecting || m.mb.reading() || m.mb.pending() ||
		m.find.onlyMatches() || m.mview.streams != sched.Combined {
		return nil
	}
	k := m.walkerOf(m.mview)
	h, tw := m.geometryOf(m.mview)
	lines, skip, more := k.window(h, tw)
	used := -skip
	for _, l := range lines {
		used += k.rows(l, tw)
	}
	if more || used >= h {
		return nil
	}
	var mark int64
	for _, p := range k.srcs {
		mark += k.ring(p).first
	}
	if mark == 0 || mark == m.mb.filled {
		k.down(h - used)
		return nil
	}
	m.mb.filled = mark
	return tea.Batch(m.readUp(k)...)
}

// mergedOlder is how many lines of the visible panes are before what the merged
// view holds: on disk only.
func (m *Model) mergedOlder() int64 {
	var n int64
	for _, p := range m.visible() {
		n += m.mb.held(m.panes, p).first
	}
	return n
}
