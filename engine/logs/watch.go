package logs

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Watcher reports changes to files and directories (through one inotify instance) and
// the exit of processes (through pidfds), without polling. One Watcher serves any
// number of watches: a program that follows the logs of a hundred replicas uses one
// inotify instance, not a hundred (the default limit is 128 per user).
//
// The Watcher holds no resources while nothing is watched: the inotify instance and its
// reading goroutine exist only while at least one file watch is open, and each process
// watch's goroutine ends when the process exits or the watch is closed. The zero value
// is not usable; call NewWatcher. A Watcher is safe for concurrent use.
type Watcher struct {
	mu    sync.Mutex
	inst  *inotify // nil while no file is watched
	procs map[Proc]*procWatch
}

// NewWatcher returns a Watcher that watches nothing yet.
func NewWatcher() *Watcher { return &Watcher{procs: map[Proc]*procWatch{}} }

// Event bits accumulated by a Watch.
const (
	// Changed: the file was written, or an entry of the directory was created,
	// written, closed or renamed into it.
	Changed uint32 = 1 << iota
	// Gone: the watched file or directory was deleted or moved away.
	Gone
)

// Every watch uses the same mask: inotify keeps one mask per inode and instance, so
// two watches of one file must agree on it.
const watchMask = unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_CREATE | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// inotify is one inotify instance and its watch descriptors.
type inotify struct {
	f   *os.File
	fd  int
	wds map[int32]map[*Watch]struct{}
}

// Watch is one watched path. Its channel receives a value (coalesced) after events;
// Events says which.
type Watch struct {
	w      *Watcher
	inst   *inotify
	wd     int32
	chime  *Chime // instead of w, inst and wd: a watch of a bell (see Chime)
	c      chan struct{}
	events atomic.Uint32
	closed bool // guarded by w.mu

	// stop, instead of w, inst and wd: a watch that looks (see pollAdd), ended
	// once by stopOnce.
	stop     chan struct{}
	stopOnce sync.Once
}

// C returns the channel that receives a value after each batch of events.
func (w *Watch) C() <-chan struct{} { return w.c }

// Events returns and clears the event bits seen since the last call.
func (w *Watch) Events() uint32 { return w.events.Swap(0) }

func (w *Watch) notify(bits uint32) {
	w.events.Or(bits)
	select {
	case w.c <- struct{}{}:
	default:
	}
}

// Add watches path, a file or a directory. Where the kernel refuses inotify (its
// per-user limits), the watch looks at path every so often instead (see pollAdd).
func (w *Watcher) Add(path string) (*Watch, error) {
	wt, err := w.add(path)
	if err != nil && refused(err) {
		if wt, perr := pollAdd(path); perr == nil {
			return wt, nil
		}
	}
	return wt, err
}

func (w *Watcher) add(path string) (*Watch, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inst == nil {
		fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
		if err != nil {
			return nil, fmt.Errorf("watch %s: inotify: %w", path, err)
		}
		// A non-blocking fd makes os.NewFile return a file the runtime poller serves,
		// so the reading goroutine parks without holding a thread and Close wakes it.
		inst := &inotify{f: os.NewFile(uintptr(fd), "inotify"), fd: fd, wds: map[int32]map[*Watch]struct{}{}}
		w.inst = inst
		go w.loop(inst)
	}
	inst := w.inst
	wd, err := unix.InotifyAddWatch(inst.fd, path, watchMask)
	if err != nil {
		w.releaseLocked()
		return nil, fmt.Errorf("watch %s: %w", path, err)
	}
	wt := &Watch{w: w, inst: inst, wd: int32(wd), c: make(chan struct{}, 1)}
	subs := inst.wds[wt.wd]
	if subs == nil {
		subs = map[*Watch]struct{}{}
		inst.wds[wt.wd] = subs
	}
	subs[wt] = struct{}{}
	return wt, nil
}

// Close stops the watch. It is safe to call more than once.
func (w *Watch) Close() error {
	if w.chime != nil {
		w.chime.unsubscribe(w)
		return nil
	}
	if w.stop != nil {
		w.stopOnce.Do(func() { close(w.stop) })
		return nil
	}
	w.w.mu.Lock()
	defer w.w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if subs, ok := w.inst.wds[w.wd]; ok {
		delete(subs, w)
		if len(subs) == 0 {
			delete(w.inst.wds, w.wd)
			// The watch may already be gone (file deleted): an error here means nothing.
			_, _ = unix.InotifyRmWatch(w.inst.fd, uint32(w.wd))
		}
	}
	if w.w.inst == w.inst {
		w.w.releaseLocked()
	}
	return nil
}

// releaseLocked closes the inotify instance when it watches nothing, which ends its
// goroutine.
func (w *Watcher) releaseLocked() {
	if w.inst != nil && len(w.inst.wds) == 0 {
		w.inst.f.Close()
		w.inst = nil
	}
}

func (w *Watcher) loop(inst *inotify) {
	buf := make([]byte, 16<<10)
	for {
		n, err := inst.f.Read(buf)
		if err != nil {
			// Closed by releaseLocked (or an unexpected error): wake every watch still
			// registered so that nobody waits on a dead instance.
			w.mu.Lock()
			for _, subs := range inst.wds {
				for wt := range subs {
					wt.notify(Gone)
				}
			}
			w.mu.Unlock()
			return
		}
		w.mu.Lock()
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				// Events were lost: tell everyone something changed.
				for _, subs := range inst.wds {
					for wt := range subs {
						wt.notify(Changed)
					}
				}
				continue
			}
			bits := Changed
			if ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0 {
				bits |= Gone
			}
			for wt := range inst.wds[ev.Wd] {
				wt.notify(bits)
			}
			if ev.Mask&unix.IN_IGNORED != 0 {
				// The kernel dropped the watch; its number may be reused.
				delete(inst.wds, ev.Wd)
			}
		}
		w.mu.Unlock()
	}
}

// procWatch is a pidfd shared by every watcher of one process, or, where the kernel
// gives none, a goroutine that looks (pollProc) until stop is closed.
type procWatch struct {
	refs int
	f    *os.File
	stop chan struct{}
	done chan struct{}
}

// WatchProc returns a channel closed when p exits, and a function to stop watching.
// If p is not running, the channel is already closed.
func (w *Watcher) WatchProc(p Proc) (<-chan struct{}, func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if pw, ok := w.procs[p]; ok {
		pw.refs++
		return pw.done, w.releaseProc(p, pw)
	}
	done := make(chan struct{})
	fd, err := unix.PidfdOpen(p.PID, unix.PIDFD_NONBLOCK)
	if err != nil {
		if exited(p) {
			close(done)
			return done, func() {}
		}
		// No pidfd for a live process (ENOSYS before Linux 5.3, EMFILE): it was
		// taken for exited; look at it instead.
		pw := &procWatch{refs: 1, stop: make(chan struct{}), done: done}
		w.procs[p] = pw
		go pollProc(p, pw)
		return done, w.releaseProc(p, pw)
	}
	// Check the start time only now that the pidfd pins the process: a pid reused
	// between reading the state and opening the pidfd is caught here.
	if !p.Alive() {
		unix.Close(fd)
		close(done)
		return done, func() {}
	}
	pw := &procWatch{refs: 1, f: os.NewFile(uintptr(fd), "pidfd"), done: done}
	w.procs[p] = pw
	go waitPidfd(pw)
	return done, w.releaseProc(p, pw)
}

func (w *Watcher) releaseProc(p Proc, pw *procWatch) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			pw.refs--
			if pw.refs == 0 {
				if w.procs[p] == pw {
					delete(w.procs, p)
				}
				if pw.f != nil {
					pw.f.Close()
				} else {
					close(pw.stop)
				}
			}
		})
	}
}

// waitPidfd closes pw.done when the process exits; it returns early when pw.f is
// closed. A pidfd becomes readable when its process exits.
func waitPidfd(pw *procWatch) {
	rc, err := pw.f.SyscallConn()
	if err != nil {
		close(pw.done)
		return
	}
	exited := false
	err = rc.Read(func(fd uintptr) bool {
		n, _ := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
		exited = n > 0
		return exited
	})
	if exited || err == nil {
		close(pw.done)
	}
}
