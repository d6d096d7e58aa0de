package cli

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// mergeBenchLines is how many lines each replica of BenchmarkLogTwoReplicas writes:
// WICK_BENCH_MERGE_LINES, else a million (ten million take minutes of a shared
// machine per run; the README's figure is of ten million, run once).
func mergeBenchLines(b *testing.B) int {
	if v := os.Getenv("WICK_BENCH_MERGE_LINES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("WICK_BENCH_MERGE_LINES=%q: want a positive number", v)
		}
		return n
	}
	return 1_000_000
}

// BenchmarkLogTwoReplicas times `wick log` of an app of two replicas that wrote their
// lines at the same time (50 bytes each), in time order, beside `wick log` of each
// replica alone, interleaved: merged/singles is the merge against the sum of the two
// single reads (the bound: at most 1.5x). MB-rss is the merged read's peak
// memory, which must not grow with the logs.
func BenchmarkLogTwoReplicas(b *testing.B) {
	dir := b.TempDir()
	env := append(os.Environ(), "WICK_HOME="+filepath.Join(dir, "state"), "HOME="+dir, "NO_COLOR=1")
	n := mergeBenchLines(b)
	launch := exec.Command(builtWick, "run", "utils.sh", "--num_replicas", "2", "sh", "-c",
		"yes 0123456789012345678901234567890123456789012345678 | head -n "+strconv.Itoa(n))
	launch.Dir, launch.Env = dir, env
	out, err := launch.Output()
	if err != nil {
		b.Fatalf("launch: %v", err)
	}
	h := string(out[:len(out)-1])
	var peak int64
	merged := pairedRun{"merged", func(b *testing.B) time.Duration {
		cmd := exec.Command(builtWick, "log", h)
		cmd.Dir, cmd.Env, cmd.Stdout = dir, env, io.Discard
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peak = max(peak, ru.Maxrss)
		}
		return d
	}}
	one := func(k int) pairedRun {
		return timed("replica"+strconv.Itoa(k), dir, env, builtWick, "log", h+"/sh/"+strconv.Itoa(k))
	}
	sum := paired(b, one(0), one(1), merged)
	b.ReportMetric(float64(sum[2])/float64(sum[0]+sum[1]), "merged/singles")
	b.ReportMetric(float64(peak)/1024, "MB-rss")
	b.ReportMetric(float64(n), "lines/replica")
}
