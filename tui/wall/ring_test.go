package wall

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/wick-dev/wick/engine/sched"
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

// TestRingOfAShare: a ring of a pane's share of the wall's budget (192 lines at 1,024
// replicas) keeps at least its limit and at most a small chunk more however many lines
// come, reads every held line back as pushed, and takes lines read back in front of
// them; a wall of 1,024 panes keeps 192 lines a pane, one of 8 its budget's eighth.
func TestRingOfAShare(t *testing.T) {
	r := newRing(192)
	if r.cl != 64 {
		t.Fatalf("a ring of 192 lines has chunks of %d entries, want 64", r.cl)
	}
	const n = 100_000
	for i := range n {
		r.push(entry{text: strconv.Itoa(i), time: int64(i)})
		if r.len() > 192+64 || i >= 192 && r.len() < 192 {
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
	for _, c := range []struct{ panes, ring, want int }{{1024, DefaultRingLines, 192}, {8, DefaultRingLines, DefaultHeldLines / 8}, {16, 4096, 4096}, {4096, DefaultRingLines, DefaultHeldLines / 4096}} {
		m := &Model{opts: Options{RingLines: c.ring, HeldLines: DefaultHeldLines}, panes: make([]*pane, c.panes)}
		if got := m.paneLines(); got != c.want {
			t.Errorf("%d panes, --ring %d: %d lines a pane, want %d", c.panes, c.ring, got, c.want)
		}
	}
}

// TestRingLetsTheBlockGo: a ring's lines are substrings of the block their reader
// read; the ring copies them, so that the block (256 KB, where the ring keeps a few
// hundred lines of it) is freed once the reader is done with it, and its lines still
// read as pushed.
func TestRingLetsTheBlockGo(t *testing.T) {
	r := newRing(minRingLines)
	freed := make(chan struct{})
	func() {
		block := make([]byte, 256<<10)
		for i := range block {
			block[i] = 'a' + byte(i%26)
		}
		runtime.SetFinalizer(&block[0], func(*byte) { close(freed) })
		text := unsafe.String(&block[0], len(block))
		for i := range 2 * minRingLines {
			r.push(entry{text: text[i*100 : i*100+90], time: int64(i)})
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for done := false; !done; {
		runtime.GC()
		select {
		case <-freed:
			done = true
		case <-time.After(10 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("the reader's block is still held after 10 s of collections")
			}
		}
	}
	for seq := r.first; seq < r.n; seq++ {
		want := make([]byte, 90)
		for j := range want {
			want[j] = 'a' + byte((int(seq)*100+j)%26)
		}
		if got := r.at(seq).text; got != string(want) {
			t.Fatalf("line %d reads %q, want %q", seq, got, want)
		}
	}
}

// TestMergedWindowsInTheBudget: the merged view's windows of every visible pane (each
// up to twice mergedLines while it grows) hold at most the wall's budget of lines
// together, up to 1,024 panes; a read is at most readBack lines and fits twice in a
// window.
func TestMergedWindowsInTheBudget(t *testing.T) {
	for _, n := range []int{1, 4, 16, 64, 256, 1024} {
		m := &Model{opts: Options{RingLines: DefaultRingLines, HeldLines: DefaultHeldLines}}
		for range n {
			m.panes = append(m.panes, &pane{})
		}
		step, lines := m.mergedStep(), m.mergedLines()
		if all := int64(n) * 2 * lines; all > DefaultHeldLines || step > readBack || 2*step > lines || lines > m.windowLines() {
			t.Errorf("%d panes: windows of %d lines (%d in all), reads of %d", n, lines, all, step)
		}
	}
}

// TestDetachLetsTheBlockGo: a chunk of lines in flight, detached, holds its texts
// in a buffer of its own: the block they were read from is freed, and they read the
// same.
func TestDetachLetsTheBlockGo(t *testing.T) {
	freed := make(chan struct{})
	var lines []sched.Line
	var want []string
	func() {
		block := make([]byte, 64<<10)
		for i := range block {
			block[i] = 'a' + byte(i%26)
		}
		runtime.SetFinalizer(&block[0], func(*byte) { close(freed) })
		text := unsafe.String(&block[0], len(block))
		for i := range 20 {
			lines = append(lines, sched.Line{Text: text[i*100 : i*100+90]})
			want = append(want, strings.Clone(text[i*100:i*100+90]))
		}
		lines = append(lines, sched.Line{}) // an empty line keeps no buffer
		want = append(want, "")
		detach(lines)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for done := false; !done; {
		runtime.GC()
		select {
		case <-freed:
			done = true
		case <-time.After(10 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("the block is still held after 10 s of collections")
			}
		}
	}
	for i, l := range lines {
		if l.Text != want[i] {
			t.Fatalf("line %d reads %q, want %q", i, l.Text, want[i])
		}
	}
}
