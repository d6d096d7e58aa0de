package logs

import (
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A Bell and a Chime are a pipe between the process writing logs and one process
// following them: the writer rings after each write, the follower's iterators wake on
// the chime instead of watching the files through inotify, and the pipe's end (the
// writer closed the bell after ending the logs, or died) ends the following.
//
// Why not inotify: closing an inotify instance waits for the kernel to free its
// marks (an SRCU grace period, 5 to 25 ms on a busy machine), and a process that
// followed through inotify pays it once more at exit. For `wick run` of a short app
// that was as much again as the launch itself. A pipe costs a write per ring.

// Bell is the writer's end: Ring never blocks, and rings that find the pipe full are
// dropped (the follower has not read the earlier ones yet, and will look at every
// file when it does). It is safe for concurrent use; the zero and nil Bells ring
// nothing.
type Bell struct {
	mu     sync.RWMutex
	f      *os.File // nil once closed, and while a report is held
	fd     int      // f's descriptor, non-blocking
	report *os.File // the pipe, while its report is to be written (NewReportBell)

	// held is set until the report is written; a ring meanwhile sets missed, and
	// Report rings once for them all.
	held, missed atomic.Bool
}

// NewReportBell makes f, the write end of a pipe whose reader first reads a line of
// report (the supervisor's report of its start, which the launcher reads a byte at a
// time), a Bell. It holds its rings until Report has written that line (and made f
// non-blocking), then rings once for them. A writer can ring it from the start, and the follower, opened on the report,
// misses no write made before it: one made between the report and the bell's use
// rang nothing before, and a follower that had read the files just before it waited
// for a next write that an app hung after its first lines never made.
func NewReportBell(f *os.File) *Bell {
	b := &Bell{fd: -1, report: f}
	b.held.Store(true)
	return b
}

// attach makes f, non-blocking, the bell's pipe. Called with b.mu held, or before b
// is shared.
func (b *Bell) attach(f *os.File) {
	// Not f.Fd(): it would put the descriptor back into blocking mode.
	fd := -1
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(d uintptr) { fd = int(d) })
	}
	if fd < 0 || unix.SetNonblock(fd, true) != nil {
		f.Close() // a bell that cannot ring without blocking rings nothing
		return
	}
	b.f, b.fd = f, fd
}

// Report writes line on a NewReportBell's pipe, then lets the bell ring: at once if
// it rang meanwhile. A pipe that cannot take the line is closed (nobody listens),
// and the bell rings nothing.
func (b *Bell) Report(line string) error {
	b.mu.Lock()
	f := b.report
	b.report = nil
	var err error
	switch {
	case f == nil:
		err = os.ErrClosed
	default:
		if _, err = f.WriteString(line); err != nil {
			f.Close()
		} else {
			b.attach(f)
		}
	}
	b.held.Store(false)
	b.mu.Unlock()
	if err == nil && b.missed.Swap(false) {
		b.Ring()
	}
	return err
}

var ring = []byte{1}

// Ring tells the follower that the logs changed. A follower that went away closes
// the bell.
func (b *Bell) Ring() {
	if b == nil {
		return
	}
	if b.held.Load() {
		b.missed.Store(true)
		if b.held.Load() {
			return // Report rings for it
		}
	}
	b.mu.RLock()
	var err error
	if b.f != nil {
		// Not f.Write: the runtime poller would park on a full pipe. The lock keeps
		// the descriptor from being closed (and its number reused) meanwhile.
		for {
			_, err = unix.Write(b.fd, ring)
			if err != unix.EINTR {
				break
			}
		}
	}
	b.mu.RUnlock()
	if err != nil && err != unix.EAGAIN {
		b.Close() // EPIPE: nobody listens
	}
}

// Close closes the bell: the follower's chime ends. It is safe to call more than once.
func (b *Bell) Close() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.report != nil {
		b.report.Close() // its report never written: the reader sees the pipe end
		b.report = nil
	}
	if b.f == nil {
		return nil
	}
	err := b.f.Close()
	b.f = nil
	return err
}

// Chime is the follower's end of a bell. Each Watch it gives receives a value after
// each ring (coalesced); Done is closed when the bell is closed or its writer died.
// A Chime ends its reading goroutine at the pipe's end, or at Close.
type Chime struct {
	f         *os.File
	closeOnce sync.Once
	done      chan struct{}

	mu   sync.Mutex
	subs map[*Watch]struct{}
}

// NewChime reads the read end f of a bell's pipe, until its end.
func NewChime(f *os.File) *Chime {
	c := &Chime{f: f, done: make(chan struct{}), subs: map[*Watch]struct{}{}}
	go c.loop()
	return c
}

func (c *Chime) loop() {
	defer close(c.done)
	defer c.closeFile()
	buf := make([]byte, 4<<10)
	for {
		// Any error ends it: EOF, a Close, or whatever else broke the pipe, after
		// which nobody can ring again.
		if _, err := c.f.Read(buf); err != nil {
			return
		}
		c.mu.Lock()
		for w := range c.subs {
			w.notify(Changed)
		}
		c.mu.Unlock()
	}
}

// Done is closed once the bell can ring no more: its writer closed it (after ending
// the logs) or died.
func (c *Chime) Done() <-chan struct{} { return c.done }

// Watch returns a Watch that receives a value after each ring. Close it when done.
func (c *Chime) Watch() *Watch {
	w := &Watch{chime: c, c: make(chan struct{}, 1)}
	c.mu.Lock()
	c.subs[w] = struct{}{}
	c.mu.Unlock()
	return w
}

func (c *Chime) unsubscribe(w *Watch) {
	c.mu.Lock()
	delete(c.subs, w)
	c.mu.Unlock()
}

func (c *Chime) closeFile() { c.closeOnce.Do(func() { c.f.Close() }) }

// Close stops reading the pipe (the writer's next ring finds it closed) and waits for
// the reading goroutine to end. It is safe to call more than once.
func (c *Chime) Close() error {
	// Closing the file ends the pending Read (the runtime poller serves pipes).
	c.closeFile()
	<-c.done
	return nil
}
