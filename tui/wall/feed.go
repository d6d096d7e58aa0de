package wall

import (
	"context"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/common"
)

// Performance knobs of the feed, after kl: lines are read off the UI loop, one
// goroutine per replica, gathered by one pump and handed to the UI in one message per
// frame, so that 8 replicas at 10k lines/s cost 60 Updates a second, not 80,000.
const (
	// flushInterval is how long the pump gathers lines after the first of a batch:
	// one frame at 60 fps.
	flushInterval = 16 * time.Millisecond
	// readChunk is how many lines a reader hands to the pump at once, as long as its
	// iterator has more ready: one channel send per chunk, not per line.
	readChunk = 512
	// minChunk is the least a reader hands over at once when more is ready.
	minChunk = 16
	// maxPending bounds the lines the pump holds for a UI that is behind; readers then
	// wait (the lines stay in the files, nothing is dropped).
	maxPending = 64 << 10
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
}

// chunkMsg is a reader's handover to the pump.
type chunkMsg struct {
	src   int
	lines []sched.Line
	err   error // the iterator's end (io.EOF) or failure; the last chunk of src
}

// batchMsg is the pump's handover to the wall: the lines of every source since the
// last batch, and which sources ended (with their error; io.EOF is a normal end).
type batchMsg struct {
	gen   int
	lines [][]sched.Line // by source
	ended map[int]error
}

// feed starts a reader per source and the pump, and returns the command that delivers
// the batches to view id. Every goroutine ends when ctx is done or the logs end.
func feed(ctx context.Context, b common.Backend, h spec.Handle, srcs []source, opts func(i int) sched.LogOptions, id common.ViewID, gen int) tea.Cmd {
	in := make(chan chunkMsg, len(srcs))
	out := make(chan tea.Msg, 1)
	// What the readers hold for a UI that is behind (a chunk in the channel and one
	// in hand each) stays about maxPending lines however many they are: 1,024
	// readers of 512 lines held a million lines (and their text) in flight.
	chunk := min(readChunk, max(minChunk, maxPending/max(1, len(srcs))))
	for i, s := range srcs {
		go read(ctx, b, h, s, i, opts(i), in, chunk)
	}
	go pump(ctx, len(srcs), in, out, gen)
	return common.Stream(id, out)
}

// read opens one replica's iterator (off the UI loop: for docker it is a call to the
// Engine) and sends its lines in chunks.
func read(ctx context.Context, b common.Backend, h spec.Handle, s source, i int, opts sched.LogOptions, in chan<- chunkMsg, chunk int) {
	send := func(c chunkMsg) bool {
		select {
		case in <- c:
			return true
		case <-ctx.Done():
			return false
		}
	}
	it, err := b.LogLines(ctx, h, s.role, s.k, opts)
	if err != nil {
		send(chunkMsg{src: i, err: err})
		return
	}
	defer it.Close()
	ready, _ := it.(sched.Readier)
	last := 1 // the length of the last chunk
	var pace *time.Timer
	defer func() {
		if pace != nil {
			pace.Stop()
		}
	}()
	for {
		l, err := it.Next(ctx)
		if err != nil {
			send(chunkMsg{src: i, err: err})
			return
		}
		// A reader that has more ready is likely to fill a chunk as large as its last
		// one: size it so rather than growing it (the growth was most of the UI's
		// garbage at 80k lines/s), but no larger (1,024 replicas at 20 lines/s read a
		// line or two at a time: chunks of 512 were 60 KB of garbage a line).
		size := 1
		if ready != nil && ready.Ready() {
			size = min(max(last, minChunk), chunk)
		}
		lines := make([]sched.Line, 1, size)
		lines[0] = l
		for len(lines) < chunk && ready != nil && ready.Ready() {
			if l, err = it.Next(ctx); err != nil {
				break
			}
			lines = append(lines, l)
		}
		last = len(lines)
		if s.observe != nil {
			s.observe(lines)
		}
		if !send(chunkMsg{src: i, lines: lines}) {
			return
		}
		if err != nil {
			send(chunkMsg{src: i, err: err})
			return
		}
		if len(lines) < chunk && s.onScreen != nil && !s.onScreen.Load() {
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
func pump(ctx context.Context, n int, in <-chan chunkMsg, out chan<- tea.Msg, gen int) {
	defer close(out)
	var (
		lines   = make([][]sched.Line, n)
		ended   = map[int]error{}
		pending int
		live    = n
		timer   *time.Timer
		due     <-chan time.Time
		ready   bool // the flush interval has passed since the first pending line
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
			msg = batchMsg{gen: gen, lines: lines, ended: ended}
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
			if due == nil && !ready {
				if timer == nil {
					timer = time.NewTimer(flushInterval)
				} else {
					timer.Reset(flushInterval)
				}
				due = timer.C
			}
		case <-due:
			due, ready = nil, true
		case send <- msg:
			lines, ended, pending, ready = make([][]sched.Line, n), map[int]error{}, 0, false
		case <-ctx.Done():
			return
		}
	}
}
