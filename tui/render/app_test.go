package render

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

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

// wick list's ERROR column: a failed app's root cause, whole through a pipe, each line
// cut to a terminal's width with "…".
func TestAppListErrorColumn(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	cause := "rank 1: ModuleNotFoundError: No module named 'apex_fused_adam_missing'"
	apps := []spec.AppStatus{
		{AppID: "ddp-1", State: spec.Failed, Created: t0, Ended: t0.Add(time.Minute), StructuredError: `{"message":{"message":"` + cause + `","extraInfo":{"timestamp":"0"}}}`},
		{AppID: "ok-2", State: spec.Succeeded, Created: t0, Ended: t0.Add(time.Minute)},
	}
	var b strings.Builder
	if err := AppList(&b, apps, t0.Add(2*time.Minute), Plain{}, 0); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[0], "ERROR") || !strings.HasSuffix(lines[1], "  "+cause) || strings.Contains(lines[2], "rank") {
		t.Errorf("list:\n%s", b.String())
	}
	b.Reset()
	if err := AppList(&b, apps, t0.Add(2*time.Minute), Plain{}, 72); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if w := ansi.StringWidth(l); w > 72 {
			t.Errorf("%d columns: %q", w, l)
		}
	}
	if !strings.Contains(b.String(), "rank 1:") || !strings.Contains(b.String(), "…") {
		t.Errorf("cut list:\n%s", b.String())
	}
}
