package wall

import (
	"slices"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/widget"
)

// scroller is one scrollable sequence of lines over one or more panes: a pane's own,
// or the merged view of the visible panes. Its position is an anchor per pane: the seq
// just after the last line drawn of that pane, so that the lines below the bottom row
// are those at or after the anchors.
type scroller struct {
	follow  bool
	anchor  []int64 // by pane index
	wrap    bool
	stamps  bool
	streams sched.Stream
	// Line-wise selection: mark and cursor, both lines of this scroller.
	selecting    bool
	mark, cursor ref
	// rows are the rows this view drew of its lines in its last frame.
	rows rowCache
}

// showAction answers the actions on how lines are shown: wrapping, timestamps (every
// view's, or the current one's), the streams shown, and the end-of-app summary.
func (m *Model) showAction(action common.ActionName) (tea.Cmd, bool) {
	s, _ := m.current()
	switch action {
	case ActWrap:
		s.wrap = !s.wrap
	case ActTimestamps:
		m.toggleStamps()
	case ActPaneStamps:
		s.stamps = !s.stamps
	case ActStreams:
		s.streams = nextStreams(s.streams)
	case ActSummary:
		m.summary = !m.summary
	default:
		return nil, false
	}
	return nil, true
}

// toggleStamps turns timestamps on or off in every pane and the merged view: off
// when any shows them, so that one key brings every view to the same.
func (m *Model) toggleStamps() {
	on := !m.mview.stamps
	for _, p := range m.panes {
		on = on && !p.view.stamps
	}
	m.mview.stamps = on
	for _, p := range m.panes {
		p.view.stamps = on
	}
}

// nextStreams is the stream filter after s: both, then stdout, then stderr.
func nextStreams(s sched.Stream) sched.Stream {
	switch s {
	case sched.Stdout:
		return sched.Stderr
	case sched.Stderr:
		return sched.Combined
	}
	return sched.Stdout
}

// ref names one line: a pane index and a seq.
type ref struct {
	p   int
	seq int64
}

// key orders lines across panes: by time, then pane, then seq.
type key struct {
	t   int64
	p   int
	seq int64
}

func (a key) less(b key) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	if a.p != b.p {
		return a.p < b.p
	}
	return a.seq < b.seq
}

func newScroller(n int) *scroller {
	return &scroller{follow: true, anchor: make([]int64, n), streams: sched.Combined}
}

// walker walks the lines of a scroller over a set of panes, applying the stream
// filter and, when only matches are shown, the search filter with its context.
type walker struct {
	w    *Model
	s    *scroller
	srcs []int
	// lo and hi bound, by pane, the seqs the walk yields: [lo, hi). For a pane's own
	// view they are what it holds; for the merged view, the lines whose place in time
	// order is known (see clip).
	lo, hi paneSeqs
}

// paneSeqs is a seq for each pane of [off, off+len(v)), 0 for the others: a walker's
// bounds, as many as the panes it walks, not one for each pane of the wall (at 1,024
// panes, the walkers of a frame's panes were 30 MB of garbage a second).
type paneSeqs struct {
	off int
	v   []int64
}

// newPaneSeqs returns the seqs of panes srcs, all 0.
func newPaneSeqs(srcs []int) paneSeqs {
	if len(srcs) == 0 {
		return paneSeqs{}
	}
	lo, hi := slices.Min(srcs), slices.Max(srcs)
	return paneSeqs{off: lo, v: make([]int64, hi-lo+1)}
}

func (s paneSeqs) at(p int) int64 {
	if i := p - s.off; i >= 0 && i < len(s.v) {
		return s.v[i]
	}
	return 0
}

// set sets the seq of pane p, one of the panes the seqs were made for.
func (s paneSeqs) set(p int, seq int64) { s.v[p-s.off] = seq }

func (w *Model) walker(s *scroller, srcs []int) *walker {
	k := &walker{w: w, s: s, srcs: srcs, lo: newPaneSeqs(srcs), hi: newPaneSeqs(srcs)}
	for _, p := range srcs {
		r := k.ring(p)
		k.lo.set(p, r.first)
		k.hi.set(p, r.n)
	}
	if s == w.mview {
		k.clip()
	}
	if s.follow {
		for _, p := range srcs {
			s.anchor[p] = k.hi.at(p)
		}
	}
	for _, p := range srcs {
		// Only raised: a restored anchor beyond the lines read so far holds until they
		// come.
		s.anchor[p] = max(s.anchor[p], k.lo.at(p))
	}
	return k
}

// ring is what the walk reads of pane p: for the merged view its window read back
// (mergedBack.far), else the ring; for a pane's own view its window (pane.far), else
// the ring.
func (k *walker) ring(p int) *ring {
	if k.s == k.w.mview {
		return k.w.mb.held(k.w.panes, p)
	}
	return k.w.panes[p].shown()
}

// clip bounds the merged walk to the lines whose place among the other panes' is
// known. A pane whose older lines are on disk only could have lines anywhere before
// its first held one: the walk starts at the latest of the panes' first held lines
// (lo). A window read back that stops before the lines after it could miss lines
// after its last: the walk stops at the earliest of the windows' last lines (hi).
// Between the two, every pane's lines are held, so the merge shows them all, in
// time order, without a gap.
func (k *walker) clip() {
	var lo, hi key
	haveLo, haveHi := false, false
	for _, p := range k.srcs {
		r := k.ring(p)
		if r.len() == 0 {
			continue
		}
		if r.first > 0 {
			if kk := k.keyOf(p, r.first); !haveLo || lo.less(kk) {
				lo, haveLo = kk, true
			}
		}
		if k.w.mb.windowed(p) {
			if kk := k.keyOf(p, r.n-1); !haveHi || kk.less(hi) {
				hi, haveHi = kk, true
			}
		}
	}
	for _, p := range k.srcs {
		if haveLo {
			k.lo.set(p, k.from(p, lo, false))
		}
		if haveHi {
			k.hi.set(p, k.from(p, hi, true))
		}
		k.hi.set(p, max(k.hi.at(p), k.lo.at(p)))
	}
}

// from returns the first seq of pane p held whose key is at or after kk (after it,
// when strict).
func (k *walker) from(p int, kk key, strict bool) int64 {
	r := k.ring(p)
	switch {
	case p == kk.p && strict:
		return min(max(kk.seq+1, r.first), r.n)
	case p == kk.p:
		return min(max(kk.seq, r.first), r.n)
	case p < kk.p:
		return r.after(kk.t, r.first, r.n) // the first with time > t
	}
	return r.after(kk.t-1, r.first, r.n) // the first with time >= t
}

func (k *walker) keyOf(p int, seq int64) key {
	return key{t: k.ring(p).at(seq).time, p: p, seq: seq}
}

// streamOK reports whether the entry passes the stream filter.
func (k *walker) streamOK(e *entry) bool {
	switch {
	case e.divider():
		return !k.w.find.onlyMatches()
	case k.s.streams == sched.Stdout:
		return !e.stderr()
	case k.s.streams == sched.Stderr:
		return e.stderr()
	}
	return true
}

// prev returns the last visible seq of pane p before s, or -1.
func (k *walker) prev(p int, s int64) int64 {
	pn, ms := k.ring(p), k.w.find.matchesOf(p)
	lo, hi := k.lo.at(p), k.hi.at(p)
	only, c := k.w.find.onlyMatches(), int64(k.w.find.context())
	for s = min(s, hi) - 1; s >= lo; s-- {
		if only {
			i := upperBound(ms, s+c)
			if i == 0 {
				return -1
			}
			if m := ms[i-1]; m+c < s {
				s = m + c
			}
			if s < lo {
				return -1
			}
		}
		if k.streamOK(pn.at(s)) {
			return s
		}
	}
	return -1
}

// next returns the first visible seq of pane p at or after s, or -1.
func (k *walker) next(p int, s int64) int64 {
	pn, ms := k.ring(p), k.w.find.matchesOf(p)
	lo, hi := k.lo.at(p), k.hi.at(p)
	only, c := k.w.find.onlyMatches(), int64(k.w.find.context())
	s = max(s, lo)
	for ; s < hi; s++ {
		if only {
			i := lowerBound(ms, s-c)
			if i == len(ms) {
				return -1
			}
			if m := ms[i]; m-c > s {
				s = m - c
			}
			if s >= hi {
				return -1
			}
		}
		if k.streamOK(pn.at(s)) {
			return s
		}
	}
	return -1
}

// backward yields the visible lines before the anchors, newest first, until yield
// returns false. It does not move the anchors.
func (k *walker) backward(from []int64, yield func(ref) bool) { k.walk(from, false, yield) }

// forward yields the visible lines at or after from, oldest first, until yield
// returns false.
func (k *walker) forward(from []int64, yield func(ref) bool) { k.walk(from, true, yield) }

// walk merges the sources in time order (forward) or in reverse from the anchors.
func (k *walker) walk(from []int64, forward bool, yield func(ref) bool) {
	cand := make([]int64, len(k.srcs))
	for i, p := range k.srcs {
		if forward {
			cand[i] = k.next(p, from[p])
		} else {
			cand[i] = k.prev(p, from[p])
		}
	}
	for {
		best := -1
		var bk key
		for i, p := range k.srcs {
			if cand[i] < 0 {
				continue
			}
			kk := k.keyOf(p, cand[i])
			if best < 0 || forward && kk.less(bk) || !forward && bk.less(kk) {
				best, bk = i, kk
			}
		}
		if best < 0 {
			return
		}
		p := k.srcs[best]
		if !yield(ref{p, cand[best]}) {
			return
		}
		if forward {
			cand[best] = k.next(p, cand[best]+1)
		} else {
			cand[best] = k.prev(p, cand[best])
		}
	}
}

// rows is how many screen rows line r takes at text width tw.
func (k *walker) rows(r ref, tw int) int {
	if !k.s.wrap || tw <= 0 {
		return 1
	}
	e := k.ring(r.p).at(r.seq)
	if e.divider() {
		return 1
	}
	w := widget.Width(e.text)
	return max(1, (w+tw-1)/tw)
}

// window returns the lines that fill height rows above the anchors, oldest first;
// skip is how many rows of the first line are above the top; more reports whether
// lines are left above.
func (k *walker) window(height, tw int) (lines []ref, skip int, more bool) {
	used := 0
	k.backward(k.s.anchor, func(r ref) bool {
		if used >= height {
			more = true
			return false
		}
		lines = append(lines, r)
		used += k.rows(r, tw)
		return true
	})
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
	}
	return lines, max(0, used-height), more
}

// up moves the anchors back by up to n lines, as long as the window stays full.
func (k *walker) up(n, height, tw int) int {
	lines, _, more := k.window(height, tw)
	if !more || len(lines) == 0 || n <= 0 {
		return 0
	}
	// Count the lines available above the window, up to n.
	top := k.anchorsAt(lines[0])
	avail := 0
	k.backward(top, func(ref) bool { avail++; return avail < n })
	moved := 0
	k.backward(k.s.anchor, func(r ref) bool {
		if moved == avail {
			return false
		}
		k.s.anchor[r.p] = r.seq
		moved++
		return moved < avail
	})
	return moved
}

// down moves the anchors forward by up to n lines; it reports how many.
func (k *walker) down(n int) int {
	moved := 0
	if n <= 0 {
		return 0
	}
	k.forward(k.s.anchor, func(r ref) bool {
		k.s.anchor[r.p] = r.seq + 1
		moved++
		return moved < n
	})
	return moved
}

// top puts the first lines at the top of the window.
func (k *walker) top(height, tw int) {
	for _, p := range k.srcs {
		k.s.anchor[p] = k.lo.at(p)
	}
	used := 0
	k.forward(k.s.anchor, func(r ref) bool {
		used += k.rows(r, tw)
		if used > height {
			return false
		}
		k.s.anchor[r.p] = r.seq + 1
		return true
	})
}

// anchorsAt returns the anchors that put line r at the bottom of a window: every
// pane's lines up to r's key are above.
func (k *walker) anchorsAt(r ref) []int64 {
	a := make([]int64, len(k.s.anchor))
	copy(a, k.s.anchor)
	rk := k.keyOf(r.p, r.seq)
	for _, p := range k.srcs {
		if p == r.p {
			a[p] = r.seq
			continue
		}
		// The first seq of p whose key is after rk.
		a[p] = min(max(k.from(p, rk, true), k.lo.at(p)), k.hi.at(p))
	}
	return a
}

// reveal moves the anchors so that line r is shown, about in the middle of height
// rows.
func (k *walker) reveal(r ref, height, tw int) {
	k.s.follow = false
	copy(k.s.anchor, k.anchorsAt(r))
	k.s.anchor[r.p] = r.seq + 1
	k.down(max(0, height/2-1))
}

// count is the number of lines below the anchors (unfiltered): the "+N new" badge.
func (k *walker) count() int64 {
	var n int64
	for _, p := range k.srcs {
		if pn, r := k.w.panes[p], k.ring(p); r == pn.ring {
			n += max(0, pn.ring.n-k.s.anchor[p])
		} else {
			n += max(0, pn.ring.n-r.n) + max(0, r.n-k.s.anchor[p])
		}
	}
	return n
}
