package wall

import (
	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/engine/sched"
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
}

func (w *Model) walker(s *scroller, srcs []int) *walker {
	if s.follow {
		for _, p := range srcs {
			s.anchor[p] = w.panes[p].shown().n
		}
	}
	for _, p := range srcs {
		r := w.panes[p].shown()
		// Only raised: a restored anchor beyond the lines read so far holds until they
		// come.
		s.anchor[p] = max(s.anchor[p], r.first)
	}
	return &walker{w: w, s: s, srcs: srcs}
}

func (k *walker) keyOf(p int, seq int64) key {
	return key{t: k.w.panes[p].shown().at(seq).time, p: p, seq: seq}
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
	pn, ms := k.w.panes[p].shown(), k.w.find.matchesOf(p)
	only, c := k.w.find.onlyMatches(), int64(k.w.find.context())
	for s = min(s, pn.n) - 1; s >= pn.first; s-- {
		if only {
			i := upperBound(ms, s+c)
			if i == 0 {
				return -1
			}
			if m := ms[i-1]; m+c < s {
				s = m + c
			}
			if s < pn.first {
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
	pn, ms := k.w.panes[p].shown(), k.w.find.matchesOf(p)
	only, c := k.w.find.onlyMatches(), int64(k.w.find.context())
	s = max(s, pn.first)
	for ; s < pn.n; s++ {
		if only {
			i := lowerBound(ms, s-c)
			if i == len(ms) {
				return -1
			}
			if m := ms[i]; m-c > s {
				s = m - c
			}
			if s >= pn.n {
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
	e := k.w.panes[r.p].shown().at(r.seq)
	if e.divider() {
		return 1
	}
	w := ansi.StringWidth(e.text)
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
		k.s.anchor[p] = k.w.panes[p].shown().first
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
		rg := k.w.panes[p].shown()
		// The first seq of p whose key is after rk.
		t := rk.t
		lo := rg.after(t-1, rg.first, rg.n) // first with time >= t
		for lo < rg.n && rg.at(lo).time == t && p < r.p {
			lo++
		}
		a[p] = lo
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
		if pn := k.w.panes[p]; pn.far == nil {
			n += max(0, pn.ring.n-k.s.anchor[p])
		} else {
			n += max(0, pn.ring.n-pn.far.n) + max(0, pn.far.n-k.s.anchor[p])
		}
	}
	return n
}
