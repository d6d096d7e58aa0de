package slurm

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// Benchmarks against the test cluster (`make slurm-up`), each beside the bare Slurm
// command that does the same: wick's figure minus the baseline's is wick's own cost.

// benchPoll is how often the submit benchmarks look at the job: the same for wick and
// for the baseline, so that both measure Slurm's start plus the same polling error.
const benchPoll = 10 * time.Millisecond

// BenchmarkSubmitToRunning times utils.echo from Schedule (scontrol ping + sbatch +
// the record) until its replica has started, beside a bare `sbatch --wrap true` until
// squeue says it started.
func BenchmarkSubmitToRunning(b *testing.B) {
	b.Run("wick-echo", func(b *testing.B) {
		h := newHarness(b)
		app := &spec.AppDef{Name: "echo", Roles: []spec.Role{testRole("echo", 1, "echo", "hello")}}
		var ids []string
		b.Cleanup(func() {
			for _, id := range ids {
				h.stop(id) // Slurm is done with the directory before it is removed
			}
		})
		for b.Loop() {
			id, err := h.trySubmit(app, nil)
			if err != nil {
				b.Fatal(err)
			}
			ids = append(ids, id)
			for {
				d, err := h.s.Describe(context.Background(), id)
				if err != nil {
					b.Fatal(err)
				}
				if d.Status.State.Started() {
					break
				}
				time.Sleep(benchPoll)
			}
		}
	})
	b.Run("bare-sbatch", func(b *testing.B) {
		needCluster(b)
		dir := b.TempDir()
		var ids []string
		b.Cleanup(func() { waitEnded(ids) })
		for b.Loop() {
			out, err := exec.Command("sbatch", "--parsable", "--chdir="+dir, "--wrap", "true").Output()
			if err != nil {
				b.Fatal(err)
			}
			id := strings.TrimSpace(string(out))
			ids = append(ids, id)
			for {
				st, err := exec.Command("squeue", "-h", "-t", "all", "-j", id, "-o", "%T").Output()
				if err != nil {
					b.Fatal(err)
				}
				if s := strings.TrimSpace(string(st)); s != "PENDING" && s != "CONFIGURING" && s != "" {
					break
				}
				time.Sleep(benchPoll)
			}
		}
	})
}

// waitEnded waits (at most 30 s) until Slurm no longer runs any of the jobs, so that
// it has stopped writing to a directory about to be removed.
func waitEnded(ids []string) {
	if len(ids) == 0 {
		return
	}
	deadline := time.Now().Add(testkit.Scale(30 * time.Second))
	for time.Now().Before(deadline) {
		out, err := exec.Command("squeue", "-h", "-t", "PENDING,RUNNING,COMPLETING", "-j", strings.Join(ids, ","), "-o", "%i").Output()
		if err != nil || strings.TrimSpace(string(out)) == "" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pendingJobs submits n wick jobs that stay PENDING (more CPUs than any node has), so
// that slurmctld holds n jobs without running them, and cancels them at the end.
func pendingJobs(b *testing.B, h *harness, n int) []string {
	b.Helper()
	app := &spec.AppDef{Name: "held", Roles: []spec.Role{testRole("held", 1, "true")}}
	app.Roles[0].Resource.CPU = 512
	var ids []string
	b.Cleanup(func() {
		if len(ids) > 0 {
			_ = exec.Command("scancel", ids...).Run()
		}
	})
	for range n {
		id, err := h.trySubmit(app, nil)
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// BenchmarkWith200Jobs times status (Describe) and list with 200 of wick's jobs known
// to slurmctld, beside the bare command each runs (scontrol show job; squeue over
// every job).
func BenchmarkWith200Jobs(b *testing.B) {
	h := newHarness(b)
	ids := pendingJobs(b, h, 200)
	ctx := context.Background()
	b.Run("wick-status", func(b *testing.B) {
		for b.Loop() {
			d, err := h.s.Describe(ctx, ids[len(ids)/2])
			if err != nil || d.Status.State != spec.Pending {
				b.Fatalf("%v %+v", err, d)
			}
		}
	})
	b.Run("bare-scontrol", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("scontrol", "show", "job", "-o", ids[len(ids)/2]).Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wick-list", func(b *testing.B) {
		for b.Loop() {
			apps, err := h.s.List(ctx)
			if err != nil || len(apps) != len(ids) {
				b.Fatalf("%d apps, %v", len(apps), err)
			}
		}
	})
	b.Run("bare-squeue", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("squeue", "-h", "--me", "-t", "all", "-o", squeueFormat).Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkFollowLatency times a line from its write to a file until a follower
// delivers it, after the follower has idled long enough to poll at its slowest
// (the worst case), beside `tail -F`, which inotify wakes at once on a local disk.
func BenchmarkFollowLatency(b *testing.B) {
	const idle = 600 * time.Millisecond // past the backoff to logPollMax
	b.Run("wick-polled", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "out")
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		it := newFileIter(path, sched.Stdout, "r", 0, sched.LogOptions{Follow: true}, func(context.Context) bool { return false })
		defer it.Close()
		lines := make(chan time.Time, 1)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			for {
				if _, err := it.Next(ctx); err != nil {
					return
				}
				lines <- time.Now()
			}
		}()
		var total time.Duration
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			time.Sleep(idle)
			b.StartTimer()
			t0 := time.Now()
			fmt.Fprintf(f, "line %d\n", i)
			total += (<-lines).Sub(t0)
		}
		b.ReportMetric(total.Seconds()*1000/float64(b.N), "ms/line")
	})
	b.Run("tail-F", func(b *testing.B) {
		if _, err := exec.LookPath("tail"); err != nil {
			b.Skip("no tail")
		}
		path := filepath.Join(b.TempDir(), "out")
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		// tail prints the file from its start, then follows: once it has printed
		// "ready", it is following (no sleep to guess when).
		fmt.Fprintln(f, "ready")
		cmd := exec.Command("tail", "-n", "+1", "-F", path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		sc := bufio.NewScanner(out)
		if !sc.Scan() || sc.Text() != "ready" {
			b.Fatalf("tail printed %q", sc.Text())
		}
		var total time.Duration
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			time.Sleep(idle)
			b.StartTimer()
			t0 := time.Now()
			fmt.Fprintf(f, "line %d\n", i)
			if !sc.Scan() {
				b.Fatal("tail ended")
			}
			total += time.Since(t0)
		}
		b.ReportMetric(total.Seconds()*1000/float64(b.N), "ms/line")
	})
}
