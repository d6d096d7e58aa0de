package pycomp

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// limitMemory sets the helper's RLIMIT_DATA (soft and hard: the component cannot raise
// it), which the processes it starts inherit. It runs right after the exec, before
// the interpreter has read its first line. A negative limit sets none.
func limitMemory(pid int, limit int64) error {
	if limit < 0 {
		return nil
	}
	lim := &unix.Rlimit{Cur: uint64(limit), Max: uint64(limit)}
	return unix.Prlimit(pid, unix.RLIMIT_DATA, lim, nil)
}

// waitKillGroup waits for the helper to end, kills what is left of its process group
// (what the component started and left running) while the helper, a zombie not yet
// reaped, still holds the group's id, then reaps it.
func waitKillGroup(cmd *exec.Cmd) error {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return cmd.Wait()
}
