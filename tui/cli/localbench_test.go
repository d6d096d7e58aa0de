package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkLocalStatusAndList times `wick status` of a finished local_cwd app and
// `wick list -s local_cwd` of 10 apps beside the floor of any Go tool that shows the
// same stored state (testdata/execcopy running `cat` of the app's state.json, or of
// the 10 apps' state.json files: a static Go program's start, a fork/exec, the files
// read) and beside a Go program that prints a line (testdata/hello, a Go start
// alone), interleaved. #37's bound: at most 1.3x the floor.
func BenchmarkLocalStatusAndList(b *testing.B) {
	dir := b.TempDir()
	env := append(os.Environ(), "WICK_HOME="+filepath.Join(dir, "state"), "HOME="+dir, "NO_COLOR=1")
	var handles []string
	for range 10 {
		cmd := exec.Command(builtWick, "run", "utils.echo", "--msg", "hi")
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("wick run: %v\n%s", err, out)
		}
		for _, f := range strings.Fields(string(out)) {
			if strings.HasPrefix(f, "local_cwd://") {
				handles = append(handles, f)
				break
			}
		}
	}
	if len(handles) != 10 {
		b.Fatalf("%d handles of 10 apps", len(handles))
	}
	states, err := filepath.Glob(filepath.Join(dir, "state", "local", "apps", "*", "state.json"))
	if err != nil || len(states) != 10 {
		b.Fatalf("%d state files of 10 apps (%v)", len(states), err)
	}
	app := handles[0][strings.LastIndex(handles[0], "/")+1:]
	floor := buildExecCopy(b)
	runs := []pairedRun{
		timed("hello", dir, env, buildTestdata(b, "hello")),
		timed("floor-status", dir, env, floor, "cat", filepath.Join(dir, "state", "local", "apps", app, "state.json")),
		timed("status", dir, env, builtWick, "status", handles[0]),
		timed("floor-list", dir, env, append([]string{floor, "cat"}, states...)...),
		timed("list", dir, env, builtWick, "list", "-s", "local_cwd"),
	}
	// WICK_BENCH_BASE names another wick (the one before a change): its status is
	// interleaved with the others, and status/base is the change's figure.
	base := os.Getenv("WICK_BENCH_BASE")
	if base != "" {
		runs = append(runs, timed("base-status", dir, env, base, "status", handles[0]))
	}
	sum := paired(b, runs...)
	b.ReportMetric(float64(sum[2])/float64(sum[1]), "status/floor")
	b.ReportMetric(float64(sum[4])/float64(sum[3]), "list/floor")
	b.ReportMetric(float64(sum[2])/float64(sum[0]), "status/hello")
	b.ReportMetric(float64(sum[4])/float64(sum[0]), "list/hello")
	if base != "" {
		b.ReportMetric(float64(sum[2])/float64(sum[5]), "status/base")
		b.ReportMetric(float64(sum[5])/float64(sum[1]), "base-status/floor")
	}
}
