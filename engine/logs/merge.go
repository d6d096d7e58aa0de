package logs

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/wick-dev/wick/engine/sched"
)

// Readier is sched.Readier: Merge orders the lines of such iterators exactly;
// Iterator and Merged implement it.
type Readier = sched.Readier

const (
	// mergeBatch is how many ready lines a source hands over at once: per-line channel
	// sends would cost more than reading the lines.
	mergeBatch = 256
	// mergeLines and mergeMinBatch bound the batches of a merge of many sources
	// (see batchFor).
	mergeLines    = 64 << 10
	mergeMinBatch = 32
	// mergeText and mergeMinBlock bound the blocks the iterators of a merge of many
	// sources read at once (see blockFor).
	mergeText     = 16 << 20
	mergeMinBlock = 16 << 10
	// inexactWait is how long Merge waits for a line from a source that cannot say
	// whether it has one (it does not implement Readier) before emitting a later line
	// of another source. A line read by Docker or by a supervisor reaches its
	// iterator well within this, so order holds in practice; a source that is merely
	// quiet delays the others by this much at most.
	inexactWait = 25 * time.Millisecond
	// followGrace is how old a line must be before Merge delivers it ahead of a source
	// that said it had nothing ready. That source may already have a line read a
	// moment earlier that its iterator has not seen yet (the inotify event is on its
	// way); a few milliseconds cover that. Lines of the past are always older than
	// this, so only live following waits, and by this much at most.
	followGrace = 10 * time.Millisecond
	// mergeCredits is how many batches of a source may wait for the merge. A source
	// whose lines are all later than another's (a replica that started late) would
	// otherwise be read whole into memory while the other is emitted: 2 x 10M lines
	// took gigabytes. With credits, memory is bounded by the number of sources.
	mergeCredits = 2
	// readyWait bounds how long Ready waits for the pump of a source that implements
	// Readier to hand over its lines or say it has none. Such a source answers at
	// once (its Ready reads a file), so this only guards against one that does not:
	// Ready then says no line is ready rather than hang its caller.
	readyWait = time.Second
)

// Merged is the iterator Merge returns: the lines of several iterators in time order
// (ties keep the order of the sources). It ends when every source has ended; the first
// error of a source is returned by Next.
type Merged struct {
	single sched.LogIterator // the only source: no merging needed

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	its    []sched.LogIterator
	ch     chan mergeMsg
	free   sync.Pool
	batch  int // lines a source hands over at once (batchFor)
	srcs   []mergeSrc
	live   int
	err    error
	timer  *time.Timer

	// What pick needs, kept as the sources change rather than found by looking at
	// every source for every line: with 1,024 replicas that look cost 40x reading
	// them one by one.
	heads     Heads // the sources with lines queued, by head time (Heads)
	reading   int   // exact sources whose pump is reading: no line queued, not idle, not ended
	idleEmpty int   // exact sources with no line queued that said they have none ready, not ended
	// The inexact sources with no line queued, not ended, in the order their queues
	// emptied: a list through mergeSrc.prev/next (-1 ends it). A source joins it at
	// its tail when its queue empties, so the tail emptied last (its emptySince is
	// the latest): the wait for them all is the wait for it.
	waitHead, waitTail int32
}

type mergeSrc struct {
	credits chan struct{} // one per batch the pump may hand over
	// The source's lines waiting for the merge, a batch at a time as its pump handed
	// them over: q is what is left of the first, which arrived at qAt; more, the
	// batches after it. q is empty only when more is.
	q          []sched.Line
	qAt        time.Time    // with its monotonic reading: immune to wall-clock steps
	batch      []sched.Line // the whole of q's batch, to recycle
	more       []batchIn
	exact      bool // implements Readier
	idle       bool // said it has no line ready
	done       bool
	emptySince time.Time // when q last emptied (inexact sources only)
	// The neighbours of this source in the Merged's list of waited-for inexact
	// sources, while it is in it.
	prev, next int32
	waiting    bool
}

// batchIn is a batch of lines of a source and when it reached the Merged.
type batchIn struct {
	lines []sched.Line
	at    time.Time
}

type mergeMsg struct {
	src   int
	lines []sched.Line
	idle  bool
	err   error // io.EOF when the source ended
}

// Merge returns an iterator over the lines of its in time order. It takes ownership:
// closing the Merged closes every source. Sources that implement Readier (those of
// this package) are merged exactly: a line is delivered only when every other source
// has a later line ready, has none ready, or has ended. When following, lines are
// thus delivered as soon as they are read. Other sources (the Docker scheduler's) are
// waited for at most inexactWait.
func Merge(its ...sched.LogIterator) *Merged {
	if len(its) == 1 {
		return &Merged{single: its[0]}
	}
	m := newMerged(its)
	if n := blockFor(len(its)); n < blockSize {
		for _, it := range its {
			if l, ok := it.(blockLimiter); ok {
				l.limitBlock(n)
			}
		}
	}
	for i, it := range its {
		m.wg.Add(1)
		go m.pump(i, it)
	}
	return m
}

// newMerged returns the Merged of its, its pumps not started.
func newMerged(its []sched.LogIterator) *Merged {
	ctx, cancel := context.WithCancel(context.Background())
	m := &Merged{
		ctx:      ctx,
		cancel:   cancel,
		its:      its,
		ch:       make(chan mergeMsg, len(its)),
		srcs:     make([]mergeSrc, len(its)),
		live:     len(its),
		heads:    NewHeads(len(its)),
		waitHead: -1,
		waitTail: -1,
	}
	m.batch = batchFor(len(its))
	m.free.New = func() any { s := make([]sched.Line, 0, m.batch); return &s }
	now := time.Now()
	for i, it := range its {
		_, exact := it.(Readier)
		m.srcs[i] = mergeSrc{exact: exact, emptySince: now, credits: make(chan struct{}, mergeCredits), prev: -1, next: -1,
			more: make([]batchIn, 0, mergeCredits)}
		m.enter(i)
		for range mergeCredits {
			m.srcs[i].credits <- struct{}{}
		}
	}
	return m
}

// batchFor returns how many lines each of n sources hands over at once: mergeBatch,
// less past mergeLines/mergeBatch sources, so that what the pumps hold stays about
// mergeLines lines (3 batches a source: its credits' and the one being filled). 1,024
// sources with batches of 256 held 88 MB of lines; smaller batches cost no time
// measurably there (BenchmarkMergeMany), as the lines of so many sources miss the
// cache either way.
func batchFor(n int) int {
	return min(mergeBatch, max(mergeMinBatch, mergeLines/n))
}

// blockFor returns how much of its log each of n sources that are this package's
// iterators reads at once: blockSize, less past mergeText/blockSize sources, so that
// the blocks whose lines wait to be merged stay about mergeText (each source holds
// its block while its lines wait).
func blockFor(n int) int64 {
	return min(blockSize, max(mergeMinBlock, mergeText/int64(n)))
}

// OneOf bounds the blocks the iterator reads at once for a reader of one of n
// replicas read side by side, each holding its block while its lines wait (the wall:
// 1,024 readers catching up held 160 MB of blocks of 256 KB): sideBlock(n). It must
// be asked before the first Next.
func (it *Iterator) OneOf(n int) {
	if b := sideBlock(max(1, n)); b < blockSize {
		it.limitBlock(b)
	}
}

// sideText and sideMinBlock bound the blocks of n iterators read side by side, each
// by a goroutine of its own that hands its lines on at once (the wall), as mergeText
// and mergeMinBlock bound a merge's, lower: a merge looks ahead in every source, a
// reader only at its next chunk of lines. At 1,024 replicas, blocks of 4 KB (~50
// lines): 4 MB held, against 16 MB (and 33 MB, before a run longer than a block was
// read a block at a time) held by the wall catching up a starved app's backlog.
const (
	sideText     = 4 << 20
	sideMinBlock = 4 << 10
)

// sideBlock returns how much of its log each of n iterators read side by side reads
// at once: blockSize, less past sideText/blockSize of them.
func sideBlock(n int) int64 {
	return min(blockSize, max(sideMinBlock, sideText/int64(n)))
}

// blockLimiter is implemented by the sources whose blocks Merge can bound (Iterator).
// It is asked before their pumps start: they are read by no one else then.
type blockLimiter interface{ limitBlock(n int64) }

// pump reads one source and hands its lines over in batches. It ends when the source
// ends or fails, or when the Merged is closed.
func (m *Merged) pump(i int, it sched.LogIterator) {
	defer m.wg.Done()
	r, exact := it.(Readier)
	for {
		if exact && !r.Ready() {
			if !m.send(mergeMsg{src: i, idle: true}) {
				return
			}
		}
		bp := m.free.Get().(*[]sched.Line)
		batch := (*bp)[:0]
		var err error
		for {
			var l sched.Line
			l, err = it.Next(m.ctx)
			if err != nil {
				break
			}
			batch = append(batch, l)
			if !exact || len(batch) == m.batch || !r.Ready() {
				break
			}
		}
		if len(batch) > 0 {
			// Wait until the merge has room for this source's lines.
			select {
			case <-m.srcs[i].credits:
			case <-m.ctx.Done():
				return
			}
			if !m.send(mergeMsg{src: i, lines: batch}) {
				return
			}
		} else {
			m.free.Put(bp)
		}
		if err != nil {
			m.send(mergeMsg{src: i, err: err})
			return
		}
	}
}

func (m *Merged) send(msg mergeMsg) bool {
	select {
	case m.ch <- msg:
		return true
	case <-m.ctx.Done():
		return false
	}
}

// apply takes in a message of a source's pump, and keeps what pick needs in step.
func (m *Merged) apply(msg mergeMsg) {
	s := &m.srcs[msg.src]
	queued := len(s.q) > 0
	m.leave(msg.src)
	m.update(s, msg)
	m.enter(msg.src)
	if !queued && len(s.q) > 0 {
		m.heads.Push(msg.src, s.q[0].Time)
	}
}

func (m *Merged) update(s *mergeSrc, msg mergeMsg) {
	switch {
	case msg.err != nil:
		s.done = true
		m.live--
		if !errors.Is(msg.err, io.EOF) && m.err == nil && m.ctx.Err() == nil {
			m.err = msg.err
		}
	case msg.idle:
		s.idle = true
	default:
		s.idle = false
		// Queued as it came, not copied onto the lines before it: a batch is let
		// go whole once its last line is delivered.
		if at := time.Now(); len(s.q) == 0 {
			s.q, s.batch, s.qAt = msg.lines, msg.lines, at
		} else {
			s.more = append(s.more, batchIn{msg.lines, at}) // within its capacity: a batch per credit
		}
	}
}

// putBatch returns a batch, all its lines delivered, to the pool, cleared so that the
// pool holds no text. Only its length was ever written since it was last cleared.
func (m *Merged) putBatch(b []sched.Line) {
	clear(b)
	b = b[:0]
	m.free.Put(&b)
}

// drain applies every message already sent, without blocking.
func (m *Merged) drain() {
	for {
		select {
		case msg := <-m.ch:
			m.apply(msg)
		default:
			return
		}
	}
}

// pick returns the source whose head line may be delivered now, or -1, and how long to
// wait for an inexact source before trying again (0: no such wait). The line is the
// earliest of the queued heads (of equal times, the first source's): it is delivered
// once no other source may still bring an earlier one. It costs no look at every
// source: the heads are a heap, the sources that could hold the line back are
// counted, and of the inexact ones the one to wait for longest, the last to empty,
// is the last of their list.
func (m *Merged) pick() (int, time.Duration) {
	if m.heads.Len() == 0 {
		return -1, 0
	}
	if m.reading > 0 {
		return -1, 0 // a pump is reading: a line or an idle notice is coming
	}
	best := m.heads.First()
	if m.idleEmpty == 0 && m.waitTail < 0 {
		return best, 0 // every other source has lines queued or has ended
	}
	now := time.Now()
	var wait time.Duration
	if m.idleEmpty > 0 {
		// The line's stamp says how old it is, unless the wall clock was stepped
		// back since it was read: then it looks younger than it is, by the size
		// of the step. When it reached this Merged bounds the wait either way.
		left := followGrace - now.Sub(m.srcs[best].q[0].Time)
		left = min(left, followGrace-now.Sub(m.srcs[best].qAt))
		wait = max(wait, left)
	}
	if m.waitTail >= 0 {
		wait = max(wait, inexactWait-now.Sub(m.srcs[m.waitTail].emptySince))
	}
	if wait > 0 {
		return -1, wait
	}
	return best, 0
}

// pop takes the head line of source i, which pick returned: the first of heads.
func (m *Merged) pop(i int) sched.Line {
	s := &m.srcs[i]
	l := s.q[0]
	s.q = s.q[1:]
	if len(s.q) == 0 {
		// The batch is spent: its credit goes back to the pump.
		m.putBatch(s.batch)
		s.credits <- struct{}{} // never blocks: at most mergeCredits are out
		s.q, s.batch = nil, nil
		if len(s.more) > 0 {
			b := s.more[0]
			s.q, s.batch, s.qAt = b.lines, b.lines, b.at
			s.more = append(s.more[:0], s.more[1:]...)
		}
	}
	if len(s.q) > 0 {
		m.heads.Advance(s.q[0].Time) // its next line is its new head
		return l
	}
	m.heads.Pop()
	if !s.exact {
		s.emptySince = time.Now()
	}
	m.enter(i)
	return l
}

// The sources that can hold a line back, by what they are: leave is called before a
// source changes, enter after.

func (m *Merged) leave(i int) {
	s := &m.srcs[i]
	switch {
	case s.done || len(s.q) > 0:
	case !s.exact:
		m.unwait(i)
	case s.idle:
		m.idleEmpty--
	default:
		m.reading--
	}
}

func (m *Merged) enter(i int) {
	s := &m.srcs[i]
	switch {
	case s.done || len(s.q) > 0:
	case !s.exact:
		m.await(i)
	case s.idle:
		m.idleEmpty++
	default:
		m.reading++
	}
}

// await appends inexact source i to the list of those waited for: its queue emptied
// just now, after every other's in the list.
func (m *Merged) await(i int) {
	s := &m.srcs[i]
	if s.waiting {
		return
	}
	s.waiting, s.prev, s.next = true, m.waitTail, -1
	if m.waitTail >= 0 {
		m.srcs[m.waitTail].next = int32(i)
	} else {
		m.waitHead = int32(i)
	}
	m.waitTail = int32(i)
}

// unwait takes source i out of the list of inexact sources waited for.
func (m *Merged) unwait(i int) {
	s := &m.srcs[i]
	if !s.waiting {
		return
	}
	if s.prev >= 0 {
		m.srcs[s.prev].next = s.next
	} else {
		m.waitHead = s.next
	}
	if s.next >= 0 {
		m.srcs[s.next].prev = s.prev
	} else {
		m.waitTail = s.prev
	}
	s.waiting, s.prev, s.next = false, -1, -1
}

// Ready reports whether Next would return without blocking. A source that implements
// Readier says at once whether it has a line, so while its pump is reading, Ready
// waits for the answer rather than say "none ready" too early: a Merged that is the
// source of another Merge (a Slurm replica: its stdout and stderr files) would
// otherwise look idle while its files are being read, and the Merge above would
// deliver another source's later lines first.
func (m *Merged) Ready() bool {
	if m.single != nil {
		if r, ok := m.single.(Readier); ok {
			return r.Ready()
		}
		return false
	}
	var timeout <-chan time.Time
	for {
		m.drain()
		if m.err != nil || m.live == 0 {
			return true
		}
		if i, _ := m.pick(); i >= 0 {
			return true
		}
		if m.reading == 0 {
			return false // no pump of a source that implements Readier is reading
		}
		if timeout == nil {
			t := time.NewTimer(readyWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case msg := <-m.ch:
			m.apply(msg)
		case <-timeout:
			return false
		case <-m.ctx.Done():
			return false
		}
	}
}

// Next returns the next line in time order, io.EOF after the last, or the first error
// of a source.
func (m *Merged) Next(ctx context.Context) (sched.Line, error) {
	if m.single != nil {
		return m.single.Next(ctx)
	}
	for {
		m.drain()
		if m.err != nil {
			return sched.Line{}, m.err
		}
		i, wait := m.pick()
		if i >= 0 {
			return m.pop(i), nil
		}
		if m.live == 0 && wait == 0 {
			return sched.Line{}, io.EOF
		}
		var timeout <-chan time.Time
		if wait > 0 {
			if m.timer == nil {
				m.timer = time.NewTimer(wait)
			} else {
				m.timer.Reset(wait)
			}
			timeout = m.timer.C
		}
		select {
		case msg := <-m.ch:
			m.apply(msg)
		case <-timeout:
		case <-ctx.Done():
			return sched.Line{}, ctx.Err()
		}
	}
}

// Close stops reading and closes every source.
func (m *Merged) Close() error {
	if m.single != nil {
		return m.single.Close()
	}
	m.cancel()
	// Closing the sources first also stops a source that does not watch its context.
	var errs []error
	for _, it := range m.its {
		errs = append(errs, it.Close())
	}
	m.wg.Wait()
	if m.timer != nil {
		m.timer.Stop()
	}
	return errors.Join(errs...)
}
