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
		if want := grownChunk(grownChunk(firstChunkLines)); i == 99 && len(r.chunks[0]) != want {
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
