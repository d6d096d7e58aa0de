package tui_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestResumeSweepFromTheList: the queue of a sweep of two apps, one at a time, is
// killed (kill -9) while its first app runs; r on the sweep's row starts it again,
// as `wick sweep resume` does: it says so, and the second app runs once the first
// ended.
func TestResumeSweepFromTheList(t *testing.T) {
	e := newEnv(t)
	gate := filepath.Join(e.root, "work", "gate")
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o600) })
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(waitTimeout))
	defer cancel()
	p, err := e.r.PlanSweep(ctx, sweep.Request{
		Component: "utils.sh", Args: []string{"--", "sh", "-c", "while [ ! -e " + gate + " ]; do sleep 0.05; done"},
		Params:    []sweep.Param{{Name: "n", Values: []string{"1", "2"}}},
		Scheduler: local.NameCwd, Lookup: components.Lookup{}, MaxParallel: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.r.LaunchSweep(ctx, p); err != nil {
		t.Fatal(err)
	}
	id := p.Sweep.ID
	var sw *sweep.Sweep
	testkit.Wait(t, waitTimeout, "the first app's launch recorded", func() (bool, string) {
		sw, err = e.r.Sweeps().Load(id)
		return err == nil && sw.Entries[0].State == sweep.Launched, ""
	})
	if err := syscall.Kill(sw.Queue.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.Wait(t, waitTimeout, "the queue gone", func() (bool, string) {
		sw, err = e.r.Sweeps().Load(id)
		return err == nil && !sw.QueueRunning(), ""
	})

	d := newDriver(t, e.opts, 160, 30)
	d.waitScreen("▸ + " + id)
	d.keys("r")
	d.contains("sweep " + id + ": queue resumed, 1 queued")
	os.WriteFile(gate, nil, 0o600)
	d.waitScreen("sweep of 2: 2 succeeded")
	d.keys("r")
	d.contains("sweep " + id + ": nothing queued")
}
