package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// children reaps every child of the supervisor in one place. The supervisor is a
// child subreaper, so orphaned grandchildren become its children too; waiting for
// any child (wait4(-1)) collects them, and the status of a replica goes to whoever
// started it.
type children struct {
	mu      sync.Mutex
	waiters map[int]chan unix.WaitStatus
	// beforeReap, if set, is called with a waited-for child that has exited but is
	// not reaped yet: while it is a zombie its pid, and so its process group's id,
	// cannot be reused, so the group can be signalled without hitting a stranger.
	beforeReap func(pid int)
}

func newChildren() *children { return &children{waiters: map[int]chan unix.WaitStatus{}} }

// fork starts a child and registers it before any wait can collect it: the reaping
// loop may reap the child as soon as it exits, but it cannot hand the status over
// before fork releases the lock, and by then the waiter is registered.
func (c *children) fork(argv0 string, argv []string, attr *syscall.ProcAttr) (int, <-chan unix.WaitStatus, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pid, err := syscall.ForkExec(argv0, argv, attr)
	if err != nil {
		return 0, nil, err
	}
	ch := make(chan unix.WaitStatus, 1)
	c.waiters[pid] = ch
	return pid, ch, nil
}

// reap collects every exited child, without blocking. Statuses of children nobody
// waits for (adopted orphans) are dropped.
func (c *children) reap() {
	if c.beforeReap != nil {
		c.mu.Lock()
		pids := make([]int, 0, len(c.waiters))
		for pid := range c.waiters {
			pids = append(pids, pid)
		}
		c.mu.Unlock()
		for _, pid := range pids {
			var info unix.Siginfo
			// WNOWAIT: look, leave it a zombie.
			err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
			if err == nil && info.Signo != 0 {
				c.beforeReap(pid)
			}
		}
	}
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		c.mu.Lock()
		ch := c.waiters[pid]
		delete(c.waiters, pid)
		c.mu.Unlock()
		if ch != nil {
			ch <- ws
		}
	}
}

// exitCode turns a wait status into an exit code: the program's own, or 128+N when
// it was killed by signal N (the shell's convention, also Docker's).
func exitCode(ws unix.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// startThread runs fn on a goroutine locked to a fresh OS thread that ends with it.
// Linux sends a child's parent-death signal when the *thread* that forked it exits
// (golang/go#27505), not the process; a replica forked from a goroutine that the
// runtime may move between threads, and whose thread may later exit, would be killed
// at a random time. fn forks the replica and waits for it, so the thread lives
// exactly as long as the replica. The goroutine never unlocks: when it returns, the
// runtime ends the thread, and the replica is already dead by then.
func startThread(fn func()) {
	go func() {
		runtime.LockOSThread()
		fn()
	}()
}

// lookPath finds the program to execute for a replica: a path with a slash is used
// as is (relative to the replica's directory); a bare name is looked up in the
// replica's PATH. The error reads like a shell's.
func lookPath(file, pathEnv, dir string) (string, error) {
	if strings.ContainsRune(file, '/') {
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, file)
		}
		return file, nil
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		if p := filepath.Join(d, file); isExecutable(p) {
			return p, nil
		}
	}
	return "", &execError{file: file, err: errNotFound}
}

var errNotFound = errors.New("executable file not found in $PATH")

// execError is a replica program that could not be started.
type execError struct {
	file string
	err  error
}

func (e *execError) Error() string { return fmt.Sprintf("exec %s: %v", e.file, e.err) }
func (e *execError) Unwrap() error { return e.err }

// code is the exit code of a replica that could not start: 127 when the program does
// not exist, 126 otherwise (as a shell reports it).
func (e *execError) code() int {
	if errors.Is(e.err, errNotFound) || errors.Is(e.err, unix.ENOENT) {
		return 127
	}
	return 126
}

// mergeEnv overlays env on base (KEY=VALUE strings), dropping the variables that only
// concern the supervisor.
func mergeEnv(base []string, env map[string]string) []string {
	out := make([]string, 0, len(base)+len(env))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, over := env[k]; over || k == envReadyFD || k == envReaper {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// killGroup signals a process group, ignoring a group that is already gone.
func killGroup(pgid int, sig unix.Signal) {
	if pgid > 0 {
		_ = unix.Kill(-pgid, sig)
	}
}

// devNull opens /dev/null for replicas' stdin.
func devNull() (*os.File, error) { return os.Open(os.DevNull) }
