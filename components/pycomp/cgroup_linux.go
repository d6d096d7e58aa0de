package pycomp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupRoot is where the kernel's cgroup file systems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// helperCgroup is a cgroup of the helper's own, where there is one this process may
// make: a process the component starts stays in it whatever it does to its process
// group or session (setsid), so that the helper's end kills everything it left.
type helperCgroup struct{ dir string }

// joinCgroup makes a cgroup for the helper pid, beside nothing and below this
// process's own (cgroup v2: the unified hierarchy; v1: the pids hierarchy, which
// every kernel with cgroups has), and moves pid into it. It returns nil where none
// can be made (no cgroup file system, no right to write there: an unprivileged user
// without a delegated subtree): the process group then is all there is. It runs right
// after the exec, before the interpreter can have started anything.
func joinCgroup(pid int) *helperCgroup {
	base, err := ownCgroup()
	if err != nil {
		return nil
	}
	dir := filepath.Join(base, "wick-helper-"+strconv.Itoa(pid))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		_ = os.Remove(dir)
		return nil
	}
	return &helperCgroup{dir: dir}
}

// ownCgroup is the directory of this process's cgroup: in the unified hierarchy when
// it is mounted at cgroupRoot (cgroup v2), else in v1's pids hierarchy.
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	v2 := fileExists(filepath.Join(cgroupRoot, "cgroup.controllers"))
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// "ID:CONTROLLERS:PATH" (cgroups(7)); v2's line is "0::PATH".
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case v2 && f[0] == "0" && f[1] == "":
			return filepath.Join(cgroupRoot, filepath.Clean("/"+f[2])), nil
		case !v2 && hasController(f[1], "pids"):
			return filepath.Join(cgroupRoot, "pids", filepath.Clean("/"+f[2])), nil
		}
	}
	return "", errors.New("no cgroup to make the helper's in")
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// killAll kills every process left in the cgroup, until none is (a process may fork
// while the others die: 100 rounds at most, 10 ms apart), then removes it. It is safe
// on a nil cgroup.
func (c *helperCgroup) killAll() error {
	if c == nil {
		return nil
	}
	for range 100 {
		b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
		if err != nil {
			return fmt.Errorf("helper cgroup: %w", err)
		}
		pids := strings.Fields(string(b))
		if len(pids) == 0 {
			return os.Remove(c.dir)
		}
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("helper cgroup %s: processes still in it after 1 s of SIGKILL", c.dir)
}
