package logs

import "time"

// Heads is the order in which a merge of several sources takes their lines: a
// min-heap of the sources that have a line to give, by the time of that line (their
// head), of equal times the source given first (the lower index). Merge keeps its
// sources in one; a merge that takes runs of lines rather than lines (wick log's)
// keeps its own, so that the two take lines in the same order by one rule. Each
// change costs O(log n) for n sources, not a look at every source.
type Heads struct{ h []headOf }

// headOf is a source in the heap of heads, with its head line's time: the heap
// compares times without going through the sources (a cache miss each, at 1,024).
type headOf struct {
	t   time.Time
	src int32
}

// NewHeads returns an empty Heads with room for n sources.
func NewHeads(n int) Heads { return Heads{h: make([]headOf, 0, n)} }

// Len returns how many sources are in the heap.
func (hs *Heads) Len() int { return len(hs.h) }

// First returns the source whose head comes first. The heap must not be empty.
func (hs *Heads) First() int { return int(hs.h[0].src) }

// before reports whether head a comes before head b: the earlier time, or, of equal
// times, the source given first.
func before(a, b *headOf) bool {
	if a.t.Before(b.t) {
		return true
	}
	return !b.t.Before(a.t) && a.src < b.src
}

// Push adds source src, not in the heap, whose head line is of time t.
func (hs *Heads) Push(src int, t time.Time) {
	hs.h = append(hs.h, headOf{t: t, src: int32(src)})
	h := hs.h
	for j := len(h) - 1; j > 0; {
		p := (j - 1) / 2
		if !before(&h[j], &h[p]) {
			break
		}
		h[j], h[p] = h[p], h[j]
		j = p
	}
}

// Advance says that the first source's head is now a line of time t (it gave its
// head and has another).
func (hs *Heads) Advance(t time.Time) {
	hs.h[0].t = t
	hs.siftDown(0)
}

// Pop removes the first source (it gave its head and has no other now).
func (hs *Heads) Pop() {
	last := len(hs.h) - 1
	hs.h[0] = hs.h[last]
	hs.h = hs.h[:last]
	if last > 0 {
		hs.siftDown(0)
	}
}

// siftDown moves the head at j down the heap to its place.
func (hs *Heads) siftDown(j int) {
	h := hs.h
	for {
		c := 2*j + 1
		if c >= len(h) {
			return
		}
		if r := c + 1; r < len(h) && before(&h[r], &h[c]) {
			c = r
		}
		if !before(&h[c], &h[j]) {
			return
		}
		h[j], h[c] = h[c], h[j]
		j = c
	}
}
