// Package execx bounds the outside commands wick runs and waits for (Slurm's client
// commands, nvidia-smi, the user's python3): each runs in a process group of its own,
// killed as a whole when the command's context ends, and Wait gives up on its output
// pipes WaitDelay after it exited or was killed, so that a child it left behind holding
// the pipes (a site's shell wrapper around squeue that started something in the
// background) cannot hold wick.
package execx

import (
	"os/exec"
	"time"
)

// WaitDelay is how long Wait waits for a command's stdout and stderr to close once the
// command has exited or been killed. What a command writes reaches the pipe before it
// exits; only a process it left behind keeps the pipe open after.
const WaitDelay = 500 * time.Millisecond

// Bound prepares cmd, made by exec.CommandContext and not started: its own process
// group (on Unix), killed with SIGKILL as a whole when the context ends, and
// WaitDelay. It keeps what cmd.SysProcAttr already asks for.
func Bound(cmd *exec.Cmd) {
	cmd.WaitDelay = WaitDelay
	bound(cmd)
}
