package apps

import (
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
)

// TestLaunchedAppIsShownAtOnce: after a launch the list shows the new app, selected,
// from the launch's own answer, before any listing has it; a listing that began
// before the launch (it does not hold the app) neither removes the row nor moves the
// cursor, and the next listing replaces the row with the scheduler's.
func TestLaunchedAppIsShownAtOnce(t *testing.T) {
	m := listOnly(t)
	old := app("local_cwd://wick/old-1", spec.Running, false)
	m.Update(listedMsg{ViewID: m.ID(), seq: m.seq, apps: []spec.AppStatus{old}})
	m.refresh() // a listing under way when the launch ends: it cannot hold the new app
	inFlight := m.seq
	st := spec.AppStatus{Handle: "local_cwd://wick/new-2", Name: "new", State: spec.Running,
		Created: time.Date(2026, 11, 25, 11, 59, 0, 0, time.UTC)}
	if cmd := m.Launched(st); cmd == nil {
		t.Fatal("no listing started after the launch")
	}
	if m.seq == inFlight {
		t.Fatal("the listing after the launch is the one that began before it")
	}
	if h := m.selectedHandle(); h != st.Handle {
		t.Fatalf("selected %q right after the launch, want %q:\n%s", h, st.Handle, screen(m))
	}
	m.Update(listedMsg{ViewID: m.ID(), seq: inFlight, apps: []spec.AppStatus{old}})
	if s := screen(m); !strings.Contains(s, "new-2") || m.selectedHandle() != st.Handle {
		t.Fatalf("a listing begun before the launch took the new row away (selected %q):\n%s", m.selectedHandle(), s)
	}
	now := st
	now.State = spec.Succeeded
	m.Update(listedMsg{ViewID: m.ID(), seq: m.seq, apps: []spec.AppStatus{now, old}})
	if s := screen(m); strings.Count(s, "new-2") != 1 || !strings.Contains(s, "SUCCEEDED") || m.selectedHandle() != st.Handle {
		t.Fatalf("after the listing that holds it:\n%s", s)
	}
	// An older listing that comes late is not shown over a newer one.
	m.Update(listedMsg{ViewID: m.ID(), seq: inFlight, apps: []spec.AppStatus{old}})
	if s := screen(m); !strings.Contains(s, "new-2") {
		t.Fatalf("a late old listing was shown:\n%s", s)
	}
}

// TestPendingIsNotRunning: the summary counts running apps as running and submitted
// or pending ones as pending.
func TestPendingIsNotRunning(t *testing.T) {
	m := listOnly(t)
	m.Update(listedMsg{ViewID: m.ID(), seq: m.seq, apps: []spec.AppStatus{
		app("slurm://wick/101", spec.Pending, false),
		app("local_cwd://wick/b-2", spec.Running, false),
		app("local_docker://wick/c-3", spec.Submitted, false),
	}})
	if s := screen(m); !strings.Contains(s, "3 apps · 1 running · 2 pending") {
		t.Fatalf("summary:\n%s", s)
	}
	if m.Active() != 3 {
		t.Errorf("Active = %d, want 3 (what keeps going when the UI quits)", m.Active())
	}
}

// TestSweepRowCountsAllItsApps: a sweep's row counts every app of the sweep, and says
// how many the filter shows ("sweep of 6, 2 shown"); its age is the sweep's (its
// oldest app's, made when the sweep was planned), not its newest app's.
func TestSweepRowCountsAllItsApps(t *testing.T) {
	m := listOnly(t)
	var all []spec.AppStatus
	for i, v := range []string{"0.1", "0.2", "0.3", "0.4", "0.5", "0.6"} {
		a := app("local_cwd://wick/train-lr"+v+"-x", spec.Queued, false)
		a.Sweep = &spec.SweepRef{ID: "sweep-abcd1234", Names: []string{"lr"}, Values: map[string]string{"lr": v}}
		a.Created = time.Date(2026, 11, 25, 11, 0, 0, 0, time.UTC) // the sweep's planning: 1h ago
		if i < 2 {
			a.State = spec.Running
			a.Created = time.Date(2026, 11, 25, 11, 59, 50, 0, time.UTC) // started 10s ago
		}
		all = append(all, a)
	}
	m.Update(listedMsg{ViewID: m.ID(), seq: m.seq, apps: all})
	s := screen(m)
	if !strings.Contains(s, "sweep of 6: 2 running, 4 queued") || !strings.Contains(s, "1h00m") {
		t.Fatalf("the sweep's row:\n%s", s)
	}
	m.filtering = true
	m.filter.SetValue("lr0.5")
	m.rebuild(m.selectedHandle())
	if s := screen(m); !strings.Contains(s, "sweep of 6, 1 shown: 2 running, 4 queued") || !strings.Contains(s, "1h00m") {
		t.Fatalf("the sweep's row under a filter:\n%s", s)
	}
}
