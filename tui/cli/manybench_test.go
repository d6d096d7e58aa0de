package cli

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/render"
)

// manyReplicasApp launches a real local_cwd app of reps replicas (utils.sh) that each
// write lines step lines, one at a time 20 ms apart (as ranks printing a step line
// each do), waits for its end and returns its directory, environment and handle. Each
// line is a run of its own in the replica's log, and the replicas' lines interleave.
// Building it takes seconds (1,024 replicas: 6 s on an idle machine), so it lives
// in benchmarks only.
func manyReplicasApp(b *testing.B, reps, lines int) (dir string, env []string, h string) {
	b.Helper()
	dir = b.TempDir()
	env = append(os.Environ(), "WICK_HOME="+filepath.Join(dir, "state"), "HOME="+dir, "NO_COLOR=1")
	script := `$|=1; for $i (1..` + strconv.Itoa(lines) + `) { print "step $i of a rank, loss 0.123456 lr 0.0001 ....\n"; select(undef,undef,undef,0.02) }`
	launch := exec.Command(builtWick, "run", "--detach", "utils.sh", "--num_replicas", strconv.Itoa(reps), "--", "perl", "-e", script)
	launch.Dir, launch.Env = dir, env
	out, err := launch.Output()
	if err != nil {
		b.Fatalf("launch: %v", err)
	}
	h = strings.TrimSpace(string(out))
	wait := exec.Command(builtWick, "log", "-t", h) // follows to the app's end
	wait.Dir, wait.Env, wait.Stdout = dir, env, io.Discard
	if err := wait.Run(); err != nil {
		b.Fatalf("follow: %v", err)
	}
	return dir, env, h
}

// BenchmarkLogManyReplicas times wick log of many replicas that each wrote one line at
// a time (interleaved single lines, a real app of 1,024 replicas x 50 lines):
//
//   - merge/N: the merge of N replicas by runs (mergeRuns, a heap), beside the same
//     merge by a look at every replica for each run (mergeRunsScan, what it was) and
//     beside the sum of the N replicas read one by one (singles, the baseline of the
//     README's merge rows), in one process, the iterators' opening included;
//   - one: `wick log APP/sh/500`, one replica of the 1,024, beside `cat` of that
//     replica's log file (what the machine can do) and beside `wick log` of the
//     replica of an app of one replica that wrote the same (alone: what reading one
//     replica costs wick).
func BenchmarkLogManyReplicas(b *testing.B) {
	const reps, lines = 1024, 50
	dir, env, h := manyReplicasApp(b, reps, lines)
	handle, err := spec.ParseHandle(h)
	if err != nil {
		b.Fatal(err)
	}
	a := &app{ctx: context.Background(), home: filepath.Join(dir, "state"), env: Env{WorkDir: dir, Self: builtWick,
		Getenv: func(string) string { return "" }, Stdout: io.Discard, Stderr: io.Discard}}
	defer a.runner().Close()
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devnull.Close()
	// print prints the replicas of refs merged with merge, to /dev/null.
	print := func(b *testing.B, refs []replicaRef, merge func(*linePrinter, context.Context, []sched.LogIterator, []sched.RunReader) error) time.Duration {
		start := time.Now()
		srefs := make([]sched.ReplicaRef, len(refs))
		for i, r := range refs {
			srefs[i] = sched.ReplicaRef{Role: r.role, Replica: r.k}
		}
		its, err := a.runner().LogLinesOf(a.ctx, handle, srefs, sched.LogOptions{})
		if err != nil {
			b.Fatal(err)
		}
		rrs, ok := runReaders(its)
		if !ok {
			b.Fatal("the local scheduler's iterators give no runs")
		}
		w := bufio.NewWriterSize(devnull, 64<<10)
		p := &linePrinter{w: w, st: render.Plain{}, prefix: true, index: prefixIndex(refs)}
		if err := merge(p, a.ctx, its, rrs); err != nil {
			b.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		for _, it := range its {
			it.Close()
		}
		return time.Since(start)
	}
	for _, n := range []int{256, 1024} {
		refs := make([]replicaRef, n)
		for k := range refs {
			refs[k] = replicaRef{"sh", k}
		}
		b.Run("merge/"+strconv.Itoa(n), func(b *testing.B) {
			med := paired(b,
				pairedRun{"heap", func(b *testing.B) time.Duration { return print(b, refs, (*linePrinter).mergeRuns) }},
				pairedRun{"scan", func(b *testing.B) time.Duration { return print(b, refs, mergeRunsScan) }},
				pairedRun{"singles", func(b *testing.B) time.Duration {
					var sum time.Duration
					for _, r := range refs {
						sum += print(b, []replicaRef{r}, (*linePrinter).mergeRuns)
					}
					return sum
				}},
			)
			b.ReportMetric(float64(med[0])/float64(med[2]), "heap/singles")
			b.ReportMetric(float64(med[1])/float64(med[2]), "scan/singles")
			b.ReportMetric(float64(n*lines), "lines")
		})
	}
	b.Run("one", func(b *testing.B) {
		file := filepath.Join(dir, "state", "logs", handle.Session, handle.AppID, "sh", "500", "combined.log")
		if _, err := os.Stat(file); err != nil {
			b.Fatalf("replica 500's log: %v", err)
		}
		// The same replica's log in an app of one replica: what the other 1,023
		// add to reading one.
		dir1, env1, h1 := manyReplicasApp(b, 1, lines)
		med := paired(b,
			timed("wick", dir, env, builtWick, "log", h+"/sh/500"),
			timed("alone", dir1, env1, builtWick, "log", h1+"/sh/0"),
			timed("cat", dir, env, "cat", file),
		)
		b.ReportMetric(float64(med[0])/float64(med[2]), "wick/cat")
		b.ReportMetric(float64(med[0])/float64(med[1]), "wick/alone")
	})
}
