package tui_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestStartQueuedAppNext: a sweep of three apps, one at a time, runs its first; N on
// its third (queued) app's row makes it the next to start, as `wick sweep move --to
// 1` does: the list says so, the sweep's queue holds it first, and once the first app
// ends the queue launches it before the second. N on the running app says what N is
// for and moves nothing.
func TestStartQueuedAppNext(t *testing.T) {
	e := newEnv(t)
	gate := filepath.Join(e.root, "work", "gate")
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o600) })
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(waitTimeout))
	defer cancel()
	p, err := e.r.PlanSweep(ctx, sweep.Request{
		Component: "utils.sh", Args: []string{"--", "sh", "-c", "while [ ! -e " + gate + " ]; do sleep 0.05; done"},
		Params:    []sweep.Param{{Name: "n", Values: []string{"1", "2", "3"}}},
		Scheduler: local.NameCwd, Lookup: components.Lookup{}, MaxParallel: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.r.LaunchSweep(ctx, p); err != nil {
		t.Fatal(err)
	}
	id := p.Sweep.ID
	first, second, third := p.Sweep.Entries[0], p.Sweep.Entries[1], p.Sweep.Entries[2]
	testkit.Wait(t, waitTimeout, "the first app's launch recorded", func() (bool, string) {
		sw, err := e.r.Sweeps().Load(id)
		return err == nil && sw.Entries[0].State == sweep.Launched, ""
	})

	d := newDriver(t, e.opts, 160, 30)
	d.waitScreen("▸ + " + id)
	d.keys("z")
	selectRow := func(name string) {
		t.Helper()
		for range 6 {
			for _, l := range strings.Split(d.screen(), "\n") {
				if strings.Contains(l, "▸") && strings.Contains(l, name) {
					return
				}
			}
			d.keys("j")
		}
		t.Fatalf("no row of %s:\n%s", name, d.screen())
	}
	d.waitScreen(third.Name)
	selectRow(first.Name)
	d.keys("N")
	d.contains("N starts a queued app of a sweep next")
	selectRow(third.Name)
	d.keys("N")
	h3 := third.Handle[strings.LastIndex(third.Handle, "/")+1:]
	d.contains(h3 + ": place 1 of the queue of sweep " + id + " (next to start)")
	sw, err := e.r.Sweeps().Load(id)
	if err != nil {
		t.Fatal(err)
	}
	var queued []string
	for _, en := range sw.Entries {
		if en.State == sweep.Queued {
			queued = append(queued, en.Name)
		}
	}
	if strings.Join(queued, " ") != third.Name+" "+second.Name {
		t.Errorf("queue %q, want %s then %s", queued, third.Name, second.Name)
	}

	os.WriteFile(gate, nil, 0o600)
	d.waitScreen("sweep of 3: 3 succeeded")
	sw, err = e.r.Sweeps().Load(id)
	if err != nil {
		t.Fatal(err)
	}
	started := map[string]int64{}
	for _, en := range sw.Entries {
		started[en.Name] = en.LaunchStarted.UnixNano()
	}
	if started[third.Name] == 0 || started[third.Name] >= started[second.Name] {
		t.Errorf("launches started: %s %d, %s %d: the moved app was not next", third.Name, started[third.Name], second.Name, started[second.Name])
	}
}
