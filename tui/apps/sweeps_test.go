package apps

import (
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/appops"
	"github.com/wick-dev/wick/tui/common"
)

// TestSweepRowFolds: the apps of a sweep are one row, folded, that says what they
// do; z (or enter) unfolds it, its apps under it; x on it offers to cancel the whole
// sweep, saying how many of its apps are queued and how many run.
func TestSweepRowFolds(t *testing.T) {
	m := listOnly(t)
	ref := func(v string) *spec.SweepRef {
		return &spec.SweepRef{ID: "sweep-abcd1234", Names: []string{"lr"}, Values: map[string]string{"lr": v}}
	}
	a := app("local_cwd://wick/train-lr0.1-1", spec.Running, false)
	a.Sweep = ref("0.1")
	b := app("local_cwd://wick/train-lr0.2-2", spec.Queued, false)
	b.Sweep = ref("0.2")
	c := app("local_cwd://wick/train-lr0.3-3", spec.Succeeded, false)
	c.Sweep = ref("0.3")
	other := app("local_cwd://wick/echo-4", spec.Succeeded, false)
	m.Update(listedMsg{ViewID: m.ID(), seq: m.seq, apps: []spec.AppStatus{a, b, c, other}})
	s := screen(m)
	if !strings.Contains(s, "+ sweep-abcd1234") || !strings.Contains(s, "sweep of 3: 1 running, 1 queued, 1 succeeded") ||
		strings.Contains(s, "train-lr0.1") || !strings.Contains(s, "echo-4") {
		t.Fatalf("the folded sweep:\n%s", s)
	}
	if !m.selectHandle(groupKey("sweep-abcd1234")) {
		t.Fatal("no sweep row to select")
	}
	m.Do(ActFold)
	s = screen(m)
	for _, h := range []string{a.Handle, b.Handle, c.Handle} {
		if !strings.Contains(s, h) {
			t.Errorf("unfolded, %s is not shown:\n%s", h, s)
		}
	}
	if !strings.Contains(s, "- sweep-abcd1234") || !strings.Contains(s, "  train-lr0.2-2") {
		t.Errorf("the unfolded sweep:\n%s", s)
	}
	if !strings.Contains(s, "4 apps · 1 running") {
		t.Errorf("a queued app is counted as running:\n%s", s)
	}
	// A queued app has no logs yet: l says so.
	m.selectHandle(b.Handle)
	if cmd, _ := m.Do(appops.ActLogs); cmd == nil || !strings.Contains(noticeText(cmd()), "is queued in its sweep: no logs until it starts") {
		t.Error("l on a queued app does not say it is queued")
	}
	// x on the sweep's row: TestSweepRowCancelStartsNoQueuedApp (it reads the
	// sweep's apps when asked, through a real Runner).
	// p on the sweep's row (or on one of its apps) opens the chart of the sweep.
	for _, key := range []string{groupKey("sweep-abcd1234"), c.Handle} {
		m.selectHandle(key)
		cmd, _ := m.Do(ActChart)
		if push, ok := cmd().(common.PushMsg); !ok || push.View.Title() != "chart sweep-abcd1234" {
			t.Errorf("p on %s: %#v, want the sweep's chart pushed", key, cmd())
		}
	}
	m.selectHandle(other.Handle)
	if cmd, _ := m.Do(ActChart); cmd == nil || !strings.Contains(noticeText(cmd()), "p charts a sweep's apps") {
		t.Error("p on an app of no sweep does not say what p is for")
	}
	m.selectHandle(groupKey("sweep-abcd1234"))
	m.Do(ActDescribe) // enter folds it again
	if s := screen(m); strings.Contains(s, a.Handle) {
		t.Errorf("enter did not fold the sweep:\n%s", s)
	}
}

// noticeText is the text of a notice message, or "".
func noticeText(msg any) string {
	if n, ok := msg.(common.NoticeMsg); ok {
		return n.Text
	}
	return ""
}
