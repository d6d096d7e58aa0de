package render

import (
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
)

func TestStatusShowsUsageOfRunningReplicas(t *testing.T) {
	t0 := time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)
	a := &spec.AppStatus{AppID: "a", State: spec.Running, Roles: []spec.RoleStatus{{Role: "w", Replicas: []spec.ReplicaStatus{
		{ID: 0, Role: "w", State: spec.Running, PID: 10, Usage: &spec.Usage{CPU: 1.53, RSS: 74<<20 + 300<<10, At: t0}},
		{ID: 1, Role: "w", State: spec.Succeeded, PID: 11, ExitCode: spec.IntPtr(0), StructuredError: `{"message": "boom"}`},
	}}}}
	var b strings.Builder
	if err := Status(&b, a, t0, Plain{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	var header, r0, r1 string
	for i, l := range lines {
		if strings.HasPrefix(l, "REPLICA") {
			header, r0, r1 = l, lines[i+1], lines[i+2]
		}
	}
	for _, c := range []struct{ line, want string }{
		{header, "DURATION  CPU   RSS      ERROR"},
		{r0, "153%  74.3MiB"},
		{r1, "-     -        boom"},
	} {
		if !strings.Contains(c.line, c.want) {
			t.Errorf("%q lacks %q; status:\n%s", c.line, c.want, b.String())
		}
	}

	// Without usage (a terminal app, slurm), the table has no CPU or RSS column.
	a.Roles[0].Replicas[0].Usage = nil
	b.Reset()
	if err := Status(&b, a, t0, Plain{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "CPU") || strings.Contains(b.String(), "RSS") {
		t.Errorf("status without usage shows usage columns:\n%s", b.String())
	}
}

func TestBytesAndCPU(t *testing.T) {
	for n, want := range map[uint64]string{0: "0B", 1023: "1023B", 1536: "1.50KiB", 74<<20 + 300<<10: "74.3MiB", 3 << 30: "3.00GiB", 500 << 20: "500MiB", 1<<64 - 1: "16.0EiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
	for c, want := range map[float64]string{0: "0%", 0.004: "0%", 0.5: "50%", 2.25: "225%", -1: "-"} {
		if got := CPU(c); got != want {
			t.Errorf("CPU(%v) = %q, want %q", c, got, want)
		}
	}
}
