package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/internal/testkit"
)

// slurmBench is a benchmark's state directory and job directory on the test cluster.
type slurmBench struct {
	dir string // the job directory: the nodes run on this machine
	env []string
}

func newSlurmBench(b *testing.B) *slurmBench {
	b.Helper()
	testkit.NeedSlurm(b)
	dir := b.TempDir()
	return &slurmBench{dir: dir, env: append(os.Environ(), "WICK_HOME="+filepath.Join(dir, "state"), "HOME="+dir, "NO_COLOR=1")}
}

var slurmHandle = regexp.MustCompile(`slurm://\S+/([0-9]+)`)

// run runs wick to its end and returns its handle and job id.
func (s *slurmBench) run(b *testing.B, args ...string) (handle, id string) {
	b.Helper()
	cmd := exec.Command(builtWick, args...)
	cmd.Dir, cmd.Env = s.dir, s.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("wick %v: %v\n%s", args, err, out)
	}
	m := slurmHandle.FindStringSubmatch(string(out))
	if m == nil {
		b.Fatalf("wick %v: no handle in\n%s", args, out)
	}
	return m[0], m[1]
}

// output runs wick to its end and returns what it printed to stdout.
func (s *slurmBench) output(b *testing.B, args ...string) string {
	b.Helper()
	cmd := exec.Command(builtWick, args...)
	cmd.Dir, cmd.Env = s.dir, s.env
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("wick %v: %v", args, err)
	}
	return string(out)
}

// bareSlurmRun is what a user without wick does: sbatch --wrap, then squeue every
// 0.1 s until the job has left the running states.
func (s *slurmBench) bareSlurmRun(b *testing.B) time.Duration { return s.bareSlurmWrap(b, "echo hi") }

// bareSrunRun is bareSlurmRun of a job that runs its command as a step (srun), as
// TorchX's model (and wick's job) runs each replica: what Slurm's own step adds.
func (s *slurmBench) bareSrunRun(b *testing.B) time.Duration {
	return s.bareSlurmWrap(b, "srun echo hi")
}

// bareSlurmWrap submits wrap with sbatch --wrap and polls squeue every 0.1 s until
// the job has left the running states.
func (s *slurmBench) bareSlurmWrap(b *testing.B, wrap string) time.Duration {
	start := time.Now()
	cmd := exec.Command("sbatch", "--parsable", "--chdir="+s.dir, "--wrap", wrap)
	out, err := cmd.Output()
	if err != nil {
		b.Fatal(err)
	}
	id := strings.TrimSpace(string(out))
	for {
		st, err := exec.Command("squeue", "-h", "-t", "all", "-j", id, "-o", "%T").Output()
		if err != nil {
			b.Fatal(err)
		}
		switch strings.TrimSpace(string(st)) {
		case "PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "":
			time.Sleep(100 * time.Millisecond)
			continue
		}
		return time.Since(start)
	}
}

// BenchmarkSlurmAttachedEcho times an attached `wick run -s slurm utils.echo`, submit
// to exit, beside `sbatch --wrap 'echo hi'` and squeue every 0.1 s until it is done
// (Slurm itself: TorchX's slurm scheduler does not run on Slurm 22.05), and beside
// the same with echo run as a step, `sbatch --wrap 'srun echo hi'` (bare-srun: a
// replica in TorchX's model is a step), interleaved.
// The bound: at most 1.2x.
func BenchmarkSlurmAttachedEcho(b *testing.B) {
	s := newSlurmBench(b)
	runs := []pairedRun{
		{"bare", s.bareSlurmRun},
		timed("wick", s.dir, s.env, builtWick, "run", "-s", "slurm", "utils.echo", "--msg", "hi"),
		{"bare-srun", s.bareSrunRun},
	}
	// WICK_BENCH_BASE names another wick (the one before a change): its attached run
	// is interleaved with the others, and wick/base is the change's figure.
	base := os.Getenv("WICK_BENCH_BASE")
	if base != "" {
		runs = append(runs, timed("base", s.dir, s.env, base, "run", "-s", "slurm", "utils.echo", "--msg", "hi"))
	}
	sum := paired(b, runs...)
	b.ReportMetric(float64(sum[1])/float64(sum[0]), "wick/bare")
	b.ReportMetric(float64(sum[1])/float64(sum[2]), "wick/bare-srun")
	b.ReportMetric(float64(sum[2])/float64(sum[0]), "bare-srun/bare")
	if base != "" {
		b.ReportMetric(float64(sum[1])/float64(sum[3]), "wick/base")
		b.ReportMetric(float64(sum[3])/float64(sum[0]), "base/bare")
	}
}

// BenchmarkSlurmLog200k times `wick log` of a finished Slurm job of 200,000 lines
// beside awk prefixing each line of the same files as wick does, interleaved. The
// issue's bound: at most 2x.
func BenchmarkSlurmLog200k(b *testing.B) {
	s := newSlurmBench(b)
	h, id := s.run(b, "run", "-s", "slurm", "utils.sh", "--", "seq", "200000")
	files := []string{
		filepath.Join(s.dir, "slurm-"+id+"-sh-0.out"),
		filepath.Join(s.dir, "slurm-"+id+"-sh-0.err"),
	}
	sum := paired(b,
		timed("awk", s.dir, s.env, append([]string{"awk", `{print "sh/0 " $0}`}, files...)...),
		timed("wick", s.dir, s.env, builtWick, "log", h),
	)
	b.ReportMetric(float64(sum[1])/float64(sum[0]), "wick/awk")
}

// bothStreamsJob is a training script's output shape: 200,000 lines, a progress line
// to stderr after every 99 lines to stdout (block-buffered, as Python's is into a
// file), pausing ten times for 0.3 s so that the replica's .times index samples the
// files several times, some of them in the middle of a line.
const bothStreamsJob = `import sys, time
for i in range(200000):
    if i % 100 == 99:
        print(f"train: step {i}/200000 warning: grad norm {i % 7}.5 clipped", file=sys.stderr)
    else:
        print(f"step {i} loss {1 / (i + 1):.6f} lr 0.0003")
    if i % 20000 == 19999:
        time.sleep(0.3)
`

// BenchmarkSlurmLog200kBoth times `wick log` of a finished Slurm job of 200,000 lines
// split over stdout and stderr (bothStreamsJob: what a torch job writes), which wick
// prints in time order, beside awk prefixing each line of the same two files,
// interleaved. The bound: at most 2x.
func BenchmarkSlurmLog200kBoth(b *testing.B) {
	s := newSlurmBench(b)
	script := filepath.Join(s.dir, "job.py")
	if err := os.WriteFile(script, []byte(bothStreamsJob), 0o644); err != nil {
		b.Fatal(err)
	}
	h, id := s.run(b, "run", "-s", "slurm", "utils.sh", "--", "/usr/bin/python3", script)
	files := []string{
		filepath.Join(s.dir, "slurm-"+id+"-sh-0.out"),
		filepath.Join(s.dir, "slurm-"+id+"-sh-0.err"),
	}
	for _, f := range files {
		if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
			b.Fatalf("%s: the job wrote nothing there (%v)", f, err)
		}
	}
	// What is timed prints what the lines read one by one print (--timestamps reads
	// them so), without their times.
	plain, stamped := s.output(b, "log", h), s.output(b, "log", "--timestamps", h)
	var want strings.Builder
	for line := range strings.Lines(stamped) {
		_, rest, _ := strings.Cut(line, " ")
		want.WriteString(rest)
	}
	if n := strings.Count(plain, "\n"); plain != want.String() || n != 200000 {
		b.Fatalf("wick log printed %d lines, not what the lines read one by one give (%d bytes, want %d)", n, len(plain), want.Len())
	}
	sum := paired(b,
		timed("awk", s.dir, s.env, append([]string{"awk", `{print "sh/0 " $0}`}, files...)...),
		timed("wick", s.dir, s.env, builtWick, "log", h),
	)
	b.ReportMetric(float64(sum[1])/float64(sum[0]), "wick/awk")
}

// BenchmarkSlurmStatusAndList times `wick status` of a finished job beside the
// `scontrol show job` it calls, and `wick list -s slurm` beside the `squeue` it calls,
// interleaved. Beside them, the floor of any Go tool that wraps the same command
// (testdata/execcopy: a minimal Go program, built as wick is, that runs it and copies
// its output): status/floor and list/floor are what wick adds beyond Go's own start-up
// and a fork/exec (#37's bound: at most 1.3x each). And `wick status` of a job
// slurmctld has purged (MinJobAge after its end, stood in for by moving its record to
// an id Slurm never held): once a status has seen it gone, its end is final and
// status asks Slurm nothing (purged/scontrol).
func BenchmarkSlurmStatusAndList(b *testing.B) {
	s := newSlurmBench(b)
	floor := buildExecCopy(b)
	purgedHandle, _ := s.run(b, "run", "-s", "slurm", "utils.echo", "--msg", "bye")
	purged := forgetJob(b, filepath.Join(s.dir, "state"), purgedHandle, "990000201")
	if out := s.output(b, "status", purged); !strings.Contains(out, "SUCCEEDED") {
		b.Fatalf("status of the purged job:\n%s", out)
	}
	h, id := s.run(b, "run", "-s", "slurm", "utils.echo", "--msg", "hi")
	scontrol := []string{"scontrol", "show", "job", "-o", id}
	squeue := []string{"squeue", "-h", "--me", "-t", "all", "-o", "%i|%A|%T|%r|%N|%V|%S|%e|%j"}
	runs := []pairedRun{
		timed("scontrol", s.dir, s.env, scontrol...),
		timed("floor-status", s.dir, s.env, append([]string{floor}, scontrol...)...),
		timed("status", s.dir, s.env, builtWick, "status", h),
		timed("squeue", s.dir, s.env, squeue...),
		timed("floor-list", s.dir, s.env, append([]string{floor}, squeue...)...),
		timed("list", s.dir, s.env, builtWick, "list", "-s", "slurm"),
		timed("status-purged", s.dir, s.env, builtWick, "status", purged),
	}
	// WICK_BENCH_BASE names another wick (the one before a change): its status and
	// list are interleaved with the others, and status/base and list/base are the
	// change's figures.
	base := os.Getenv("WICK_BENCH_BASE")
	if base != "" {
		runs = append(runs,
			timed("base-status", s.dir, s.env, base, "status", h),
			timed("base-list", s.dir, s.env, base, "list", "-s", "slurm"))
	}
	sum := paired(b, runs...)
	b.ReportMetric(float64(sum[2])/float64(sum[0]), "status/scontrol")
	b.ReportMetric(float64(sum[2])/float64(sum[1]), "status/floor")
	b.ReportMetric(float64(sum[1])/float64(sum[0]), "floor/scontrol")
	b.ReportMetric(float64(sum[5])/float64(sum[3]), "list/squeue")
	b.ReportMetric(float64(sum[5])/float64(sum[4]), "list/floor")
	b.ReportMetric(float64(sum[4])/float64(sum[3]), "floor/squeue")
	b.ReportMetric(float64(sum[6])/float64(sum[0]), "purged/scontrol")
	if base != "" {
		b.ReportMetric(float64(sum[2])/float64(sum[7]), "status/base")
		b.ReportMetric(float64(sum[5])/float64(sum[8]), "list/base")
		b.ReportMetric(float64(sum[7])/float64(sum[1]), "base-status/floor")
		b.ReportMetric(float64(sum[8])/float64(sum[4]), "base-list/floor")
	}
}

// buildExecCopy builds testdata/execcopy as wick is built and returns its path.
func buildExecCopy(b *testing.B) string { return buildTestdata(b, "execcopy") }

// buildTestdata builds the program testdata/NAME as wick is built (static,
// -trimpath) and returns its path.
func buildTestdata(b *testing.B, name string) string {
	b.Helper()
	out := filepath.Join(b.TempDir(), name)
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "../../testdata/"+name)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building %s: %v\n%s", name, err, msg)
	}
	return out
}

// BenchmarkStartup times `wick --version`, the start every verb and every
// supervisor pays, beside a Go program that prints a line (testdata/hello, built as
// wick is), interleaved: what wick's own packages add to Go's start-up (their
// initialisation, the page faults of a larger binary, the verb's command).
func BenchmarkStartup(b *testing.B) {
	dir := b.TempDir()
	env := append(os.Environ(), "WICK_HOME="+filepath.Join(dir, "state"), "HOME="+dir, "NO_COLOR=1")
	sum := paired(b,
		timed("hello", dir, env, buildTestdata(b, "hello")),
		timed("wick", dir, env, builtWick, "--version"),
	)
	b.ReportMetric(float64(sum[1])/float64(sum[0]), "wick/hello")
}
