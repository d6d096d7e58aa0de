package local

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// spawner forks the replicas from one OS thread with a file descriptor table of its
// own, which holds only what a fork needs: a fork copies its parent's table, and the
// replica's exec closes every descriptor marked close-on-exec in the copy, one by
// one. The supervisor holds six a replica (its four log files, its two pipes): from a
// thread sharing the supervisor's table, the launch of N replicas closed 3N^2 of
// them (a profile of 1,024: 15% of the launch's CPU in do_close_on_exec), and each
// replica started a thread of its own to fork from.
//
// The thread lives as long as the supervisor: Linux sends a child's parent-death
// signal when the thread that forked it exits (golang/go#27505), so no replica outlives
// the supervisor, and none dies before it.
//
// A fork's descriptors (the replica's stdin, stdout and stderr, and its cgroup's
// directory) cross to the thread's table over a socket (SCM_RIGHTS), each request
// with its own, and are closed there once the replica is forked.
type spawner struct {
	kids *children
	// mu keeps the order of the requests on the socket and on jobs the same.
	mu     sync.Mutex
	sock   int // the supervisor's end of the socket
	theirs int // the thread's end, in the supervisor's table until the thread has its own
	jobs   chan *spawnJob
	ready  chan error // the thread's start; nil once taken (usable)
	err    error      // why the thread could not start
}

// spawnJob is one fork: the descriptors in attr.Files (and attr.Sys.CgroupFD) are
// the supervisor's, sent with the request; the spawner's copies replace them.
type spawnJob struct {
	argv0 string
	argv  []string
	attr  syscall.ProcAttr
	sys   syscall.SysProcAttr
	done  chan spawnResult
}

// spawnResult is how a fork went: the child's pid and its status's channel, or why
// it could not be forked.
type spawnResult struct {
	pid    int
	exited <-chan unix.WaitStatus
	err    error
}

// spawnQueue bounds the requests sent and not yet forked (their descriptors in
// flight on the socket).
const spawnQueue = 16

// newSpawner starts the spawner's thread, without waiting for it: the first fork
// does (usable).
func newSpawner(kids *children) (*spawner, error) {
	// The runtime's poller (its epoll and eventfd descriptors) is made before the
	// thread's table is copied: the thread may run the poller (a GC it starts), and
	// keeps both.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	sp := &spawner{kids: kids, sock: fds[0], theirs: fds[1], jobs: make(chan *spawnJob, spawnQueue), ready: make(chan error, 1)}
	go sp.loop(fds[1], sp.ready)
	return sp, nil
}

// usable waits for the thread's start (once) and reports whether it forks; if not,
// err says why, and the replicas are forked as before, each from a thread of its
// own (startThread). Not safe for concurrent use.
func (sp *spawner) usable() bool {
	if sp.ready != nil {
		sp.err = <-sp.ready
		sp.ready = nil
		unix.Close(sp.theirs) // the thread has its own copy, or none is needed
		if sp.err != nil {
			unix.Close(sp.sock)
		}
	}
	return sp.err == nil
}

// loop is the spawner's thread: it takes a table of its own, keeps of it only what
// it needs, and forks the requests as they come. It never returns.
func (sp *spawner) loop(sock int, ready chan<- error) {
	runtime.LockOSThread() // for good: the thread ends only with the process
	if err := unix.Unshare(unix.CLONE_FILES); err != nil {
		ready <- err
		return
	}
	if err := keepOnly(sock); err != nil {
		ready <- err // this thread forks nothing
		return
	}
	ready <- nil
	for {
		fds, err := recvFDs(sock)
		job := <-sp.jobs
		if err != nil {
			job.done <- spawnResult{err: &execError{file: job.argv0, err: err}}
			continue
		}
		job.done <- sp.fork(job, fds)
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
}

// fork forks job with the spawner's copies of its descriptors, fds: its files, then
// its cgroup's directory if it has one.
func (sp *spawner) fork(job *spawnJob, fds []int) spawnResult {
	n := len(job.attr.Files)
	if len(fds) != n+btoi(job.sys.UseCgroupFD) {
		return spawnResult{err: &execError{file: job.argv0, err: errors.New("spawner: descriptors lost in transit")}}
	}
	attr, sys := job.attr, job.sys
	attr.Sys = &sys
	attr.Files = make([]uintptr, n)
	for i := range n {
		attr.Files[i] = uintptr(fds[i])
	}
	if sys.UseCgroupFD {
		sys.CgroupFD = fds[n]
	}
	pid, exited, err := forkReplica(sp.kids, job.argv0, job.argv, &attr)
	return spawnResult{pid: pid, exited: exited, err: err}
}

// start asks for a fork of argv0 with attr, whose descriptors stay the caller's (it
// may close them once start returns), and returns the channel of its result.
func (sp *spawner) start(argv0 string, argv []string, attr *syscall.ProcAttr) <-chan spawnResult {
	job := &spawnJob{argv0: argv0, argv: argv, attr: *attr, done: make(chan spawnResult, 1)}
	if attr.Sys != nil {
		job.sys = *attr.Sys
	}
	fds := make([]int, 0, len(attr.Files)+1)
	for _, f := range attr.Files {
		fds = append(fds, int(f))
	}
	if job.sys.UseCgroupFD {
		fds = append(fds, job.sys.CgroupFD)
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.jobs <- job
	rights := unix.UnixRights(fds...)
	var err error
	for {
		err = unix.Sendmsg(sp.sock, []byte{0}, rights, nil, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		// The request goes without descriptors: the thread fails it.
		for unix.Sendmsg(sp.sock, []byte{1}, nil, nil, 0) == unix.EINTR {
		}
	}
	return job.done
}

// recvFDs receives one request and the descriptors it carries, close-on-exec.
func recvFDs(sock int) ([]int, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(8*4))
	for {
		_, oobn, _, _, err := unix.Recvmsg(sock, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return nil, err
		}
		var fds []int
		for _, m := range msgs {
			got, err := unix.ParseUnixRights(&m)
			if err != nil {
				continue
			}
			fds = append(fds, got...)
		}
		if buf[0] != 0 {
			for _, fd := range fds {
				unix.Close(fd)
			}
			return nil, errors.New("spawner: the request's descriptors could not be sent")
		}
		return fds, nil
	}
}

// keepOnly closes, in the calling thread's table, every descriptor but 0-2, keep,
// and the runtime's poller's (its epoll and eventfd).
func keepOnly(keep int) error {
	const dir = "/proc/thread-self/fd"
	d, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	var fds []int
	buf := make([]byte, 4096)
	for {
		n, err := unix.ReadDirent(d, buf)
		if err != nil {
			unix.Close(d)
			return err
		}
		if n == 0 {
			break
		}
		_, _, names := unix.ParseDirent(buf[:n], -1, nil)
		for _, name := range names {
			if fd, err := strconv.Atoi(name); err == nil && fd > 2 && fd != keep && fd != d {
				fds = append(fds, fd)
			}
		}
	}
	unix.Close(d)
	link := make([]byte, 64)
	for _, fd := range fds {
		n, err := unix.Readlink(dir+"/"+strconv.Itoa(fd), link)
		if err == nil {
			switch string(link[:n]) {
			case "anon_inode:[eventpoll]", "anon_inode:[eventfd]":
				continue
			}
		}
		unix.Close(fd)
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
