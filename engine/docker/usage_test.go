package docker

import (
	"context"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestUsageOfBurningContainers runs two containers that each hold 48 MiB and burn a
// core, and checks that each shows CPU > 0 and memory above what it allocated; once
// the app is cancelled, none is shown.
func TestUsageOfBurningContainers(t *testing.T) {
	needEngine(t)
	s := newScheduler(t)
	id := launch(t, s, &spec.AppDef{Name: "burn", Roles: []spec.Role{role("burn", 2, "burn", "48")}}, nil)
	wait(t, s, id, 60*time.Second, func(st *spec.AppStatus) bool { return st.State == spec.Running })

	const allocated = 48 << 20
	deadline := time.Now().Add(testkit.Scale(60 * time.Second))
	var u map[sched.ReplicaKey]sched.Usage
	for range 2 { // the second round measures CPU over the time since the first
		for {
			var err error
			u, err = s.Usage(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			ok := len(u) == 2
			for _, v := range u {
				ok = ok && v.RSS > allocated && v.CPU > 0 && !v.At.IsZero()
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("usage never showed both containers above %d bytes with CPU > 0: %+v", allocated, u)
			}
			time.Sleep(200 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for k, v := range u {
		t.Logf("%v: CPU %.2f cores, memory %d MiB", k, v.CPU, v.RSS>>20)
	}

	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(60*time.Second))
	defer cancel()
	if err := s.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	u, err := s.Usage(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(u) != 0 {
		t.Errorf("a cancelled app still shows usage: %+v", u)
	}
}

// BenchmarkUsage8 measures one Usage call for an app of 8 running containers: a
// container listing plus 8 one-shot stats requests, concurrently. Engine 20.10
// answers a one-shot request at its stats collector's next tick (once a second), so
// the wall time is about a second while the CPU spent is small.
func BenchmarkUsage8(b *testing.B) {
	needEngine(b)
	s := newScheduler(b)
	id := launch(b, s, &spec.AppDef{Name: "idle", Roles: []spec.Role{role("idle", 8, "loop")}}, nil)
	wait(b, s, id, 60*time.Second, func(st *spec.AppStatus) bool {
		running, total := st.Replicas()
		return running == total && st.State == spec.Running
	})
	cpu := cpuTime()
	for b.Loop() {
		u, err := s.Usage(context.Background(), id)
		if err != nil || len(u) != 8 {
			b.Fatal(len(u), err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkBareStats1 is the baseline: one one-shot stats request for one running
// container, straight to the Engine client, the response read whole.
func BenchmarkBareStats1(b *testing.B) {
	needEngine(b)
	s := newScheduler(b)
	id := launch(b, s, &spec.AppDef{Name: "idle", Roles: []spec.Role{role("idle", 1, "loop")}}, nil)
	wait(b, s, id, 60*time.Second, func(st *spec.AppStatus) bool { return st.State == spec.Running })
	cli, sums, _, err := s.appContainers(context.Background(), id)
	if err != nil {
		b.Fatal(err)
	}
	cpu := cpuTime()
	for b.Loop() {
		res, err := cli.ContainerStats(context.Background(), sums[0].ID, client.ContainerStatsOptions{})
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxStatsBytes))
		res.Body.Close()
	}
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// cpuTime is the CPU time (user + system) this process has used: what a benchmark
// costs the machine, apart from the Engine's own.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
