package render

import (
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

func TestDescribeListsEarlierAttempts(t *testing.T) {
	defer func(l *time.Location) { time.Local = l }(time.Local)
	time.Local = time.UTC
	t0 := time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)
	rep := spec.ReplicaStatus{
		ID: 0, Role: "trainer", State: spec.Running, Restarts: 2, Started: t0.Add(3 * time.Second), LogDir: "/logs/trainer/0",
		Attempts: []spec.Attempt{
			{Attempt: 0, ExitCode: spec.IntPtr(3), Started: t0, Ended: t0.Add(1500 * time.Millisecond), Error: `{"message": "CUDA out of memory"}`},
			{Attempt: 1, ExitCode: spec.IntPtr(137), Started: t0.Add(2 * time.Second), Ended: t0.Add(2*time.Second + 40*time.Millisecond)},
		},
	}
	d := &sched.Description{Status: spec.AppStatus{AppID: "a", State: spec.Running, NumRestarts: 2,
		Roles: []spec.RoleStatus{{Role: "trainer", Replicas: []spec.ReplicaStatus{rep}}}}}
	var b strings.Builder
	if err := Describe(&b, d, t0.Add(time.Minute), Plain{}, TreeOptions{}); err != nil {
		t.Fatal(err)
	}
	want := `
trainer/0
  logs:     /logs/trainer/0
  attempts:
    #1  exit 3    2025-03-04 10:00:00 → 10:00:01  (1.5s)  CUDA out of memory
    #2  exit 137  2025-03-04 10:00:02 → 10:00:02  (40ms)
`
	if got := b.String(); !strings.Contains(got, want) {
		t.Errorf("describe lacks the attempts:\n%s\nwant:%s", got, want)
	}

	// Attempts dropped beyond spec.MaxAttempts are counted.
	rep.Attempts = rep.Attempts[1:]
	d.Status.Roles[0].Replicas[0] = rep
	b.Reset()
	if err := Describe(&b, d, t0.Add(time.Minute), Plain{}, TreeOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); !strings.Contains(got, "  attempts:\n    (1 earlier not kept)\n    #2  exit 137") {
		t.Errorf("dropped attempts:\n%s", got)
	}
}
