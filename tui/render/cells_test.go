package render

import (
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
)

// The presentation layer's own table tests, as k9s tests its renderers: a fixture in,
// the rendered fields out (Plain: no styles), for the cells `wick list`, `wick
// status` and the UI's list share.

func intp(i int) *int { return &i }

func TestAppRowCells(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	rep := func(role string, id int, st spec.AppState, code *int, ended time.Time) spec.ReplicaStatus {
		return spec.ReplicaStatus{Role: role, ID: id, State: st, ExitCode: code, Ended: ended}
	}
	for _, c := range []struct {
		name string
		app  spec.AppStatus
		want []string
	}{
		{"running, two of three replicas up", spec.AppStatus{
			Handle: "local_cwd://wick/train-1", Name: "train", State: spec.Running, Created: now.Add(-95 * time.Second),
			Roles: []spec.RoleStatus{{Role: "w", Replicas: []spec.ReplicaStatus{
				rep("w", 0, spec.Running, nil, time.Time{}), rep("w", 1, spec.Running, nil, time.Time{}), rep("w", 2, spec.Pending, nil, time.Time{})}}}},
			[]string{"local_cwd://wick/train-1", "train", "RUNNING", "2/3", "1m35s", "1m35s", "-"}},
		{"failed: the first replica to fail gives the exit code", spec.AppStatus{
			Handle: "local_cwd://wick/t-2", Name: "t", State: spec.Failed, Created: now.Add(-2 * time.Hour), Ended: now.Add(-time.Hour),
			Roles: []spec.RoleStatus{{Role: "w", Replicas: []spec.ReplicaStatus{
				rep("w", 0, spec.Cancelled, intp(143), now.Add(-time.Hour)), rep("w", 1, spec.Failed, intp(3), now.Add(-time.Hour-time.Second))}}}},
			[]string{"local_cwd://wick/t-2", "t", "FAILED", "0/2", "2h00m", "1h00m", "3"}},
		{"the state of a scheduler not asked: last known", spec.AppStatus{
			Handle: "slurm://wick/42", Name: "j", State: spec.Running, LastKnown: true, Created: now.Add(-3 * 24 * time.Hour)},
			[]string{"slurm://wick/42", "j", "RUNNING (last known)", "0/0", "3d0h", "3d0h", "-"}},
		{"unknown, with why; a name with an escape sequence shown inert", spec.AppStatus{
			Handle: "local_cwd://wick/x-3", Name: "x\x1b]0;pwn\x07", State: spec.UnknownState, Msg: "state.json: unexpected end of JSON input\nmore"},
			[]string{"local_cwd://wick/x-3", Escape("x\x1b]0;pwn\x07"), "UNKNOWN (state.json: unexpected end of JSON input …)", "0/0", "-", "-", "-"}},
	} {
		got := AppRow(&c.app, now, Plain{})
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s:\n got  %q\n want %q", c.name, got, c.want)
		}
		if strings.Contains(strings.Join(got, ""), "\x1b") {
			t.Errorf("%s: an escape sequence reached the cells: %q", c.name, got)
		}
	}
}

func TestAppErrorCell(t *testing.T) {
	for _, c := range []struct {
		app  spec.AppStatus
		want string
	}{
		{spec.AppStatus{State: spec.Failed, StructuredError: `{"message": {"message": "rank 1: exit code 3\ntraceback", "extraInfo": {}}}`}, "rank 1: exit code 3 …"}, // " …": more lines follow
		{spec.AppStatus{State: spec.Failed, Msg: "launch failed: no such file\nmore"}, "launch failed: no such file …"},
		{spec.AppStatus{State: spec.Succeeded, StructuredError: "old"}, ""},
		{spec.AppStatus{State: spec.Cancelled, Msg: "cancelled"}, ""},
	} {
		if got := AppError(&c.app, Plain{}); got != c.want {
			t.Errorf("%s %q/%q: %q, want %q", c.app.State, c.app.StructuredError, c.app.Msg, got, c.want)
		}
	}
}

func TestReplicaRowCells(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	started := now.Add(-90 * time.Second)
	for _, c := range []struct {
		r    spec.ReplicaStatus
		want []string
	}{
		{spec.ReplicaStatus{Role: "trainer", ID: 3, State: spec.Running, PID: 4242, Started: started, Restarts: 1},
			[]string{"trainer/3", "RUNNING", "-", "1", "4242", started.Local().Format("15:04:05"), "1m30s", ""}},
		{spec.ReplicaStatus{Role: "w", ID: 0, State: spec.Failed, ContainerID: "0123456789abcdef0123", ExitCode: intp(1), Started: started, Ended: started.Add(500 * time.Millisecond),
			StructuredError: `{"message": "ValueError: boom\n  at x"}`},
			[]string{"w/0", "FAILED", "1", "0", "0123456789ab", started.Local().Format("15:04:05"), "500ms", "ValueError: boom …"}},
		{spec.ReplicaStatus{Role: "w", ID: 1, State: spec.Pending},
			[]string{"w/1", "PENDING", "-", "0", "-", "-", "-", ""}},
	} {
		if got := ReplicaRow(&c.r, now, Plain{}); strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s/%d:\n got  %q\n want %q", c.r.Role, c.r.ID, got, c.want)
		}
	}
}

func TestFieldFormats(t *testing.T) {
	for in, want := range map[time.Duration]string{
		-time.Second: "-", 850 * time.Millisecond: "850ms", 12300 * time.Millisecond: "12.3s",
		245 * time.Second: "4m05s", 130 * time.Minute: "2h10m", 76 * time.Hour: "3d4h",
	} {
		if got := Duration(in); got != want {
			t.Errorf("Duration(%v) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[uint64]string{512: "512B", 1536: "1.50KiB", 77_804_748: "74.2MiB", 3 << 30: "3.00GiB", 200 << 20: "200MiB"} {
		if got := Bytes(in); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[float64]string{0.5: "50%", 2: "200%", -1: "-"} {
		if got := CPU(in); got != want {
			t.Errorf("CPU(%v) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"local_cwd": "cwd", "local_dir": "dir", "local_docker": "docker", "slurm": "slurm", "local_": "local_"} {
		if got := SchedTag(in); got != want {
			t.Errorf("SchedTag(%q) = %q, want %q", in, got, want)
		}
	}
}
