package wall

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// cpuTime is this process's CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSecondAt1024 is one second of a wall of 1,024 running replicas at 20 lines
// a second each, without its backend: the tick (lines per second), the app's status of
// 1,024 replicas, a CPU/RSS sample of each, and 60 batches of their lines, each
// followed by its frame. cores is the CPU that second takes (the bound for the
// wall's busiest second at 1,024 replicas: 0.7, backend included).
func BenchmarkSecondAt1024(b *testing.B) {
	const n, rate, frames = 1024, 20, 60
	m := benchWall(b, n, 1000)
	rs := spec.RoleStatus{Role: "trainer"}
	use := map[sched.ReplicaKey]sched.Usage{}
	now := time.Now()
	for k := range n {
		rs.Replicas = append(rs.Replicas, spec.ReplicaStatus{ID: k, Role: "trainer", State: spec.Running, Started: now})
		use[sched.ReplicaKey{Role: "trainer", Replica: k}] = sched.Usage{CPU: 0.02, RSS: 30 << 20, At: now}
	}
	desc := &sched.Description{Status: spec.AppStatus{AppID: "bench", State: spec.Running, Roles: []spec.RoleStatus{rs}}}
	// A second's lines, in the feed's batches: each replica's 20 lines spread over them.
	batches := make([]batchMsg, frames)
	for f := range batches {
		batches[f] = batchMsg{gen: m.gen, lines: make([][]sched.Line, n)}
	}
	for k := range n {
		for i, l := range demoLines(k, 0, rate, now) {
			f := (k + i*frames/rate) % frames
			batches[f].lines[k] = append(batches[f].lines[k], l)
		}
	}
	runtime.GC()
	cpu0 := cpuTime()
	sec := 0
	for b.Loop() {
		t := now.Add(time.Duration(sec) * time.Second)
		m.tick(t)
		m.applyStatus(desc)
		m.tookUsage(usageMsg{by: use})
		for _, bm := range batches {
			m.ingest(bm)
			_ = m.View()
		}
		sec++
	}
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(sec), "cores")
	b.ReportMetric(testkit.Load(), "load")
}
