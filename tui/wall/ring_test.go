package wall

import (
	"strconv"
	"testing"
)

// TestRingGrowsItsFirstChunk: a ring's first chunk starts small and grows by half as
// lines come; every line held reads back as pushed, and a snapshot taken before a growth
// still reads its lines after it (the search reads one while the ring grows).
func TestRingGrowsItsFirstChunk(t *testing.T) {
	r := newRing(chunkLines)
	var snaps []snapshot
	const n = 3*chunkLines + 100
	for i := range n {
		r.push(entry{text: strconv.Itoa(i), time: int64(i)})
		if i == 10 || i == firstChunkLines || i == 1000 {
			snaps = append(snaps, r.snapshot(0))
		}
		if want := grownChunk(grownChunk(firstChunkLines, chunkLines), chunkLines); i == 99 && len(r.chunks[0]) != want {
			t.Fatalf("after 100 lines the first chunk holds %d entries, want %d", len(r.chunks[0]), want)
		}
	}
	if r.first != n-r.len() || r.len() < chunkLines {
		t.Fatalf("the ring holds [%d, %d), want at least its limit of %d lines", r.first, r.n, chunkLines)
	}
	for seq := r.first; seq < r.n; seq++ {
		if got := r.at(seq).text; got != strconv.FormatInt(seq, 10) {
			t.Fatalf("line %d reads %q", seq, got)
		}
	}
	for _, s := range snaps {
		for seq := s.first; seq < s.last; seq++ {
			if got := s.at(seq).text; got != strconv.FormatInt(seq, 10) {
				t.Fatalf("a snapshot of [%d, %d) reads %q at %d", s.first, s.last, got, seq)
			}
		}
	}
}

// TestRingOfAShare: a ring of a pane's share of the wall's budget (256 lines at 1,024
// replicas) keeps at least its limit and at most a small chunk more however many lines
// come, reads every held line back as pushed, and takes lines read back in front of
// them; a wall of 1,024 panes keeps 256 lines a pane, one of 8 its budget's eighth.
func TestRingOfAShare(t *testing.T) {
	r := newRing(256)
	if r.cl != 64 {
		t.Fatalf("a ring of 256 lines has chunks of %d entries, want 64", r.cl)
	}
	const n = 100_000
	for i := range n {
		r.push(entry{text: strconv.Itoa(i), time: int64(i)})
		if r.len() > 256+64 || i >= 256 && r.len() < 256 {
			t.Fatalf("after %d lines the ring holds %d", i+1, r.len())
		}
	}
	first := r.first
	r.prepend([]entry{{text: strconv.FormatInt(first-2, 10)}, {text: strconv.FormatInt(first-1, 10)}})
	for seq := r.first; seq < r.n; seq++ {
		if got := r.at(seq).text; got != strconv.FormatInt(seq, 10) {
			t.Fatalf("line %d reads %q", seq, got)
		}
	}
	s := r.snapshot(0)
	if got := s.at(n - 1).text; got != strconv.Itoa(n-1) {
		t.Fatalf("a snapshot reads %q at %d", got, n-1)
	}
	for _, c := range []struct{ panes, ring, want int }{{1024, DefaultRingLines, 256}, {8, DefaultRingLines, DefaultHeldLines / 8}, {16, 4096, 4096}, {4096, DefaultRingLines, 64}} {
		m := &Model{opts: Options{RingLines: c.ring, HeldLines: DefaultHeldLines}, panes: make([]*pane, c.panes)}
		if got := m.paneLines(); got != c.want {
			t.Errorf("%d panes, --ring %d: %d lines a pane, want %d", c.panes, c.ring, got, c.want)
		}
	}
}
