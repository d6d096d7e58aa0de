package sched

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/wick-dev/wick/engine/spec"
)

// Execer is implemented by schedulers that can run a command in a replica's own place,
// as `wick exec` and the UI's shell key do: its working directory and environment (the
// local schedulers), its container (local_docker), its node within its job (slurm).
type Execer interface {
	// Exec prepares req to run in the replica's place. The command runs when Run is
	// called and is bound by ctx, which must outlive it.
	Exec(ctx context.Context, appID, role string, replica int, req ExecRequest) (Command, error)
}

// ExecRequest is what to run in a replica's place.
type ExecRequest struct {
	// Argv is the command and its arguments, run as they are (no shell). Empty opens
	// a shell: Shell where the replica's place is this machine's file system, else
	// the place's bash, else its /bin/sh.
	Argv []string
	// Shell is the caller's $SHELL ("" for /bin/sh).
	Shell string
	// TTY asks for a terminal: the caller's stdin is one, and the command is
	// interactive (a container's or a node's shell gets a terminal of its own).
	TTY bool
}

// Command is a command ready to run in a replica's place. Its methods are Bubble Tea's
// tea.ExecCommand, so that the UI can suspend while it runs.
type Command interface {
	SetStdin(io.Reader)
	SetStdout(io.Writer)
	SetStderr(io.Writer)
	// Run runs the command to its end. A command that ran and exited non-zero is an
	// *ExitError.
	Run() error
}

// ExitError is a command that ran in a replica's place and exited with Code.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return "exit status " + strconv.Itoa(e.Code) }

// ErrNoExec is wrapped when the app's scheduler cannot run commands in its replicas'
// places.
var ErrNoExec = errors.New("the scheduler cannot run commands where its replicas run")

// ErrNoReplica and ErrNoRole are wrapped when a replica named by the user is not the
// app's: bad input.
var (
	ErrNoReplica = errors.New("no replica")
	ErrNoRole    = errors.New("no role")
)

// RunningReplica finds the replica ROLE/k of the app d describes and checks that it
// runs, with one-line errors a user can act on: no such role or replica (naming those
// there are), an app that ended, a replica that is not running.
func RunningReplica(d *Description, role string, k int) (*spec.ReplicaStatus, error) {
	st := &d.Status
	var roles []string
	for i := range st.Roles {
		r := &st.Roles[i]
		roles = append(roles, r.Role)
		if r.Role != role {
			continue
		}
		var ids []string
		for j := range r.Replicas {
			rep := &r.Replicas[j]
			ids = append(ids, strconv.Itoa(rep.ID))
			if rep.ID != k {
				continue
			}
			switch {
			case st.State.Terminal():
				return nil, fmt.Errorf("the app has ended (%s): there is no process to run in", st.State)
			case rep.State != spec.Running:
				return nil, fmt.Errorf("%s/%d is not running (%s)", role, k, rep.State)
			}
			return rep, nil
		}
		return nil, fmt.Errorf("%w %s/%d (%s has %s)", ErrNoReplica, role, k, role, strings.Join(ids, ", "))
	}
	slices.Sort(roles)
	return nil, fmt.Errorf("%w %q (roles: %s)", ErrNoRole, role, strings.Join(roles, ", "))
}

// ProcessCommand is the Command of a process of this machine (made by
// exec.CommandContext, not started): a local replica's place, or the srun or
// client that reaches the replica's. It stays in wick's process group, so that an
// interactive shell is in the terminal's foreground as wick is.
func ProcessCommand(cmd *exec.Cmd) Command { return &processCommand{cmd} }

type processCommand struct{ cmd *exec.Cmd }

func (c *processCommand) SetStdin(r io.Reader)  { c.cmd.Stdin = r }
func (c *processCommand) SetStdout(w io.Writer) { c.cmd.Stdout = w }
func (c *processCommand) SetStderr(w io.Writer) { c.cmd.Stderr = w }

func (c *processCommand) Run() error {
	if c.cmd.Err != nil {
		return c.cmd.Err // not found: its message names it
	}
	err := c.cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code := exit.ExitCode()
		if code < 0 { // ended by a signal
			if ws, ok := exit.Sys().(interface{ Signal() syscall.Signal }); ok {
				code = 128 + int(ws.Signal())
			}
		}
		return &ExitError{Code: code}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", c.cmd.Args[0], err)
	}
	return nil
}

// HostPIDer is implemented by schedulers whose replicas run on this machine under
// process ids the status does not give (local_docker's containers): the host's pid
// of each running replica's first process, for tools that read processes from the
// host (wick stack's sampler).
type HostPIDer interface {
	HostPIDs(ctx context.Context, appID string) (map[ReplicaKey]int, error)
}

// SelfRunner is implemented by schedulers whose replicas run on other machines
// (slurm): it runs wick itself (args: one of its hidden verbs) in a replica's place,
// wick's binary made available there as the scheduler can, and returns what it
// printed on stdout. wick stack reads a replica's stacks so with wick's own reader.
type SelfRunner interface {
	RunSelf(ctx context.Context, appID, role string, replica int, args []string) ([]byte, error)
}

// ErrNoSelf is wrapped when wick cannot be run in a replica's place (the scheduler
// cannot, or its node has no wick and it could not be copied there): the caller uses
// the tools there instead.
var ErrNoSelf = errors.New("wick cannot run where the replica runs")
