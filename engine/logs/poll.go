package logs

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// When the kernel refuses inotify (a user's instances are capped at 128 by default,
// watches at fs.inotify.max_user_watches; a busy node or a dozen followers reach the
// first) or a pidfd (a kernel before 5.3, a process out of descriptors), a watch falls
// back to looking every so often instead of failing: a follow, a wait or a handover
// that said "too many open files", or took a live process for an exited one, now goes
// on, at worst pollMax late.
const (
	pollMin = 25 * time.Millisecond
	pollMax = 500 * time.Millisecond
)

// refused reports whether err is the kernel declining a resource wick can do without
// (inotify instances or watches, descriptors, memory, the call itself), rather than a
// path that cannot be watched.
func refused(err error) bool {
	return errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) || errors.Is(err, unix.ENOSPC) ||
		errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.ENOSYS)
}

// stamp is what a look at a path compares: any write, create, rename or delete in it
// changes one of these.
type stamp struct {
	dev, ino    uint64
	size        int64
	mtime, ctim unix.Timespec
}

func look(path string) (stamp, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return stamp{}, err
	}
	return stamp{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim, ctim: st.Ctim}, nil
}

// pollAdd watches path by looking at it: Changed when its stamp changes, Gone when it
// is deleted or replaced. The goroutine ends with Close or Gone.
func pollAdd(path string) (*Watch, error) {
	first, err := look(path)
	if err != nil {
		return nil, err
	}
	wt := &Watch{c: make(chan struct{}, 1), stop: make(chan struct{})}
	go wt.poll(path, first)
	return wt, nil
}

// poll looks at path every pollMin after a change, backing off to pollMax while
// nothing changes.
func (w *Watch) poll(path string, last stamp) {
	interval := pollMin
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		now, err := look(path)
		switch {
		case err != nil || now.dev != last.dev || now.ino != last.ino:
			w.notify(Changed | Gone)
			return
		case now != last:
			last, interval = now, pollMin
			w.notify(Changed)
		default:
			interval = min(2*interval, pollMax)
		}
		t.Reset(interval)
	}
}

// pollProc closes pw.done when p is no longer alive, looking every so often, or ends
// when pw.stop is closed.
func pollProc(p Proc, pw *procWatch) {
	interval := pollMin
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-pw.stop:
			return
		case <-t.C:
		}
		if exited(p) {
			close(pw.done)
			return
		}
		interval = min(2*interval, pollMax)
		t.Reset(interval)
	}
}

// exited reports whether p is no longer alive, knowingly: a look the kernel refused
// (no descriptor left to read /proc with) says nothing.
func exited(p Proc) bool {
	ok, err := p.alive()
	return !ok && !refused(err)
}
