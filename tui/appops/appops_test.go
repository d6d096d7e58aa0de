package appops_test

import (
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/viewtest"
	"github.com/wick-dev/wick/tui/appops"
	"github.com/wick-dev/wick/tui/common"
)

// appops is not a view: the actions the app list and describe share. Each answers
// with what the user sees: a notice, a confirmation, or the logs opened.

func act(t *testing.T, action common.ActionName, st spec.AppState) tea.Msg {
	t.Helper()
	vc := viewtest.Context(t, 100, 20, time.Now())
	vc.Backend = viewtest.Runner(t)
	h := spec.Handle{Scheduler: "local_cwd", Session: "wick", AppID: "train-abc"}
	cmd, ok := appops.Act(vc, 1, action, h, st)
	if !ok || cmd == nil {
		t.Fatalf("%s: not handled", action)
	}
	return cmd()
}

// TestAppOpsSayWhatTheyWillDo: logs opens the app's logs; cancelling an app that has
// ended says so instead of asking; deleting a running one says to cancel it first;
// cancel, delete and relaunch of an app in the right state ask first, naming it.
func TestAppOpsSayWhatTheyWillDo(t *testing.T) {
	const h = "local_cwd://wick/train-abc"
	if m, ok := act(t, appops.ActLogs, spec.Running).(common.OpenLogsMsg); !ok || m.Handle != h {
		t.Errorf("logs: %#v, want the logs of %s opened", m, h)
	}
	notice := func(action common.ActionName, st spec.AppState, want string, isErr bool) {
		t.Helper()
		m, ok := act(t, action, st).(common.NoticeMsg)
		if !ok || m.Text != want || m.Err != isErr {
			t.Errorf("%s on a %s app: %#v, want the notice %q (error %v)", action, st, m, want, isErr)
		}
	}
	notice(appops.ActCancel, spec.Succeeded, h+" has already ended (SUCCEEDED)", false)
	notice(appops.ActDelete, spec.Running, h+" is RUNNING: cancel it first (x), then delete", true)
	confirm := func(action common.ActionName, st spec.AppState, want string) {
		t.Helper()
		m, ok := act(t, action, st).(common.ConfirmMsg)
		if !ok || m.Prompt != want || m.Yes == nil {
			t.Errorf("%s on a %s app: %#v, want the question %q", action, st, m, want)
		}
	}
	confirm(appops.ActCancel, spec.Running, "Cancel "+h+"? Its replicas get SIGTERM, then SIGKILL.")
	confirm(appops.ActDelete, spec.Failed, "Delete "+h+"? Its state and logs are removed.")
	confirm(appops.ActRelaunch, spec.Succeeded, "Relaunch "+h+" as is? The same AppDef and run options, on local_cwd.")
}
