package apps

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/themes"
	"github.com/wick-dev/wick/tui/appops"
	"github.com/wick-dev/wick/tui/common"
)

// listOnly is a view of the app list whose listings the test delivers itself: the
// commands the view returns (listings, usage) are not run, so a listing can be held
// "in flight" while a delete ends.
func listOnly(t *testing.T) *Model {
	t.Helper()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	ctx := &common.Context{
		Ctx: context.Background(), Theme: themes.Plain(), Width: 120, Height: 20,
		Actions: common.NewRegistry(Actions()), Now: func() time.Time { return now },
	}
	m := New(ctx)
	m.Init() // the first listing starts
	return m
}

func app(h string, st spec.AppState, foreign bool) spec.AppStatus {
	created := time.Date(2026, 11, 25, 11, 0, 0, 0, time.UTC)
	return spec.AppStatus{Handle: h, Name: h[strings.LastIndex(h, "/")+1:], State: st, Created: created, Foreign: foreign}
}

func screen(m *Model) string { return ansi.Strip(m.View()) }

// TestDeletedRowsVanishAtOnce: after "deleted 2 apps" their rows are gone at once, and
// a listing that was under way when the delete ended (it still holds them) does not
// bring them back.
func TestDeletedRowsVanishAtOnce(t *testing.T) {
	m := listOnly(t)
	a, b, c := "local_cwd://wick/a-1", "local_cwd://wick/b-2", "local_cwd://wick/c-3"
	all := []spec.AppStatus{app(a, spec.Succeeded, false), app(b, spec.Failed, false), app(c, spec.Running, false)}
	m.Update(listedMsg{ViewID: m.ID(), seq: m.seq, apps: all})
	if s := screen(m); !strings.Contains(s, "3 apps") || !strings.Contains(s, a) {
		t.Fatalf("before the delete:\n%s", s)
	}
	m.Update(common.TickMsg{Time: m.Ctx.Now()}) // a listing starts, and is slow
	inFlight := m.seq
	m.Update(appops.BulkDone{ViewID: m.ID(), Verb: appops.VerbDeleted, Handles: []string{a, b}})
	s := screen(m)
	if !strings.Contains(s, "1 app ") || strings.Contains(s, a) || strings.Contains(s, b) || !strings.Contains(s, c) {
		t.Fatalf("right after the delete, the list should show c alone:\n%s", s)
	}
	m.Update(listedMsg{ViewID: m.ID(), seq: inFlight, apps: all})
	if s := screen(m); strings.Contains(s, a) || strings.Contains(s, b) || !strings.Contains(s, "1 app ") {
		t.Fatalf("the listing under way brought the deleted rows back:\n%s", s)
	}

	// One app deleted with d, the same.
	m.Update(common.TickMsg{Time: m.Ctx.Now()})
	m.Update(listedMsg{ViewID: m.ID(), seq: m.seq, apps: all[2:]})
	m.Update(appops.Done{ViewID: m.ID(), Verb: appops.VerbDeleted, Handle: c})
	if s := screen(m); strings.Contains(s, c) || !strings.Contains(s, "0 apps") {
		t.Fatalf("after deleting c:\n%s", s)
	}
}

// TestSummaryCountsWhatIsShown: with only other homes' apps, the summary says this
// home has none, and that the others are hidden.
func TestSummaryCountsWhatIsShown(t *testing.T) {
	m := listOnly(t)
	var others []spec.AppStatus
	for _, h := range []string{"local_docker://wick/x-1", "local_docker://wick/y-2", "local_docker://wick/z-3"} {
		others = append(others, app(h, spec.Running, true))
	}
	m.Update(listedMsg{ViewID: m.ID(), seq: m.seq, apps: append(others, app("local_cwd://wick/mine-1", spec.Succeeded, false))})
	s := screen(m)
	if !strings.Contains(s, "Apps  1 app · 3 of other homes hidden (A)") {
		t.Fatalf("summary:\n%s", s)
	}
	m.Update(listedMsg{ViewID: m.ID(), seq: m.seq, apps: others})
	if s := screen(m); !strings.Contains(s, "Apps  0 apps · 3 of other homes hidden (A)") {
		t.Fatalf("summary:\n%s", s)
	}
	m.Do(ActScope)
	if s := screen(m); !strings.Contains(s, "Apps  3 apps · 3 running · every home") {
		t.Fatalf("summary with every home:\n%s", s)
	}
}

// TestAgeAndDurationOfARunningAppAgree: an app created 885ms ago and still running is
// 885ms old and has run 885ms; one that ran 2.5s and ended a minute ago is 1m02s old.
func TestAgeAndDurationOfARunningAppAgree(t *testing.T) {
	m := listOnly(t)
	now := m.Ctx.Now()
	run := spec.AppStatus{Handle: "local_cwd://wick/run-1", Name: "run", State: spec.Running, Created: now.Add(-885 * time.Millisecond)}
	done := spec.AppStatus{Handle: "local_cwd://wick/done-2", Name: "done", State: spec.Succeeded,
		Created: now.Add(-62500 * time.Millisecond), Ended: now.Add(-60 * time.Second)}
	m.Update(listedMsg{ViewID: m.ID(), seq: m.seq, apps: []spec.AppStatus{run, done}})
	seen := 0
	for _, l := range strings.Split(screen(m), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimPrefix(l, "▸"), " "))
		switch {
		case strings.Contains(l, "run-1"):
			seen++
			// HANDLE NAME STATE RUNNING AGE DURATION EXIT
			if len(f) < 7 || f[4] != "885ms" || f[5] != "885ms" {
				t.Errorf("running app: AGE and DURATION should both be 885ms: %q", l)
			}
		case strings.Contains(l, "done-2"):
			seen++
			if len(f) < 7 || f[4] != "1m02s" || f[5] != "2.5s" {
				t.Errorf("ended app: AGE 1m02s, DURATION 2.5s: %q", l)
			}
		}
	}
	if seen != 2 {
		t.Fatalf("the list lacks an app:\n%s", screen(m))
	}
}

// TestSortByCPUAndRSS: `o` goes on from duration to CPU then RSS, the busiest first,
// apps that use nothing (ended) last; the column's header carries the arrow.
func TestSortByCPUAndRSS(t *testing.T) {
	m := listOnly(t)
	mk := func(name string, st spec.AppState, ageSec int) spec.AppStatus {
		a := app("local_cwd://wick/"+name, st, false)
		a.Created = m.Ctx.Now().Add(-time.Duration(ageSec) * time.Second)
		return a
	}
	// Newest first by age: idle, hog, fat, done.
	all := []spec.AppStatus{mk("idle-1", spec.Running, 1), mk("hog-2", spec.Running, 2), mk("fat-3", spec.Running, 3), mk("done-4", spec.Succeeded, 4)}
	m.usage.byApp = map[string]spec.Usage{
		"local_cwd://wick/idle-1": {CPU: 0.5, RSS: 10 << 20},
		"local_cwd://wick/hog-2":  {CPU: 390, RSS: 50 << 20},
		"local_cwd://wick/fat-3":  {CPU: 12, RSS: 3 << 30},
	}
	m.Update(listedMsg{ViewID: m.ID(), seq: m.seq, apps: all})
	rowsOrder := func() []string {
		var out []string
		for _, l := range strings.Split(screen(m), "\n") {
			for _, n := range []string{"idle-1", "hog-2", "fat-3", "done-4"} {
				if strings.Contains(l, n) {
					out = append(out, n)
				}
			}
		}
		return out
	}
	if got := strings.Join(rowsOrder(), " "); got != "idle-1 hog-2 fat-3 done-4" {
		t.Fatalf("by age: %s", got)
	}
	for range 5 { // age -> name -> state -> handle -> duration -> cpu
		m.Do(ActSort)
	}
	s := screen(m)
	if !strings.Contains(s, "sorted by cpu ↓") || !strings.Contains(s, "CPU ↓/RSS") {
		t.Fatalf("after five presses of o:\n%s", s)
	}
	if got := strings.Join(rowsOrder(), " "); got != "hog-2 fat-3 idle-1 done-4" {
		t.Errorf("by cpu: %s\n%s", got, s)
	}
	m.Do(ActSort)
	s = screen(m)
	if !strings.Contains(s, "sorted by rss ↓") || !strings.Contains(s, "CPU/RSS ↓") {
		t.Fatalf("after six presses of o:\n%s", s)
	}
	if got := strings.Join(rowsOrder(), " "); got != "fat-3 hog-2 idle-1 done-4" {
		t.Errorf("by rss: %s\n%s", got, s)
	}
	m.Do(ActSort)
	if s := screen(m); !strings.Contains(s, "sorted by age") {
		t.Errorf("o after rss goes back to age:\n%s", s)
	}
}
