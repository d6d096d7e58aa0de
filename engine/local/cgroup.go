package local

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// An app's cgroup holds every process its replicas start, wherever they go: a
// process that leaves its replica's process group and session (setsid, a daemon's
// double fork) stays in it, and killing the cgroup kills it. It is a cgroup v2
// directory `wick-<app id>` beside the supervisor's own cgroup's children, made
// when the machine lets the supervisor write there (root, or a delegated subtree).
// Elsewhere (no cgroup v2, or no write access) the supervisor falls back to process
// groups and the subreaper, and a process that double-forks out of its group while
// its parent is still alive can escape a cancel.
//
// What can still escape the cgroup: a process that moves itself to another cgroup
// (it needs write access to that cgroup, as root has), and work that a replica asks
// another service to start (a Docker container, systemd-run, ssh to another host).

// cgroupKillWait bounds the wait for a killed cgroup to empty; SIGKILL cannot be
// ignored, so only a process in uninterruptible sleep (a hung NFS mount) takes longer.
const cgroupKillWait = 5 * time.Second

type cgroup struct {
	dir string
	fd  int // the directory, for clone3's CLONE_INTO_CGROUP
}

// newCgroup makes the cgroup of app id, below the cgroup v2 hierarchy's directory of
// the calling process.
func newCgroup(appID string) (*cgroup, error) {
	root, self, err := cgroup2Self()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, self, "wick-"+appID)
	if !strings.HasPrefix(dir, root+string(filepath.Separator)) {
		return nil, fmt.Errorf("cgroup %s is outside %s", dir, root)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("create cgroup: %w", err)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("open cgroup: %w", err)
	}
	return &cgroup{dir: dir, fd: fd}, nil
}

// cgroup2Self returns where the cgroup v2 hierarchy is mounted and the calling
// process's cgroup in it.
func cgroup2Self() (root, self string, err error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(mi))
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		f := strings.Fields(pre)
		if len(f) >= 5 && f[3] == "/" {
			root = f[4]
			break
		}
	}
	if root == "" {
		return "", "", errors.New("no cgroup v2 hierarchy mounted")
	}
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", "", err
	}
	for _, line := range strings.Split(string(cg), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return root, filepath.Clean("/" + p), nil
		}
	}
	return "", "", errors.New("not in a cgroup v2 hierarchy")
}

// kill kills every process in the cgroup, and waits (at most cgroupKillWait) until it
// is empty. reap is called while waiting: killed children of the caller must be
// reaped to leave the cgroup.
func (c *cgroup) kill(reap func()) error {
	if err := os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		// Before Linux 5.14: kill the processes one by one until none is left.
		c.killEach()
	}
	deadline := time.Now().Add(cgroupKillWait)
	for !c.empty() {
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s: processes left after SIGKILL", c.dir)
		}
		if reap != nil {
			reap()
		}
		c.killEach()
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

func (c *cgroup) killEach() {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
}

// empty reports whether no process is left in the cgroup (or it is gone).
func (c *cgroup) empty() bool {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.events"))
	if err != nil {
		return true
	}
	return bytes.Contains(b, []byte("populated 0"))
}

// remove closes the cgroup and removes its directory once it is empty.
func (c *cgroup) remove() {
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
	_ = os.Remove(c.dir)
}

// killCgroupDir is kill and remove for the reaper, which knows only the directory.
func killCgroupDir(dir string) error {
	c := &cgroup{dir: dir, fd: -1}
	err := c.kill(nil)
	c.remove()
	return err
}

// maxMemoryEvents bounds what is read of a cgroup's memory.events.
const maxMemoryEvents = 4 << 10

// oomKills is how many processes of the cgroup the kernel's OOM killer has killed
// (memory.events' oom_kill, cgroup v2), 0 where it cannot be read or c is nil.
func (c *cgroup) oomKills() int {
	if c == nil {
		return 0
	}
	f, err := os.Open(filepath.Join(c.dir, "memory.events"))
	if err != nil {
		return 0
	}
	defer f.Close()
	b := make([]byte, maxMemoryEvents)
	n, _ := f.Read(b)
	for line := range strings.Lines(string(b[:n])) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "oom_kill "); ok {
			k, _ := strconv.Atoi(v)
			return k
		}
	}
	return 0
}
