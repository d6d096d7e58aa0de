// Package inplace holds the UI's actions that run something where an app's replicas
// run, suspending the UI while it runs (tea.Exec) and coming back when it ends: a
// shell in a replica's place (wick exec) and the Python stack of every rank (wick
// stack), in the log wall and the describe view.
package inplace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/common"
)

// The actions.
const (
	ActShell common.ActionName = "shell"
	ActStack common.ActionName = "stack"
)

// Actions are the rows of the action table for views of kind kind: ! opens a shell
// where the replica runs (the wall's focused pane's, describe's first running one), P
// shows every rank's Python stack in a pager.
func Actions(kind common.Kind) []common.Action {
	return []common.Action{
		common.NewAction(ActShell, "shell where the replica runs (wick exec; exit comes back)", []string{"!"}, false, kind),
		common.NewAction(ActStack, "Python stack of every rank (wick stack, in $PAGER)", []string{"P"}, false, kind),
	}
}

// Execer is what the actions need of the engine beyond common.Backend: the Runner.
type Execer interface {
	Exec(ctx context.Context, h spec.Handle, role string, k int, req sched.ExecRequest) (sched.Command, error)
	Self() []string
}

// Shell suspends the UI and opens $SHELL in the place of replica ROLE/k of h; a
// notice says how it ended. The command is prepared off the UI loop (it asks the
// scheduler where the replica is).
func Shell(c *common.Context, h spec.Handle, role string, k int) tea.Cmd {
	return func() tea.Msg {
		cmd, err := ShellCommand(c, h, role, k)
		if err != nil {
			return common.NoticeMsg{Text: err.Error(), Err: true}
		}
		return tea.Exec(cmd, ended(fmt.Sprintf("shell in %s/%d", role, k)))()
	}
}

// ShellCommand is the command Shell runs: $SHELL in the replica's place, with a
// terminal of its own where it needs one (a container, a node).
func ShellCommand(c *common.Context, h spec.Handle, role string, k int) (sched.Command, error) {
	e, ok := c.Backend.(Execer)
	if !ok {
		return nil, errors.New("this engine cannot run commands where replicas run")
	}
	return e.Exec(c.Ctx, h, role, k, sched.ExecRequest{Shell: os.Getenv("SHELL"), TTY: true})
}

// StackCommand is the command the stack action runs: `wick stack --full HANDLE`, its
// output in the user's pager ($PAGER, else less), handle passed as an argument.
func StackCommand(ctx context.Context, self []string, h spec.Handle) *exec.Cmd {
	argv := append([]string{"-c", `"$@" 2>&1 | "${PAGER:-less}"`, "wick-stack"}, self...)
	argv = append(argv, "stack", "--full", h.String())
	cmd := exec.CommandContext(ctx, "/bin/sh", argv...)
	cmd.WaitDelay = execWaitDelay
	return cmd
}

// execWaitDelay bounds the wait for a command's output after it ended.
const execWaitDelay = 500 * time.Millisecond

// Stack suspends the UI and shows every rank's Python stack of h in the pager.
func Stack(c *common.Context, h spec.Handle) tea.Cmd {
	e, ok := c.Backend.(Execer)
	if !ok || len(e.Self()) == 0 {
		return common.NotifyErr(errors.New("this engine cannot run wick stack"))
	}
	return tea.Exec(sched.ProcessCommand(StackCommand(c.Ctx, e.Self(), h)), ended("wick stack"))
}

// ended is the callback of a suspended command: a notice of how it ended.
func ended(what string) tea.ExecCallback {
	return func(err error) tea.Msg {
		var exit *sched.ExitError
		switch {
		case err == nil:
			return common.NoticeMsg{Text: what + " ended"}
		case errors.As(err, &exit):
			return common.NoticeMsg{Text: fmt.Sprintf("%s exited with status %d", what, exit.Code)}
		}
		return common.NoticeMsg{Text: what + ": " + err.Error(), Err: true}
	}
}
