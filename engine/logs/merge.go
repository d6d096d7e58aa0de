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
	srcs   []mergeSrc
	live   int
	err    error
	timer  *time.Timer
}

type mergeSrc struct {
	credits    chan struct{} // one per batch the pump may hand over
	held       int           // batches received since q was last empty
	q          []sched.Line
	arrivals   []arrival    // when the lines of q arrived, a batch at a time
	batch      []sched.Line // the slice q came from, to recycle
	exact      bool         // implements Readier
	idle       bool         // said it has no line ready
	done       bool
	emptySince time.Time
}

// arrival is when n consecutive lines of a source's queue reached the Merged.
type arrival struct {
	n  int
	at time.Time // with its monotonic reading: immune to wall-clock steps
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
	ctx, cancel := context.WithCancel(context.Background())
	m := &Merged{
		ctx:    ctx,
		cancel: cancel,
		its:    its,
		ch:     make(chan mergeMsg, len(its)),
		srcs:   make([]mergeSrc, len(its)),
		live:   len(its),
	}
	m.free.New = func() any { s := make([]sched.Line, 0, mergeBatch); return &s }
	now := time.Now()
	for i, it := range its {
		_, exact := it.(Readier)
		m.srcs[i] = mergeSrc{exact: exact, emptySince: now, credits: make(chan struct{}, mergeCredits)}
		for range mergeCredits {
			m.srcs[i].credits <- struct{}{}
		}
		m.wg.Add(1)
		go m.pump(i, it)
	}
	return m
}

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
			if !exact || len(batch) == mergeBatch || !r.Ready() {
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

func (m *Merged) apply(msg mergeMsg) {
	s := &m.srcs[msg.src]
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
		s.held++
		s.arrivals = append(s.arrivals, arrival{n: len(msg.lines), at: time.Now()})
		if len(s.q) == 0 {
			m.recycle(s)
			s.q, s.batch = msg.lines, msg.lines
		} else {
			s.q = append(s.q, msg.lines...)
			m.putBatch(msg.lines)
		}
	}
}

func (m *Merged) recycle(s *mergeSrc) {
	if s.batch != nil {
		m.putBatch(s.batch)
		s.batch = nil
	}
}

// putBatch returns a batch to the pool, cleared so that the pool holds no text.
func (m *Merged) putBatch(b []sched.Line) {
	b = b[:0]
	clear(b[:cap(b)])
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
// wait for an inexact source before trying again (0: no such wait).
func (m *Merged) pick(now time.Time) (int, time.Duration) {
	best := -1
	for i := range m.srcs {
		s := &m.srcs[i]
		if len(s.q) > 0 && (best < 0 || s.q[0].Time.Before(m.srcs[best].q[0].Time)) {
			best = i
		}
	}
	if best < 0 {
		return -1, 0
	}
	var wait time.Duration
	for i := range m.srcs {
		s := &m.srcs[i]
		if i == best || s.done || len(s.q) > 0 {
			continue
		}
		if s.exact {
			if !s.idle {
				return -1, 0 // its pump is reading: a line or an idle notice is coming
			}
			// The line's stamp says how old it is, unless the wall clock was stepped
			// back since it was read: then it looks younger than it is, by the size
			// of the step. When it reached this Merged bounds the wait either way.
			left := followGrace - now.Sub(m.srcs[best].q[0].Time)
			if a := m.srcs[best].arrivals; len(a) > 0 {
				left = min(left, followGrace-now.Sub(a[0].at))
			}
			if left > 0 {
				wait = max(wait, left)
			}
			continue
		}
		if left := inexactWait - now.Sub(s.emptySince); left > 0 {
			wait = max(wait, left)
		}
	}
	if wait > 0 {
		return -1, wait
	}
	return best, 0
}

func (m *Merged) pop(i int, now time.Time) sched.Line {
	s := &m.srcs[i]
	l := s.q[0]
	s.q = s.q[1:]
	if len(s.arrivals) > 0 {
		if s.arrivals[0].n--; s.arrivals[0].n == 0 {
			s.arrivals = s.arrivals[1:]
		}
	}
	if len(s.q) == 0 {
		s.emptySince = now
		m.recycle(s)
		s.q = nil
		for ; s.held > 0; s.held-- {
			s.credits <- struct{}{} // never blocks: at most mergeCredits are out
		}
	}
	return l
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
		if i, _ := m.pick(time.Now()); i >= 0 {
			return true
		}
		if !m.reading() {
			return false
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

// reading reports whether the pump of a source that implements Readier is reading:
// the source has neither lines waiting nor said it has none ready, nor ended.
func (m *Merged) reading() bool {
	for i := range m.srcs {
		if s := &m.srcs[i]; s.exact && !s.idle && !s.done && len(s.q) == 0 {
			return true
		}
	}
	return false
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
		now := time.Now()
		i, wait := m.pick(now)
		if i >= 0 {
			return m.pop(i, now), nil
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
