//go:build unix

package execx

import (
	"os/exec"
	"syscall"
)

func bound(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = 0 // a group of its own, whose id is the command's pid
	cmd.Cancel = func() error {
		// Cancel runs when the context ends while Wait waits for the command: the group
		// holds its id while the command or anything it started lives.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
