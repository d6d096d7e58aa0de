package local

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The supervisor tells its reaper of every process group and pipe as they come, and
// must never wait for it: a reaper starved of CPU (a machine at load 1,000, where it
// read nothing for seconds) would stall the supervisor's loop, and with it every
// replica's start, exit and log. So a message goes straight into the socket while it
// has room, and otherwise waits its turn in a queue, in order, which a goroutine of the
// link writes out as the reaper reads. Before the queue, a send waited at most a
// second and then gave the reaper up: the app went on without one, and a SIGKILL of
// its supervisor later left its replicas' children running.

const (
	// maxQueued and maxQueuedFDs bound what waits for a reaper that reads nothing:
	// a message per process group started and ended and per pipe held and let go
	// (a few per replica start), each under maxReaperMsg; the pipes' descriptors are
	// copies held until sent. Past either, the reaper is given up.
	maxQueued    = 1 << 16
	maxQueuedFDs = 4096
)

// errQueueFull is a reaper that has read nothing while maxQueued messages (or
// maxQueuedFDs descriptors) came for it.
var errQueueFull = errors.New("it read nothing while its queue filled")

// reaperMsg is one message to the reaper, with a descriptor it owns (a copy) or -1.
type reaperMsg struct {
	text string
	fd   int
}

// reaperLink is the supervisor's end of the reaper's socket (SOCK_SEQPACKET, non-
// blocking): send never blocks, flush waits for what is queued, close ends the link's
// goroutine.
type reaperLink struct {
	f  *os.File
	rc syscall.RawConn

	mu     sync.Mutex
	q      []reaperMsg // waiting, in order
	fds    int         // descriptors in q
	busy   bool        // the writer holds q's first message, taken off q
	err    error       // the first failure: the link is then dead
	closed bool

	wake    chan struct{} // q has messages (1-buffered)
	drained chan struct{} // the writer sent one or failed (1-buffered)
	done    chan struct{} // the writer has ended
}

// newReaperLink starts the link's writer on f, a non-blocking socket.
func newReaperLink(f *os.File) (*reaperLink, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	l := &reaperLink{f: f, rc: rc, wake: make(chan struct{}, 1), drained: make(chan struct{}, 1), done: make(chan struct{})}
	go l.write()
	return l, nil
}

// send sends text, with a copy of descriptor fd unless it is -1, at once when the
// socket has room and nothing waits before it, else after what waits. queued says it
// waits. An error is the link's first failure: it is dead.
func (l *reaperLink) send(text string, fd int) (queued bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false, os.ErrClosed
	}
	if l.err != nil {
		return false, l.err
	}
	if len(l.q) == 0 && !l.busy {
		var sent bool
		_ = l.rc.Control(func(s uintptr) { sent, err = sendmsg(int(s), text, fd) })
		if sent || err != nil {
			l.err = err
			return false, err
		}
	}
	if len(l.q) >= maxQueued || fd >= 0 && l.fds >= maxQueuedFDs {
		l.err = errQueueFull
		return false, l.err
	}
	if fd >= 0 {
		if fd, err = unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0); err != nil {
			l.err = fmt.Errorf("copy a descriptor for it: %w", err)
			return false, l.err
		}
		l.fds++
	}
	l.q = append(l.q, reaperMsg{text: text, fd: fd})
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return true, nil
}

// sendmsg tries to send one message now: sent is false, with no error, when the
// socket is full.
func sendmsg(s int, text string, fd int) (sent bool, err error) {
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	for {
		switch err := unix.Sendmsg(s, []byte(text), oob, nil, 0); err {
		case nil:
			return true, nil
		case unix.EINTR:
		case unix.EAGAIN:
			return false, nil
		default:
			return false, err
		}
	}
}

// write is the link's writer: it sends the queue's messages one by one, each as soon
// as the socket has room, until the link fails or is closed.
func (l *reaperLink) write() {
	defer close(l.done)
	for range l.wake {
		for {
			l.mu.Lock()
			if l.closed || l.err != nil || len(l.q) == 0 {
				l.mu.Unlock()
				break
			}
			m := l.q[0]
			l.q[0] = reaperMsg{}
			l.q = l.q[1:]
			l.busy = true
			l.mu.Unlock()

			var err error
			werr := l.rc.Write(func(s uintptr) bool {
				var sent bool
				sent, err = sendmsg(int(s), m.text, m.fd)
				return sent || err != nil
			})
			if err == nil {
				err = werr // closed, or past flush's deadline
			}
			if m.fd >= 0 {
				unix.Close(m.fd)
			}
			l.mu.Lock()
			l.busy = false
			if m.fd >= 0 {
				l.fds--
			}
			if err != nil && l.err == nil {
				l.err = err
			}
			l.mu.Unlock()
			select {
			case l.drained <- struct{}{}:
			default:
			}
		}
		l.mu.Lock()
		stop := l.closed
		l.mu.Unlock()
		if stop {
			return
		}
	}
}

// flush waits until every message queued is sent, until deadline at most; an error
// is the link's failure (os.ErrDeadlineExceeded: the reaper read too little).
func (l *reaperLink) flush(deadline time.Time) error {
	_ = l.f.SetWriteDeadline(deadline) // the writer's wait ends there
	defer l.f.SetWriteDeadline(time.Time{})
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for {
		l.mu.Lock()
		empty, err := len(l.q) == 0 && !l.busy, l.err
		l.mu.Unlock()
		if err != nil || empty {
			return err
		}
		select {
		case <-l.drained:
		case <-t.C:
			return os.ErrDeadlineExceeded
		}
	}
}

// close closes the socket, drops what is still queued and waits for the writer to
// end (closing the socket ends its wait for room).
func (l *reaperLink) close() {
	l.mu.Lock()
	l.closed = true
	for _, m := range l.q {
		if m.fd >= 0 {
			unix.Close(m.fd)
		}
	}
	l.q, l.fds = nil, 0
	l.mu.Unlock()
	_ = l.f.Close()
	close(l.wake)
	<-l.done
}
