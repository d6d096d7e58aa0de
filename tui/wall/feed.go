package wall

import (
	"context"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	tea "charm.land/bubbletea/v2"
	"golang.org/x/sync/semaphore"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/common"
)

// Performance knobs of the feed, after kl: lines are read off the UI loop, one
// goroutine per replica, gathered by one pump and handed to the UI in one message per
// frame, so that 8 replicas at 10k lines/s cost 60 Updates a second, not 80,000.
const (
	// flushInterval is how long the pump gathers lines after the first of a batch:
	// three frames at 60 fps, so the wall redraws at most 20 times a second while
	// lines come (keys still redraw at once). At 60 (16 ms) the wall at 16 replicas of
	// demo.train took 3.18 CPU-s where lnav took 1.17 (2.7x); at 30 (33 ms), 2.23-2.60
	// (2.1x), paired at load 3-5 (BenchmarkSoakBesideLnav). Most of a frame is the
	// renderer's, and it is the same whatever changed: Bubble Tea redraws the whole
	// frame into its buffer, parses it and diffs it against the last (2.5-3.1 ms a
	// frame of 200x60 at load 5 with Ultraviolet of 2026-10, whose diff no longer
	// measures the width of each ASCII cell: 3.5-3.7 ms before, BenchmarkFrame16).
	flushInterval = 50 * time.Millisecond
	// streamInterval is the pump's interval once lines have come in every interval
	// for streamAfter batches: a stream redraws at most 10 times a second, and the
	// first lines after a lull (longer than streamInterval) still come within
	// flushInterval. Each frame costs Bubble Tea's full redraw whatever changed
	// (2-4 ms for 200x60, 53% of the wall's CPU at 16 replicas of demo.train, load
	// 17): at 100 ms the wall took 0.80x its CPU at 50 ms (#37 round 9).
	streamInterval = 100 * time.Millisecond
	streamAfter    = 20
	// readChunk is how many lines a reader hands to the pump at once, as long as its
	// iterator has more ready: one channel send per chunk, not per line.
	readChunk = 512
	// minChunk is the least a reader hands over at once when more is ready.
	minChunk = 16
	// maxPending bounds the lines the pump holds for a UI that is behind; readers then
	// wait (the lines stay in the files, nothing is dropped).
	maxPending = 64 << 10
	// maxInFlight bounds the bytes of the lines read and not yet in the rings, over
	// every reader, the pump and the batches on their way to the UI (lineCost: a
	// line's record and its text): a reader takes room for each line it reads,
	// waiting for it when there is none (the lines stay in the files), and the wall
	// gives it back once it has put a batch in the rings. Bounded by lines alone, a
	// wall of 1,024 replicas catching up held 40 MB of lines in flight (a chunk in each
	// reader's hand, a chunk each in the channel, the pump's 64k), most of its live
	// heap over the soft memory limit. 4 MB is ~20k lines of 80 bytes: two frames'
	// worth at 80k lines/s, so the UI never waits for the readers (at 8 MB the wall
	// of 1,024 replicas held ~10 MB of lines in flight, with its RSS over 150 MB).
	maxInFlight = 4 << 20
	// offScreenPace is how long the reader of a replica none of whose panes is on
	// screen waits, once it has read every line ready, before it reads again: it
	// then reads all that came meanwhile at once. A replica at 20 lines/s costs its
	// reader a wake-up, a look at the index, a read of the text and a chunk for the
	// pump a line; at 1,024 replicas those 20,000 wake-ups a second were most of the
	// wall's CPU. Panes on screen are read as their lines come. A reader that is
	// behind (its chunk full) never waits.
	offScreenPace = 250 * time.Millisecond
	// paceAbove is how many replicas an app has at most for its readers never to
	// pace: a few dozen readers' wake-ups cost little.
	paceAbove = 64
)

// source is what the feed reads: one replica of one app.
type source struct {
	role string
	k    int
	// observe, when set, sees every chunk before it goes to the pump, on the reader's
	// goroutine (the metrics).
	observe func([]sched.Line)
	// onScreen, when set, says whether a pane of the replica is on screen; a reader
	// of a replica off screen paces its reads (offScreenPace).
	onScreen *atomic.Bool
	// peers is how many replicas are read side by side (logs.Iterator.OneOf).
	peers int
}

// chunkMsg is a reader's handover to the pump.
type chunkMsg struct {
	src   int
	lines []sched.Line
	cost  int64 // the room its lines took (lineCost)
	err   error // the iterator's end (io.EOF) or failure; the last chunk of src
}

// batchMsg is the pump's handover to the wall: the lines of every source since the
// last batch, and which sources ended (with their error; io.EOF is a normal end).
type batchMsg struct {
	gen   int
	lines [][]sched.Line // by source
	ended map[int]error
	// room is the feed's budget (maxInFlight), and cost what the batch's lines took
	// of it: the wall gives it back once it has ingested (or dropped) the batch.
	room *inFlight
	cost int64
}

// done gives the batch's room back to the readers.
func (b *batchMsg) done() {
	if b.room != nil {
		b.room.give(b.cost)
	}
}

// lineSize is the size of a line's record.
const lineSize = int64(unsafe.Sizeof(sched.Line{}))

// lineCost is the room line l takes in flight: its record and its text, at most the
// whole budget (a line longer than that goes alone).
func lineCost(l *sched.Line) int64 { return min(lineSize+int64(len(l.Text)), maxInFlight) }

// inFlight is the budget of the lines in flight (maxInFlight): readers wait in turn
// for room. It also keeps the most ever taken at once, for the tests.
type inFlight struct {
	sem        *semaphore.Weighted
	used, peak atomic.Int64
}

func newInFlight(n int64) *inFlight { return &inFlight{sem: semaphore.NewWeighted(n)} }

// take waits for n bytes of room (n at most the budget), or until ctx is done.
func (r *inFlight) take(ctx context.Context, n int64) error {
	if err := r.sem.Acquire(ctx, n); err != nil {
		return err
	}
	r.took(n)
	return nil
}

// tryTake takes n bytes of room if there is that much free and nobody waits.
func (r *inFlight) tryTake(n int64) bool {
	if !r.sem.TryAcquire(n) {
		return false
	}
	r.took(n)
	return true
}

func (r *inFlight) took(n int64) {
	used := r.used.Add(n)
	for p := r.peak.Load(); used > p && !r.peak.CompareAndSwap(p, used); p = r.peak.Load() {
	}
}

// give gives n bytes back.
func (r *inFlight) give(n int64) {
	if n > 0 {
		r.used.Add(-n)
		r.sem.Release(n)
	}
}

// feed starts a reader per source and the pump, and returns the command that delivers
// the batches to view id; room bounds the lines in flight. Every goroutine ends when
// ctx is done or the logs end.
func feed(ctx context.Context, b common.Backend, h spec.Handle, srcs []source, room *inFlight, opts func(i int) sched.LogOptions, id common.ViewID, gen int) tea.Cmd {
	in := make(chan chunkMsg, len(srcs))
	out := make(chan tea.Msg, 1)
	// What the readers hold for a UI that is behind (a chunk in the channel and one
	// in hand each) stays about maxPending lines however many they are: 1,024
	// readers of 512 lines held a million lines (and their text) in flight.
	chunk := min(readChunk, max(minChunk, maxPending/max(1, len(srcs))))
	// The first reader opens its iterator alone, the others once it has: the backend
	// reads and decodes the app's launch file for the first and keeps it for the rest.
	// Opened all at once, 1,024 readers each decoded it (a cache miss apiece): 537 MB
	// of the wall's peak live heap of 648 MB at 1,024 replicas.
	first := make(chan struct{})
	for i, s := range srcs {
		gate := (<-chan struct{})(first)
		if i == 0 {
			gate = nil
		}
		s.peers = len(srcs)
		go read(ctx, b, h, s, i, opts(i), in, chunk, room, gate, first)
	}
	go pump(ctx, len(srcs), in, out, gen, room)
	return common.Stream(id, out)
}

// read opens one replica's iterator (off the UI loop: for docker it is a call to the
// Engine) and sends its lines in chunks, each line once it has room (maxInFlight).
//
// A reader with a gate opens its iterator once the gate is closed; the one without
// closes opened once it has opened its own (or failed to).
func read(ctx context.Context, b common.Backend, h spec.Handle, s source, i int, opts sched.LogOptions, in chan<- chunkMsg, chunk int, room *inFlight, gate <-chan struct{}, opened chan<- struct{}) {
	send := func(c chunkMsg) bool {
		select {
		case in <- c:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return
		}
	}
	it, err := b.LogLines(ctx, h, s.role, s.k, opts)
	if gate == nil {
		close(opened)
	}
	if err != nil {
		send(chunkMsg{src: i, err: err})
		return
	}
	defer it.Close()
	if o, ok := it.(interface{ OneOf(n int) }); ok {
		o.OneOf(s.peers) // its blocks bounded: each pins its lines in flight
	}
	ready, _ := it.(sched.Readier)
	more := func() bool { return ready != nil && ready.Ready() }
	last := 1 // the length of the last chunk
	var (
		pace *time.Timer
		held sched.Line // a line read for which there was no room yet
		hold bool
	)
	defer func() {
		if pace != nil {
			pace.Stop()
		}
	}()
	for {
		l := held
		if !hold {
			if l, err = it.Next(ctx); err != nil {
				send(chunkMsg{src: i, err: err})
				return
			}
		}
		cost := lineCost(&l)
		if room.take(ctx, cost) != nil {
			return
		}
		hold = false
		// A reader that has more ready is likely to fill a chunk as large as its last
		// one: size it so rather than growing it (the growth was most of the UI's
		// garbage at 80k lines/s), but no larger (1,024 replicas at 20 lines/s read a
		// line or two at a time: chunks of 512 were 60 KB of garbage a line).
		size := 1
		if more() {
			size = min(max(last, minChunk), chunk)
		}
		lines := make([]sched.Line, 1, size)
		lines[0] = l
		for len(lines) < chunk && more() {
			if l, err = it.Next(ctx); err != nil {
				break
			}
			// No room: the line waits in hand for the next chunk.
			if c := lineCost(&l); !room.tryTake(c) {
				held, hold = l, true
				held.Text = strings.Clone(l.Text) // not its block (see detach)
				break
			}
			lines = append(lines, l)
			cost += lineCost(&l)
		}
		last = len(lines)
		detach(lines)
		if s.observe != nil {
			s.observe(lines)
		}
		if !send(chunkMsg{src: i, lines: lines, cost: cost}) {
			return
		}
		if err != nil {
			send(chunkMsg{src: i, err: err})
			return
		}
		if len(lines) < chunk && !hold && s.onScreen != nil && !s.onScreen.Load() {
			if pace == nil {
				pace = time.NewTimer(offScreenPace)
			} else {
				pace.Reset(offScreenPace)
			}
			select {
			case <-pace.C:
			case <-ctx.Done():
				return
			}
		}
	}
}

// pump gathers the readers' chunks and sends a batch at most every flushInterval. It
// closes out when every source has ended (after the last batch) or ctx is done.
func pump(ctx context.Context, n int, in <-chan chunkMsg, out chan<- tea.Msg, gen int, room *inFlight) {
	defer close(out)
	var (
		lines   = make([][]sched.Line, n)
		ended   = map[int]error{}
		pending int
		cost    int64
		live    = n
		timer   *time.Timer
		due     <-chan time.Time
		ready   bool // the flush interval has passed since the first pending line
		// Only where no reader paces: at 256 replicas the slower pace took 1.10-1.20x
		// the CPU (three paired runs, load 40-280), at 16 0.82-0.90x.
		pace = flushPace{interval: flushInterval, fixed: n > paceAbove}
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		recv := in
		if pending >= maxPending || live == 0 {
			recv = nil
		}
		var send chan<- tea.Msg
		var msg tea.Msg
		if (ready || live == 0) && (pending > 0 || len(ended) > 0) {
			send = out
			msg = batchMsg{gen: gen, lines: lines, ended: ended, room: room, cost: cost}
		}
		if send == nil && live == 0 {
			return
		}
		select {
		case c := <-recv:
			if c.err != nil {
				ended[c.src] = c.err
				live--
			}
			if len(c.lines) > 0 {
				if lines[c.src] == nil {
					lines[c.src] = c.lines // adopt the reader's chunk: no copy
				} else {
					lines[c.src] = append(lines[c.src], c.lines...)
				}
				pending += len(c.lines)
			}
			cost += c.cost
			if due == nil && !ready {
				d := pace.first(time.Now())
				if timer == nil {
					timer = time.NewTimer(d)
				} else {
					timer.Reset(d)
				}
				due = timer.C
			}
		case <-due:
			due, ready = nil, true
		case send <- msg:
			pace.sent(time.Now())
			lines, ended, pending, cost, ready = make([][]sched.Line, n), map[int]error{}, 0, 0, false
		case <-ctx.Done():
			return
		}
	}
}

// flushPace is the pump's interval: flushInterval, or streamInterval while lines
// stream (they came within an interval of each batch sent, streamAfter times on end).
type flushPace struct {
	interval time.Duration
	fixed    bool      // always flushInterval
	last     time.Time // when the last batch was sent
	streak   int       // batches on end whose lines came within an interval of the one before
}

// first is the interval of a batch whose first lines came at now.
func (p *flushPace) first(now time.Time) time.Duration {
	if !p.last.IsZero() && now.Sub(p.last) <= p.interval {
		p.streak++
	} else {
		p.streak = 0
	}
	p.interval = flushInterval
	if p.streak >= streamAfter && !p.fixed {
		p.interval = streamInterval
	}
	return p.interval
}

// sent notes a batch sent at now.
func (p *flushPace) sent(now time.Time) { p.last = now }
