// Package appops holds the actions on one app that the app list and the describe view
// share: logs, cancel and delete (each confirmed), and relaunch.
package appops

import (
	"errors"
	"fmt"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/launch"
)

// Done reports the end of a cancel or delete to the view that asked.
type Done struct {
	common.ViewID
	Verb   string // "cancelled" or "deleted"
	Handle string
	Err    error
}

// Notice is the status-line message for d.
func (d Done) Notice() tea.Cmd {
	if d.Err != nil {
		err := d.Err
		if errors.Is(err, sched.ErrRunning) {
			err = fmt.Errorf("%w: cancel it first (x)", err)
		}
		return common.NotifyErr(fmt.Errorf("%s: %w", d.Handle, err))
	}
	return common.Notify(d.Verb + " " + d.Handle)
}

// Act runs action on the app h, last seen in state st, for the view id. It reports
// false for actions that are not about one app.
func Act(ctx *common.Context, id common.ViewID, action string, h spec.Handle, st spec.AppState) (tea.Cmd, bool) {
	b, parent := ctx.Backend, ctx.Ctx
	switch action {
	case common.ActLogs:
		return func() tea.Msg { return common.OpenLogsMsg{Handle: h.String()} }, true
	case common.ActRelaunch:
		return common.Push(launch.Relaunch(ctx, h)), true
	case common.ActCancel:
		if st.Terminal() {
			return common.Notify(h.String() + " has already ended (" + st.String() + ")"), true
		}
		return common.Confirm(fmt.Sprintf("Cancel %s? Its replicas get SIGTERM, then SIGKILL.", h), func() tea.Msg {
			return Done{ViewID: id, Verb: "cancelled", Handle: h.String(), Err: b.Cancel(parent, h)}
		}), true
	case common.ActDelete:
		if !st.Terminal() {
			return common.NotifyErr(fmt.Errorf("%s is %s: cancel it first (x), then delete", h, st)), true
		}
		return common.Confirm(fmt.Sprintf("Delete %s? Its state and logs are removed.", h), func() tea.Msg {
			return Done{ViewID: id, Verb: "deleted", Handle: h.String(), Err: b.Delete(parent, h, false)}
		}), true
	}
	return nil, false
}
