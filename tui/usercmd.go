package tui

import (
	"fmt"
	"os"
	"os/exec"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/tui/apps"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/wall"
)

// userCommandShell runs a user command ($1, named $2) through sh -c in the terminal
// the UI gives up for it, then says how it ended and waits for enter: the output of a
// command that prints and exits (nvidia-smi) would otherwise be gone at once, under
// the UI drawn again. The command is an argument, never spliced into this script.
const userCommandShell = `sh -c "$1"; s=$?; printf '\n[%s exited %d: enter goes back to wick] ' "$2" "$s"; read _ || true`

// userActions are the rows of the user's commands in the action table: in the app
// list and the wall, no keys until [keys] gives them, each in ? and the palette.
func userActions(cmds []UserCommand) []common.Action {
	rows := make([]common.Action, 0, len(cmds))
	for _, c := range cmds {
		rows = append(rows, common.NewAction(common.ActionName(c.Name), "run: "+c.Command, nil, false, apps.Kind, wall.Kind))
	}
	return rows
}

// userCommands indexes cmds by name.
func userCommands(cmds []UserCommand) map[common.ActionName]UserCommand {
	out := make(map[common.ActionName]UserCommand, len(cmds))
	for _, c := range cmds {
		out[common.ActionName(c.Name)] = c
	}
	return out
}

// runUserCommand runs c on the active view's target (the selected app, the focused
// pane's replica) in the terminal, the target in its WICK_* variables, and comes back.
func (m *Model) runUserCommand(c UserCommand) tea.Cmd {
	tv, ok := m.active().(common.Targeter)
	var t common.Target
	if ok {
		t, ok = tv.Target()
	}
	if !ok {
		return common.Notify(c.Name + ": select an app first")
	}
	cmd := exec.Command("sh", "-c", userCommandShell, "sh", c.Command, c.Name)
	cmd.Env = append(os.Environ(), t.Env()...)
	return tea.ExecProcess(cmd, func(err error) tea.Msg {
		if err != nil {
			return common.NoticeMsg{Text: fmt.Sprintf("%s: %v", c.Name, err), Err: true}
		}
		return common.NoticeMsg{Text: c.Name + " ran on " + t.Handle.AppID}
	})
}
