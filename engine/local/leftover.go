package local

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// An app whose supervisor and reaper were both killed (kill -9 of both, an OOM kill)
// can leave processes behind: the replicas' leaders die with the supervisor
// (Pdeathsig), but what they started lives on, in the app's cgroup and in the
// replicas' process groups. Its status reads FAILED ("supervisor died"), and cancel
// and delete stop what is left themselves.

// stopLeftovers kills every process left of the app in dir, whose supervisor is gone:
// the app's cgroup (recorded in its state), and, if no verdict was written (the
// reaper died too), the members of the replicas' recorded process groups that carry
// the replica's environment. It returns what it did, "" when nothing was left.
func stopLeftovers(dir, appID string) (string, error) {
	st, err := readState(dir)
	if err != nil || st.Supervisor.IsZero() || st.Supervisor.Alive() {
		return "", nil // never supervised, or its supervisor stops it
	}
	var did []string
	if st.Cgroup != "" && appCgroup(st.Cgroup, appID) {
		c := &cgroup{dir: st.Cgroup, fd: -1}
		n := len(c.procs())
		kerr := error(nil)
		if n > 0 {
			kerr = c.kill(nil)
		}
		c.remove()
		if n > 0 {
			did = append(did, fmt.Sprintf("killed %s left in its cgroup %s", processes(n), st.Cgroup))
		}
		if kerr != nil {
			return strings.Join(did, "; "), kerr
		}
	}
	if !st.State.Terminal() {
		l, err := readLaunch(dir)
		if err == nil {
			n := 0
			for _, role := range st.Roles {
				for _, r := range role.Replicas {
					mark := replicaMark(l, role.Role, r.ID)
					if r.PID > 0 && mark != "" {
						n += killMarkedGroup(r.PID, mark)
					}
				}
			}
			if n > 0 {
				did = append(did, fmt.Sprintf("killed %s left in its replicas' process groups", processes(n)))
			}
		}
	}
	return strings.Join(did, "; "), nil
}

// appCgroup reports whether dir can be the cgroup the supervisor made for app id
// (newCgroup): a directory wick-ID in the cgroup v2 hierarchy. A state file cannot
// point cancel at another cgroup.
func appCgroup(dir, appID string) bool {
	root, _, err := cgroup2Self()
	if err != nil || filepath.Clean(dir) != dir || filepath.Base(dir) != "wick-"+appID {
		return false
	}
	return strings.HasPrefix(dir, root+string(filepath.Separator))
}

// procs lists the pids in the cgroup.
func (c *cgroup) procs() []int {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// replicaMark is the environment entry that tells a replica's processes from others
// that may have come to use its process group id: its error file, which names the
// app's log directory.
func replicaMark(l *launch, role string, id int) string {
	for _, rr := range l.Request.Roles {
		if rr.Name != role {
			continue
		}
		for _, r := range rr.Replicas {
			if r.ID == id && r.Env[envErrorFile] != "" {
				return envErrorFile + "=" + r.Env[envErrorFile]
			}
		}
	}
	return ""
}

// killMarkedGroup kills the processes of process group pgid whose environment holds
// mark, and returns how many it killed.
func killMarkedGroup(pgid int, mark string) int {
	n := 0
	for _, pid := range markedGroup(pgid, mark) {
		if unix.Kill(pid, unix.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// markedGroup lists the members of process group pgid that carry the replica's
// environment entry mark.
func markedGroup(pgid int, mark string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, err := unix.Getpgid(pid); err != nil || g != pgid {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !hasEnv(env, mark) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// countLeftovers counts the processes left of the app in dir whose supervisor is gone
// without a verdict (st, as read): those stopLeftovers would kill.
func countLeftovers(dir string, st *state) int {
	n := 0
	if st.Cgroup != "" && appCgroup(st.Cgroup, st.AppID) {
		n = len((&cgroup{dir: st.Cgroup, fd: -1}).procs())
	}
	if n > 0 {
		return n // the cgroup holds the replicas' groups too
	}
	l, err := readLaunch(dir)
	if err != nil {
		return 0
	}
	for _, role := range st.Roles {
		for _, r := range role.Replicas {
			if mark := replicaMark(l, role.Role, r.ID); r.PID > 0 && mark != "" {
				n += len(markedGroup(r.PID, mark))
			}
		}
	}
	return n
}

// hasEnv reports whether the NUL-separated environment env holds the entry kv.
func hasEnv(env []byte, kv string) bool {
	for e := range bytes.SplitSeq(env, []byte{0}) {
		if string(e) == kv {
			return true
		}
	}
	return false
}

// processes says "1 process" or "N processes".
func processes(n int) string {
	if n == 1 {
		return "1 process"
	}
	return strconv.Itoa(n) + " processes"
}
