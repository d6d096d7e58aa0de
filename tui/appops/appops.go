// Package appops holds the actions on one app that the app list and the describe view
// share: logs, cancel, delete and relaunch (each confirmed), and relaunch with edits.
package appops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/launch"
)

// The actions on one app.
const (
	ActLogs     = "logs"
	ActCancel   = "cancel"
	ActDelete   = "delete"
	ActRelaunch = "relaunch"
	ActEdit     = "relaunch-edit"
)

// Actions are the rows of the action table for the actions on one app, in views of
// kind kind (the app list and describe list them among their own).
func Actions(kind common.Kind) []common.Action {
	return []common.Action{
		common.NewAction(ActLogs, "logs", []string{"l"}, true, kind),
		common.NewAction(ActCancel, "cancel", []string{"x"}, true, kind),
		common.NewAction(ActDelete, "delete", []string{"D"}, true, kind),
		common.NewAction(ActRelaunch, "relaunch", []string{"r"}, true, kind),
		common.NewAction(ActEdit, "relaunch with edits", []string{"e", "R"}, false, kind),
	}
}

// The verbs of Done.
const (
	VerbCancelled = "cancelled"
	VerbDeleted   = "deleted"
)

// Done reports the end of a cancel or delete to the view that asked.
type Done struct {
	common.ViewID
	Verb   string // VerbCancelled or VerbDeleted
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
func Act(ctx *common.Context, id common.ViewID, action common.ActionName, h spec.Handle, st spec.AppState) (tea.Cmd, bool) {
	b, parent := ctx.Backend, ctx.Ctx
	switch action {
	case ActLogs:
		return func() tea.Msg { return common.OpenLogsMsg{Handle: h.String()} }, true
	case ActRelaunch:
		// The view is made here, not in the confirmation's command: views get their
		// ids on the UI's goroutine.
		v := launch.Relaunch(ctx, h)
		return common.Confirm(fmt.Sprintf("Relaunch %s as is? The same AppDef and run options, on %s.", h, h.Scheduler),
			common.Push(v)), true
	case ActEdit:
		find := ctx.Find
		return func() tea.Msg { return readEdit(parent, b, find, h) }, true
	case ActCancel:
		if st.Terminal() {
			return common.Notify(h.String() + " has already ended (" + st.String() + ")"), true
		}
		return common.Confirm(fmt.Sprintf("Cancel %s? Its replicas get SIGTERM, then SIGKILL.", h), func() tea.Msg {
			return Done{ViewID: id, Verb: VerbCancelled, Handle: h.String(), Err: b.Cancel(parent, h)}
		}), true
	case ActDelete:
		if !st.Terminal() {
			return common.NotifyErr(fmt.Errorf("%s is %s: cancel it first (x), then delete", h, st)), true
		}
		return common.Confirm(fmt.Sprintf("Delete %s? Its state and logs are removed.", h), func() tea.Msg {
			return Done{ViewID: id, Verb: VerbDeleted, Handle: h.String(), Err: b.Delete(parent, h, false)}
		}), true
	}
	return nil, false
}

// EditMsg brings what the form of a relaunch with edits needs: the component the app
// h was launched from, its arguments and run options. Call is nil when they are not
// known (an app launched from an AppDef, or by another WICK_HOME); Err is a failure to
// read them. The root opens the form.
type EditMsg struct {
	Handle    spec.Handle
	Call      *sched.Call
	Component *components.Component
	Cfg       spec.Cfg
	Err       error
}

// Unknown is the line the status bar shows when the app's component call is not known.
func (e EditMsg) Unknown() string {
	return e.Handle.String() + ": its component and arguments are not known (launched from an AppDef, or by another WICK_HOME); r relaunches it as is"
}

// readEdit reads the component call of the app h, its component and run options.
func readEdit(ctx context.Context, b common.Backend, find components.FindOptions, h spec.Handle) tea.Msg {
	call, err := b.Call(h)
	if err != nil || call == nil {
		return EditMsg{Handle: h, Err: err}
	}
	comp, err := components.Find(call.Component, find)
	if err != nil {
		return EditMsg{Handle: h, Err: fmt.Errorf("%s was launched from %s: %w", h, call.Component, err)}
	}
	msg := EditMsg{Handle: h, Call: call, Component: comp}
	// The run options it ran with fill the form; without them (a scheduler that does
	// not keep them), the form's defaults.
	if d, err := b.Describe(ctx, h); err == nil {
		msg.Cfg = d.Cfg
	}
	return msg
}

// BulkDone reports the end of a cancel or delete of several apps.
type BulkDone struct {
	common.ViewID
	Verb    string   // VerbCancelled or VerbDeleted
	Handles []string // the apps it was done to
	Errs    []error  // one per app it failed for
	// Dequeued is how many apps of a sweep left its queue without starting.
	Dequeued int
}

// Notice is the status-line message for d: how many, and the first failure.
func (d BulkDone) Notice() tea.Cmd {
	msg := fmt.Sprintf("%s %s", d.Verb, apps(len(d.Handles)))
	if d.Dequeued > 0 {
		msg += fmt.Sprintf(" (%d queued: never started)", d.Dequeued)
	}
	if len(d.Errs) > 0 {
		return common.NotifyErr(fmt.Errorf("%s; %d failed: %w", msg, len(d.Errs), d.Errs[0]))
	}
	return common.Notify(msg)
}

// apps is "1 app" or "N apps".
func apps(n int) string { return fmt.Sprintf("%d %s", n, plural(n, "app")) }

// plural is word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// BulkProgress is a bulk cancel or delete under way: how many of its apps are done.
// The command updates it as each app is done; the view that asked reads it (on its
// ticks) to say so. Safe for concurrent use.
type BulkProgress struct {
	verb    string // "cancelling", "deleting"
	total   atomic.Int32
	started atomic.Bool // confirmed
	done    atomic.Int32
	ended   atomic.Bool
}

// Status is "cancelling 3/10 apps…" while the action runs, "" before it is confirmed
// and after it ends.
func (p *BulkProgress) Status() string {
	if p == nil || !p.started.Load() || p.ended.Load() {
		return ""
	}
	return fmt.Sprintf("%s %d/%s…", p.verb, p.done.Load(), apps(int(p.total.Load())))
}

// Bulk cancels (ActCancel) or deletes (ActDelete) those of apps it applies to (a
// cancel those that have not ended, a delete those that have) after one confirmation
// that says how many (adj says which: "marked", "finished"). Their states are read
// again when the confirmation is asked, not taken from the list's last listing, which
// may be minutes old: an app that ended since is counted as ended, one deleted since
// is left out. With noteSkips the prompt also says how many of apps are skipped. The
// returned progress says how far it has got once confirmed.
func Bulk(ctx *common.Context, id common.ViewID, action common.ActionName, apps []spec.AppStatus, adj string, noteSkips bool) (tea.Cmd, *BulkProgress) {
	b, parent := ctx.Backend, ctx.Ctx
	doing := "deleting"
	if action == ActCancel {
		doing = "cancelling"
	}
	p := &BulkProgress{verb: doing}
	return func() tea.Msg {
		lctx, cancel := context.WithTimeout(parent, sweepCountWait)
		defer cancel()
		fresh, errs := b.List(lctx, "")
		do, skipped := bulkTargets(apps, fresh, len(errs) == 0, action)
		if !noteSkips {
			skipped = 0
		}
		p.total.Store(int32(len(do)))
		return bulkConfirm(b, parent, id, action, do, adj, skipped, p)()
	}, p
}

// bulkTargets are the handles of apps that action applies to in their state now (as
// fresh lists them; an app it lacks keeps its listed state unless the listing is
// whole, when it was deleted since), and how many of apps it skips.
func bulkTargets(apps, fresh []spec.AppStatus, whole bool, action common.ActionName) (do []spec.Handle, skipped int) {
	now := make(map[string]spec.AppState, len(fresh))
	for i := range fresh {
		now[fresh[i].Handle] = fresh[i].State
	}
	for i := range apps {
		a := &apps[i]
		st, ok := now[a.Handle]
		switch {
		case !ok && whole && !a.Foreign:
			continue // deleted since
		case !ok:
			st = a.State
		}
		h, err := spec.ParseHandle(a.Handle)
		if err != nil {
			continue
		}
		if st.Terminal() == (action == ActDelete) {
			do = append(do, h)
		} else {
			skipped++
		}
	}
	return do, skipped
}

// bulkConfirm asks to act on hs, and does it when the user says yes.
func bulkConfirm(b common.Backend, parent context.Context, id common.ViewID, action common.ActionName, hs []spec.Handle, adj string, skipped int, p *BulkProgress) tea.Cmd {
	verb, question, what := VerbDeleted, "Delete", "Their state and logs are removed."
	skip := "still running"
	if action == ActCancel {
		verb, question, what = VerbCancelled, "Cancel", "Their replicas get SIGTERM, then SIGKILL."
		skip = "already ended"
	}
	note := ""
	if skipped > 0 {
		note = fmt.Sprintf(" (%d %s: skipped)", skipped, skip)
	}
	if len(hs) == 0 {
		return common.Notify(fmt.Sprintf("no %s app to %s%s", adj, strings.ToLower(question), note))
	}
	prompt := fmt.Sprintf("%s %d %s %s?%s %s", question, len(hs), adj, plural(len(hs), "app"), note, what)
	return common.Confirm(prompt, func() tea.Msg {
		p.started.Store(true)
		defer p.ended.Store(true)
		errs := sched.Each(hs, func(_ int, h spec.Handle) error {
			defer p.done.Add(1)
			if action == ActCancel {
				return b.Cancel(parent, h)
			}
			return b.Delete(parent, h, false)
		})
		d := BulkDone{ViewID: id, Verb: verb}
		for i, h := range hs {
			if errs[i] != nil {
				d.Errs = append(d.Errs, fmt.Errorf("%s: %w", h, errs[i]))
				continue
			}
			d.Handles = append(d.Handles, h.String())
		}
		return d
	})
}

// sweepCountWait bounds the listing that counts the apps of a confirmation (a sweep's
// cancel, a bulk cancel or delete).
const sweepCountWait = 10 * time.Second

// CancelSweep cancels every app of sweep id after one confirmation that says how many
// are queued and how many run, through the engine's one cancel of a sweep
// (Backend.CancelSweep, as `wick cancel ID`): its queue is emptied before its running
// apps are cancelled, so no queued app starts once the user said yes. The counts are
// read when the confirmation is asked, not taken from the list's last listing, which
// may be minutes old.
func CancelSweep(ctx *common.Context, id common.ViewID, sweepID string) (tea.Cmd, *BulkProgress) {
	b, parent := ctx.Backend, ctx.Ctx
	p := &BulkProgress{verb: "cancelling"}
	return func() tea.Msg {
		lctx, cancel := context.WithTimeout(parent, sweepCountWait)
		defer cancel()
		all, errs := b.List(lctx, "")
		queued, running := sweepCounts(all, sweepID)
		if queued+running == 0 {
			if len(errs) > 0 {
				return common.NoticeMsg{Text: fmt.Sprintf("sweep %s: its apps could not be listed: %v", sweepID, errs[0]), Err: true}
			}
			return common.NoticeMsg{Text: "sweep " + sweepID + ": no queued or running app to cancel"}
		}
		p.total.Store(int32(queued + running))
		return cancelSweepConfirm(b, parent, id, sweepID, queued, running, p)()
	}, p
}

// sweepCounts counts the apps of sweep id in apps that wait in its queue and that
// have not ended.
func sweepCounts(apps []spec.AppStatus, id string) (queued, running int) {
	for i := range apps {
		a := &apps[i]
		switch {
		case a.Sweep == nil || a.Sweep.ID != id || a.State.Terminal():
		case a.State == spec.Queued:
			queued++
		default:
			running++
		}
	}
	return queued, running
}

// cancelSweepConfirm asks to cancel sweep sweepID, of which queued apps wait and
// running run.
func cancelSweepConfirm(b common.Backend, parent context.Context, id common.ViewID, sweepID string, queued, running int, p *BulkProgress) tea.Cmd {
	prompt := fmt.Sprintf("Cancel sweep %s: %d queued and %d running %s? The queued never start; the running replicas get SIGTERM, then SIGKILL.",
		sweepID, queued, running, plural(running, "app"))
	return common.Confirm(prompt, func() tea.Msg {
		p.started.Store(true)
		defer p.ended.Store(true)
		removed, cancelled, err := b.CancelSweep(parent, sweepID)
		p.done.Store(int32(queued + running))
		d := BulkDone{ViewID: id, Verb: VerbCancelled, Dequeued: removed}
		for _, h := range cancelled {
			d.Handles = append(d.Handles, h.String())
		}
		if err != nil {
			d.Errs = append(d.Errs, err)
		}
		return d
	})
}
