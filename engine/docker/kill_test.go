package docker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestKillSkipsTheGracePeriod: wick cancel --now on local_docker kills every replica
// at once, so a TERM trap that would take its time (a checkpoint) never runs, even
// with a grace period of ten minutes; the replicas end CANCELLED (137), as a cancel.
func TestKillSkipsTheGracePeriod(t *testing.T) {
	needEngine(t)
	t.Parallel()
	s := newScheduler(t)
	var k sched.Killer = s // local_docker says it can kill at once
	id := launch(t, s, &spec.AppDef{Name: "kill", Roles: []spec.Role{role("trap", 2, "trap")}}, spec.Cfg{OptStopTimeout: 600})
	for i := range 2 {
		deadline := time.Now().Add(testkit.Scale(60 * time.Second))
		for !strings.Contains(strings.Join(texts(readLogs(t, s, id, "trap", i, sched.LogOptions{})), "\n"), "waiting for SIGTERM") {
			if time.Now().After(deadline) {
				t.Fatalf("trap/%d never set its trap", i)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err := k.Kill(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	// A graceful stop would wait the 600 s the trap sleeps into: the deadline of
	// waitTerminal (60 s) fails it.
	d := waitTerminal(t, s, id)
	if d.Status.State != spec.Cancelled {
		t.Errorf("state %s, want CANCELLED", d.Status.State)
	}
	for _, r := range d.Status.Roles[0].Replicas {
		if r.State != spec.Cancelled || r.ExitCode == nil || *r.ExitCode != 137 {
			t.Errorf("trap/%d: %s exit %v, want CANCELLED 137", r.ID, r.State, r.ExitCode)
		}
		if logs := strings.Join(texts(readLogs(t, s, id, "trap", r.ID, sched.LogOptions{})), "\n"); strings.Contains(logs, "TERM trap") {
			t.Errorf("trap/%d got SIGTERM (its trap ran):\n%s", r.ID, logs)
		}
	}
}
