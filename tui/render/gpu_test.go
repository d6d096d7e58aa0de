package render

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// TestDescribeGPUColumnsAt80: describe's replica table with GPU use (two replicas of
// 8 and 1 devices) fits 80 columns: the devices' memory and EXIT (no replica has
// exited) give way after ERROR, RESTARTS and STARTED; each replica's devices,
// utilization and own memory stay whole. Wide, every GPU column is there.
func TestDescribeGPUColumnsAt80(t *testing.T) {
	t0 := time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)
	rep := func(k int, devs []string, util int, own uint64) spec.ReplicaStatus {
		return spec.ReplicaStatus{ID: k, Role: "trainer", State: spec.Running, PID: 412345 + k, Started: t0,
			Usage: &spec.Usage{CPU: 1.5, RSS: 3 << 30, At: t0, GPU: &spec.GPUUse{Devices: devs, Util: util, Used: 70 << 30, Total: 80 << 30, Own: own}}}
	}
	d := &sched.Description{Status: spec.AppStatus{AppID: "trainer-abc", State: spec.Running,
		Roles: []spec.RoleStatus{{Role: "trainer", Replicas: []spec.ReplicaStatus{
			rep(0, []string{"0", "1", "2", "3", "4", "5", "6", "7"}, 97, 65<<30),
			rep(1, []string{"8", "10"}, -1, 0),
		}}}}}
	var b strings.Builder
	if err := Describe(&b, d, t0.Add(time.Minute), Plain{}, TreeOptions{Width: 80}); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(b.String(), "\n") {
		if w := ansi.StringWidth(l); w > 80 && strings.HasPrefix(l, "trainer/") {
			t.Errorf("a %d-column row at 80: %q", w, l)
		}
	}
	out := b.String()
	for _, want := range []string{"GPU%", "OWN", "0-7", "8,10", "97%", "65.0GiB"} {
		if !strings.Contains(out, want) {
			t.Errorf("at 80 columns describe lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := Describe(&b, d, t0.Add(time.Minute), Plain{}, TreeOptions{Width: 200}); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "GPU MEM") || !strings.Contains(out, "70.0/80.0GiB") {
		t.Errorf("wide, describe lacks the devices' memory:\n%s", out)
	}
}
