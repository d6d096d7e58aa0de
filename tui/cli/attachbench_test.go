package cli

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/wick-dev/wick/internal/testkit"
)

// pairedRun is one of the commands a paired benchmark interleaves.
type pairedRun struct {
	name string
	run  func(b *testing.B) time.Duration
}

// paired runs the commands once each per iteration, in an order rotating from one
// iteration to the next, so that a busy machine weighs on each alike, and reports each
// one's median as NAME-ms/op, with the load. It returns the medians, by command: a
// shared machine (or a shared Slurm controller) stalls a run now and then, by
// seconds, and a mean would be that stall's.
func paired(b *testing.B, runs ...pairedRun) []time.Duration {
	b.Helper()
	for _, r := range runs { // warm the page cache and the state directory
		r.run(b)
	}
	times := make([][]time.Duration, len(runs))
	n := 0
	b.ResetTimer()
	for b.Loop() {
		for i := range runs {
			k := (i + n) % len(runs)
			times[k] = append(times[k], runs[k].run(b))
		}
		n++
	}
	med := make([]time.Duration, len(runs))
	for i, r := range runs {
		slices.Sort(times[i])
		med[i] = times[i][len(times[i])/2]
		b.ReportMetric(float64(med[i].Microseconds())/1000, r.name+"-ms/op")
	}
	b.ReportMetric(testkit.Load(), "load")
	return med
}

// timed returns a pairedRun of a command run in dir with env, its output discarded.
func timed(name, dir string, env []string, argv ...string) pairedRun {
	return pairedRun{name, func(b *testing.B) time.Duration {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Env = dir, env
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("%v: %v", argv, err)
		}
		return time.Since(start)
	}}
}

// BenchmarkAttachedEcho times `wick run utils.echo` attached (launch, follow the
// replica's logs to their end, print the final state) beside `wick run --detach` of the
// same component (the launch alone), `sh -c 'echo hi'` (what the machine can do) and a
// Go program that prints a line (testdata/hello: one Go start, of which an attached run
// makes two, wick and its supervisor, and three with the reaper), interleaved:
// attached/detached and attached/sh are the figures (#37's bounds: at most 1.2 and 15).
func BenchmarkAttachedEcho(b *testing.B) {
	dir := b.TempDir()
	env := append(os.Environ(), "WICK_HOME="+filepath.Join(dir, "state"), "HOME="+dir, "NO_COLOR=1")
	runs := []pairedRun{
		timed("sh", dir, env, "sh", "-c", "echo hi"),
		timed("detached", dir, env, builtWick, "run", "--detach", "utils.echo", "--msg", "hi"),
		timed("attached", dir, env, builtWick, "run", "utils.echo", "--msg", "hi"),
		timed("hello", dir, env, buildTestdata(b, "hello")),
	}
	// WICK_BENCH_BASE names another wick (the one before a change): its attached run
	// is interleaved with the others, and attached/base is the change's figure.
	base := os.Getenv("WICK_BENCH_BASE")
	if base != "" {
		runs = append(runs, timed("base-attached", dir, env, base, "run", "utils.echo", "--msg", "hi"))
	}
	sum := paired(b, runs...)
	b.ReportMetric(float64(sum[2])/float64(sum[1]), "attached/detached")
	b.ReportMetric(float64(sum[2])/float64(sum[0]), "attached/sh")
	b.ReportMetric(float64(sum[2])/float64(sum[3]), "attached/hello")
	if base != "" {
		b.ReportMetric(float64(sum[2])/float64(sum[4]), "attached/base")
	}
}
