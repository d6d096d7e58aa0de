package wall

import (
	"strings"
	"time"
	"unsafe"

	"github.com/wick-dev/wick/engine/sched"
)

// DefaultRingLines is how many lines each replica's pane keeps in memory at most unless
// the user sets another size; older lines are read back from the logs on demand.
const DefaultRingLines = 100_000

// DefaultHeldLines is how many lines the wall's panes keep in memory in all unless the
// wall is told another budget (Options.HeldLines): each of n panes keeps
// min(RingLines, HeldLines/n) lines, and at least minRingLines. At ~100-150 bytes a
// line (its entry and its text, in the ring's arenas) that is 20-30 MB however
// many replicas there are and however long the app runs: a pane of a replica at 20
// lines/s reaches its share within a minute at 1,024 replicas, where with 100k lines
// a pane the wall of 1,024 replicas grew by ~60 MB a minute for over an hour. At
// 256k (#37 round 10) the wall of 1,024 replicas held 139-161 MB over 10 minutes,
// its rings 37 MB of it, against a bound of 150 MB.
const DefaultHeldLines = 192 << 10

// chunkLines is the most a ring's unit of allocation and eviction holds (a ring of
// fewer lines has smaller chunks: ringChunk). Chunks are never written below their
// fill mark once written, so a search running off the UI loop can read a snapshot of
// them while the loop appends; dropping a whole chunk at a time keeps eviction O(1).
// 4096 entries are 128 KB.
const chunkLines = 4096

// firstChunkLines is the size a ring's first chunk starts at; it grows by half as
// lines come, up to the ring's chunk size (a grown chunk is a copy: a snapshot keeps
// the one it took). A wall of 1,024 replicas that logged 600 lines each holds 23 MB of
// chunks, not 128 MB of mostly empty ones for the garbage collector to scan (nor 32
// MB, when they doubled).
const firstChunkLines = 64

// grownChunk is the size a ring's first chunk of n entries grows to, in a ring of
// chunks of cl entries.
func grownChunk(n int, cl int64) int { return int(min(int64(n+n/2), cl)) }

// ringChunk is the chunk size of a ring that keeps limit lines: chunkLines for a ring
// of at least as many, else a power of two about a quarter of them, at least
// firstChunkLines. A ring holds up to a chunk more than its limit (eviction drops a
// whole chunk), so a ring of 192 lines, a pane's share of the wall's budget at 1,024
// replicas, holds at most 256 rather than 4,288 (4.4 million lines over 1,024 panes).
func ringChunk(limit int) int64 {
	if limit >= chunkLines {
		return chunkLines
	}
	cl := int64(firstChunkLines)
	for cl < int64(limit)/4 {
		cl *= 2
	}
	return cl
}

// Entry flags.
const (
	flagStderr  = 1 << iota // the line is from stderr
	flagPartial             // the line had no newline
	flagDivider             // not a line: the start of attempt Attempt
	flagLong                // the line is longer than the text kept (maxLineBytes)
)

// entry is one line held by a ring: 32 bytes besides its text, which shares the
// iterator's read buffer until the ring copies it into its arena (ring.hold).
type entry struct {
	text    string
	time    int64 // unix nanoseconds
	attempt int32
	flags   uint32
}

func (e *entry) stderr() bool  { return e.flags&flagStderr != 0 }
func (e *entry) divider() bool { return e.flags&flagDivider != 0 }
func (e *entry) long() bool    { return e.flags&flagLong != 0 }

// The flags' upper bits hold a long line's full length in KiB (0: unknown), so that
// the wall can say how long it is without a field more per line.
const (
	sizeShift = 4
	maxSizeK  = 1<<(32-sizeShift) - 1
)

// setSize records a long line's full length, n bytes.
func (e *entry) setSize(n int64) {
	e.flags = e.flags&(1<<sizeShift-1) | uint32(min(max(n>>10, 1), maxSizeK))<<sizeShift
}

// size returns a long line's full length in bytes, rounded down to KiB (0: unknown).
func (e *entry) size() int64 { return int64(e.flags>>sizeShift) << 10 }

// when is the entry's time.
func (e *entry) when() time.Time { return time.Unix(0, e.time) }

// makeEntry is the entry of line l.
func makeEntry(l sched.Line) entry { return cook(rawEntry(&l, false)) }

// rawEntry is the entry of line l, or of the divider before it when div, with its
// text not sanitized yet (cook does it): for the lines a scan of the logs may drop,
// the most costly part of an entry is left until it is kept.
func rawEntry(l *sched.Line, div bool) entry {
	if div {
		return entry{time: l.Time.UnixNano(), attempt: int32(l.Attempt), flags: flagDivider}
	}
	e := entry{text: l.Text, time: l.Time.UnixNano(), attempt: int32(l.Attempt)}
	if l.Stream == sched.Stderr {
		e.flags |= flagStderr
	}
	if l.Partial {
		e.flags |= flagPartial
	}
	if len(l.Text) > maxLineBytes || l.Cut && !l.Pending {
		e.flags |= flagLong
		// A committed line too long for its iterator comes cut, with its length.
		e.setSize(max(l.Size, int64(len(l.Text))))
	}
	return e
}

// cook sanitizes the text of a raw entry.
func cook(e entry) entry {
	if !e.divider() {
		e.text = Sanitize(e.text)
	}
	return e
}

// chunk is a ring's chunk size of entries, or fewer in its first chunk while it grows.
type chunk []entry

// ring holds the last lines of one replica, addressed by sequence number: the n-th
// line the pane received (dividers included) has seq n-1 for as long as it is held.
// Lines read back from the logs are put in front of the oldest held ones.
type ring struct {
	chunks []chunk
	base   int64 // seq of chunks[0][0]
	first  int64 // seq of the oldest held entry
	n      int64 // seq of the next entry appended
	limit  int   // entries to keep (at least)
	// cl is the entries of a chunk (ringChunk: a power of two), shift its log2.
	cl    int64
	shift uint
	// back is how many entries before the live window were read back; eviction
	// leaves them alone until the pane follows again.
	back int64
	// arena is where push copies the texts, one after the other, arenaSize bytes a
	// piece (see hold).
	arena     []byte
	arenaSize int
}

// Arenas of texts: a line read from the logs is a substring of the block its reader
// read (up to 256 KB), and a ring that kept it kept the whole block alive. A wall of
// 1,024 replicas catching up held 128 MB of blocks for its 256k lines (~25 MB of
// text). Copied into arenas of a few KB, a ring holds its lines' bytes and at most an
// arena more, in a few objects rather than one a line for the garbage collector.
const (
	minArena = 4 << 10
	maxArena = 64 << 10
)

// detach copies the texts of lines into one buffer of their own. A line read is a
// substring of its iterator's block (16-256 KB): lines in flight for a UI that is
// behind pinned a block each chunk (44 MB at 1,024 replicas at 7 min of the soak,
// where the bytes in flight are bounded by maxInFlight); copied, they hold the
// bytes that room counts.
func detach(lines []sched.Line) {
	n := 0
	for i := range lines {
		n += len(lines[i].Text)
	}
	if n == 0 {
		return
	}
	buf := make([]byte, 0, n)
	for i := range lines {
		t := lines[i].Text
		if t == "" {
			continue
		}
		start := len(buf)
		buf = append(buf, t...)
		lines[i].Text = unsafe.String(&buf[start], len(t))
	}
}

// hold returns s copied into the ring's arena (a long line gets its own copy).
func (r *ring) hold(s string) string {
	if len(s) == 0 {
		return s
	}
	if len(s) > r.arenaSize/4 {
		return strings.Clone(s)
	}
	if len(r.arena)+len(s) > cap(r.arena) {
		r.arena = make([]byte, 0, r.arenaSize)
	}
	n := len(r.arena)
	r.arena = append(r.arena, s...)
	return unsafe.String(&r.arena[n], len(s))
}

// newRing returns a ring that keeps at least limit lines (at least minRingLines).
func newRing(limit int) *ring {
	limit = max(limit, minRingLines)
	cl := ringChunk(limit)
	shift := uint(0)
	for int64(1)<<shift < cl {
		shift++
	}
	return &ring{limit: limit, cl: cl, shift: shift, arenaSize: min(max(limit*16, minArena), maxArena)}
}

// minRingLines is the least a ring keeps: three screens of a zoomed pane of 60 rows
// (a ring of 192 lines evicts 64 at a time, so it holds 192-256).
const minRingLines = 192

// len is the number of entries held.
func (r *ring) len() int64 { return r.n - r.first }

// at returns the entry seq, which must be held.
func (r *ring) at(seq int64) *entry {
	i := seq - r.base
	return &r.chunks[i>>r.shift][i&(r.cl-1)]
}

// push appends e, its text copied into the ring's arena, and evicts the oldest chunk
// when the ring is over its limit.
func (r *ring) push(e entry) {
	i := r.n - r.base
	ci, off := int(i>>r.shift), int(i&(r.cl-1))
	if ci == len(r.chunks) {
		size := int(r.cl)
		if ci == 0 {
			size = int(min(firstChunkLines, r.cl))
		}
		r.chunks = append(r.chunks, make(chunk, size))
	}
	if c := r.chunks[ci]; off == len(c) {
		grown := make(chunk, grownChunk(len(c), r.cl))
		copy(grown, c)
		r.chunks[ci] = grown
	}
	// The bytes of the arena are never written again once a text holds them, so a
	// search reading a snapshot reads them safely.
	e.text = r.hold(e.text)
	r.chunks[ci][off] = e
	r.n++
	if r.n-r.base-r.back > int64(r.limit)+r.cl {
		r.chunks[0] = nil
		r.chunks = r.chunks[1:]
		r.base += r.cl
		r.first = max(r.first, r.base)
	}
}

// prepend puts es (oldest first), lines read back from the logs, before the oldest
// held entry.
func (r *ring) prepend(es []entry) {
	for i := len(es) - 1; i >= 0; i-- {
		if r.first == r.base {
			r.chunks = append([]chunk{make(chunk, r.cl)}, r.chunks...)
			r.base -= r.cl
		}
		r.first--
		*r.at(r.first) = es[i]
		r.back++
	}
}

// slice returns a copy of the entries [a, b), which must be held.
func (r *ring) slice(a, b int64) []entry {
	out := make([]entry, 0, max(0, b-a))
	for seq := a; seq < b; seq++ {
		out = append(out, *r.at(seq))
	}
	return out
}

// newWindow returns a ring of the entries of parts, one after the other, the first
// numbered first: a window of lines read back.
func newWindow(first int64, parts ...[]entry) *ring {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	w := newRing(n)
	w.base, w.first, w.n = first, first, first
	for _, p := range parts {
		for _, e := range p {
			w.push(e)
		}
	}
	return w
}

// forget drops the lines read back (when the pane follows again).
func (r *ring) forget() {
	if r.back == 0 {
		return
	}
	r.back = 0
	for len(r.chunks) > 1 && r.n-r.base-r.cl >= int64(r.limit) {
		r.chunks[0] = nil
		r.chunks = r.chunks[1:]
		r.base += r.cl
	}
	r.first = max(r.first, r.base)
}

// search returns the first seq in [lo, hi) whose time is after t, by binary search
// (a replica's lines are in time order).
func (r *ring) after(t int64, lo, hi int64) int64 {
	for lo < hi {
		mid := lo + (hi-lo)/2
		if r.at(mid).time <= t {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// snapshot is a read-only view of a ring's entries [first, n) at one moment, safe to
// read from another goroutine while the ring grows.
type snapshot struct {
	chunks      []chunk
	base        int64
	first, last int64
	cl          int64 // the ring's chunk size
	shift       uint
}

func (r *ring) snapshot(from int64) snapshot {
	return snapshot{chunks: append([]chunk(nil), r.chunks...), base: r.base, first: max(from, r.first), last: r.n, cl: r.cl, shift: r.shift}
}

func (s *snapshot) at(seq int64) *entry {
	i := seq - s.base
	return &s.chunks[i>>s.shift][i&(s.cl-1)]
}
