package local

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// children reaps the supervisor's children in one place: those it forked (replicas,
// the reaper), each status going to whoever started it, and the orphans of the app
// it adopted as a child subreaper (a replica's daemon), whose statuses are dropped.
// Any other child is another part of the program's (an exec.Cmd: the on_end hook),
// and left to it: its owner waits for it and must get its status.
type children struct {
	mu      sync.Mutex
	waiters map[int]chan unix.WaitStatus
	// groups are the process groups of the children forked in groups of their own
	// (the replicas): a process in one is the app's.
	groups map[int]bool
	// cgroup is the name of the app's cgroup ("" where it has none): a process in it
	// is the app's.
	cgroup string
	// sid is the supervisor's session. Its own children stay in it; a process that
	// started a session of its own is a daemon of the app.
	sid int
	// beforeReap, if set, is called with a waited-for child that has exited but is
	// not reaped yet: while it is a zombie its pid, and so its process group's id,
	// cannot be reused, so the group can be signalled without hitting a stranger.
	beforeReap func(pid int)
}

func newChildren() *children {
	sid, _ := unix.Getsid(0)
	return &children{waiters: map[int]chan unix.WaitStatus{}, groups: map[int]bool{}, sid: sid}
}

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
	if attr.Sys != nil && attr.Sys.Setpgid && attr.Sys.Pgid == 0 {
		c.groups[pid] = true
	}
	return pid, ch, nil
}

// reap collects every exited child of its own, without blocking. Statuses of
// children nobody waits for (adopted orphans) are dropped.
//
// Each child is first looked at (waitid with WNOWAIT: it stays a zombie), then
// beforeReap sees it if it is waited for, and only then is that one child reaped
// (wait4 of its pid). A scan of the waiters followed by a wait for any child would
// reap a child that exited between the two without beforeReap. A child that is not
// its own hides the others from waitid of any child (it is the one returned until
// its owner reaps it): those are then looked at one by one (reapEach).
func (c *children) reap() {
	for {
		pid := nextZombie()
		if pid <= 0 {
			return
		}
		if !c.ours(pid) {
			c.reapEach()
			return
		}
		c.collect(pid)
	}
}

// reapEach collects those of the supervisor's children that are its own and have
// exited, looking at each child by its pid.
func (c *children) reapEach() {
	for _, pid := range childPids() {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		for err == unix.EINTR {
			err = unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		}
		if err == nil && info.Signo != 0 && c.ours(pid) {
			c.collect(pid)
		}
	}
}

// collect reaps one exited child of its own, and hands its status to its waiter.
func (c *children) collect(pid int) {
	c.mu.Lock()
	_, waited := c.waiters[pid]
	c.mu.Unlock()
	if waited && c.beforeReap != nil {
		c.beforeReap(pid)
	}
	var ws unix.WaitStatus
	got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	for err == unix.EINTR {
		got, err = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	}
	if err != nil || got != pid {
		return // reaped by someone else in between (ECHILD)
	}
	c.mu.Lock()
	ch := c.waiters[pid]
	delete(c.waiters, pid)
	c.mu.Unlock()
	if ch != nil {
		ch <- ws
	}
}

// ours says whether the child pid (alive or a zombie) is the supervisor's to reap:
// one it forked, or one of the app's that it adopted: in a replica's process group,
// in the app's cgroup, or in a session of its own.
func (c *children) ours(pid int) bool {
	c.mu.Lock()
	_, waited := c.waiters[pid]
	c.mu.Unlock()
	if waited {
		return true
	}
	pgrp, sid, ok := procGroup(pid)
	if !ok {
		return false
	}
	c.mu.Lock()
	inGroup := c.groups[pgrp]
	c.mu.Unlock()
	if inGroup || sid != c.sid {
		return true
	}
	return c.cgroup != "" && inCgroup(pid, c.cgroup)
}

// procGroup reads the process group and session of pid from /proc/PID/stat (a
// zombie's too).
func procGroup(pid int) (pgrp, sid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid pgrp session ...: comm may hold anything, even ")".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 4 {
		return 0, 0, false
	}
	pgrp, err1 := strconv.Atoi(f[2])
	sid, err2 := strconv.Atoi(f[3])
	return pgrp, sid, err1 == nil && err2 == nil
}

// inCgroup says whether pid is in the cgroup v2 named name (the last element of its
// path).
func inCgroup(pid int, name string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if path, ok := strings.CutPrefix(line, "0::"); ok {
			return strings.HasSuffix(path, "/"+name)
		}
	}
	return false
}

// childPids lists the calling process's children, zombies included: those of each
// of its threads.
func childPids() []int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", t.Name(), "children"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// nextZombie returns the pid of a child that has exited and is not reaped yet, or 0
// when there is none (or no child at all). The child stays a zombie.
func nextZombie() int {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || info.Signo == 0 {
			return 0
		}
		return siginfoPid(&info)
	}
}

// siginfoPid returns si_pid of a siginfo_t filled by waitid; x/sys's Siginfo leaves
// it in its padding. It follows si_signo, si_errno and si_code, padded to the
// alignment of the union after them: offset 16 on 64-bit Linux, 12 on 32-bit
// (include/uapi/asm-generic/siginfo.h, __ARCH_SI_PREAMBLE_SIZE).
func siginfoPid(info *unix.Siginfo) int {
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(info), siPidOffset)))
}

// siPidOffset is the offset of si_pid in siginfo_t.
const siPidOffset = 3*4 + (unsafe.Sizeof(uintptr(0)) - 4)

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
		if _, over := env[k]; over || k == envReadyFD || k == envGoFD || k == envReaper {
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
