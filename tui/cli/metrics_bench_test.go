package cli

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/internal/testkit"
)

// BenchmarkMetricsCSV measures `wick metrics --csv` on an app of 4 replicas x 250k
// demo.train lines (1M lines, 5 values each), beside `grep -c loss` of the same
// combined.log files (one pass over the bytes, no numbers read) and `wick log` of the
// app (the same lines through the same iterators, printed, no numbers read).
func BenchmarkMetricsCSV(b *testing.B) {
	grep, err := exec.LookPath("grep")
	if err != nil {
		b.Skip("grep not found")
	}
	root := b.TempDir()
	env := append(os.Environ(), "WICK_HOME="+filepath.Join(root, "state"), "HOME="+root, "NO_COLOR=1")
	run := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(5*time.Minute))
		defer cancel()
		cmd := exec.CommandContext(ctx, builtWick, args...)
		cmd.Env, cmd.Dir = env, root
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("wick %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	handle := run("run", "--detach", "demo.train", "--replicas", "4", "--steps", "250000", "--rate", "500000",
		"--steps_per_epoch", "10000", "--progress", "false", "--warnings", "false")
	run("log", "-t", "-n", "1", handle) // wait for the end
	files, _ := filepath.Glob(filepath.Join(root, "state", "logs", "wick", "*", "trainer", "*", "combined.log"))
	if len(files) != 4 {
		b.Fatalf("log files %v", files)
	}
	for _, c := range []struct {
		name string
		argv []string
	}{
		{"wick-metrics-csv", []string{builtWick, "metrics", "--csv", handle}},
		{"wick-log", []string{builtWick, "log", handle}},
		{"grep-c", append([]string{grep, "-c", "loss"}, files...)},
	} {
		b.Run(c.name, func(b *testing.B) {
			var cpu time.Duration
			for b.Loop() {
				cmd := exec.Command(c.argv[0], c.argv[1:]...)
				// A pipe, not /dev/null: GNU grep stops at the first match when
				// its output is /dev/null.
				cmd.Env, cmd.Dir, cmd.Stdout = env, root, io.Discard
				if err := cmd.Run(); err != nil {
					b.Fatalf("%v: %v", c.argv, err)
				}
				cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			}
			// Wall time depends on what else the machine runs; CPU time less so.
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ns/line")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/1e6, "cpu-ns/line")
		})
	}
}
