package metrics_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestMain doubles the test binary as wick's supervisor (`BINARY __supervise DIR`), so
// that the Book reads the logs of real local apps.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == local.SuperviseVerb {
		if err := local.Supervise(context.Background(), os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "wick:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// counting is the Runner, counting the lines the Book reads and noting the Since of
// each reading.
type counting struct {
	r     *runner.Runner
	mu    sync.Mutex
	lines int
	since []time.Time
}

func (c *counting) LogLines(ctx context.Context, h spec.Handle, role string, k int, opts sched.LogOptions) (sched.LogIterator, error) {
	it, err := c.r.LogLines(ctx, h, role, k, opts)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.since = append(c.since, opts.Since)
	c.mu.Unlock()
	return &countingIt{it, c}, nil
}

func (c *counting) reset() (lines int, since []time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lines, since = c.lines, c.since
	c.lines, c.since = 0, nil
	return lines, since
}

type countingIt struct {
	sched.LogIterator
	c *counting
}

func (it *countingIt) Next(ctx context.Context) (sched.Line, error) {
	l, err := it.LogIterator.Next(ctx)
	if err == nil {
		it.c.mu.Lock()
		it.c.lines++
		it.c.mu.Unlock()
	}
	return l, err
}

// launch runs app on local_cwd under a private home and returns the runner and handle.
func launch(t *testing.T, home string, roles ...spec.Role) (*runner.Runner, spec.Handle) {
	t.Helper()
	reg := &sched.Registry{}
	local.Register(reg)
	r := runner.New(reg, sched.Config{Session: spec.DefaultSession, StateDir: home, WorkDir: t.TempDir(), Self: []string{os.Args[0]}})
	t.Cleanup(func() { _ = r.Close() })
	h, err := r.Run(context.Background(), &spec.AppDef{Name: "alarms", Roles: roles}, local.NameCwd, nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.Cancel(context.Background(), h)
		_, _ = r.Wait(context.Background(), h, 20*time.Millisecond)
	})
	return r, h
}

func shRole(name string, replicas int, script string) spec.Role {
	return spec.Role{Name: name, Entrypoint: "sh", Args: []string{"-c", script, "${replica_id}"}, NumReplicas: replicas}
}

func describe(t *testing.T, r *runner.Runner, h spec.Handle) *sched.Description {
	t.Helper()
	d, err := r.Describe(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestBookFinishedApp: a finished app's alarms are read once, named by rank, and
// remembered in the Book's file: a new Book (the UI opened again) knows them without
// reading a line, until the app is forgotten.
func TestBookFinishedApp(t *testing.T) {
	home := t.TempDir()
	// Replica 1 blows up at step 2; replica 0 trains on.
	r, h := launch(t, home, shRole("tr", 2, `if [ "$0" = 1 ]; then echo "step 1 loss 2.5"; echo "step 2 loss nan"; else echo "step 1 loss 2.5"; echo "step 2 loss 2.4"; fi`))
	if st, err := r.Wait(context.Background(), h, 20*time.Millisecond); err != nil || st.State != spec.Succeeded {
		t.Fatalf("app: %v %v", st, err)
	}
	dir := filepath.Join(home, "ui")
	src := &counting{r: r}
	book := metrics.NewBook(src, metrics.DefaultConfig(), dir)
	f, err := book.Scan(context.Background(), h, describe(t, r, h))
	if err != nil {
		t.Fatal(err)
	}
	if f.N != 1 || len(f.Lines) != 1 || f.Lines[0] != "loss on tr/1 is NaN at step 2" {
		t.Fatalf("found %+v, want the NaN of tr/1 at step 2", f)
	}
	if n, _ := src.reset(); n != 4 {
		t.Errorf("read %d lines, want the 4 of the app", n)
	}
	book.Save()
	if fi, err := os.Stat(filepath.Join(dir, "alarms.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("alarms.json: %v %v, want a private file", fi, err)
	}

	again := metrics.NewBook(src, metrics.DefaultConfig(), dir)
	if k, ok := again.Known(h); !ok || k.N != 1 || k.Lines[0] != f.Lines[0] {
		t.Fatalf("a new Book knows %+v %v, want the alarm read before", k, ok)
	}
	if f2, err := again.Scan(context.Background(), h, describe(t, r, h)); err != nil || f2.N != 1 {
		t.Fatalf("scan of a known app: %+v %v", f2, err)
	}
	if n, since := src.reset(); n != 0 || len(since) != 0 {
		t.Errorf("a known finished app was read again: %d lines, %d readers", n, len(since))
	}

	again.Forget(h)
	if _, ok := metrics.NewBook(src, metrics.DefaultConfig(), dir).Known(h); ok {
		t.Error("a forgotten app is still known to the file")
	}
}

// TestBookRunningApp: a running app is read as it goes, each reading taking only the
// lines written since the last one, and its alarm shows once its line is written.
func TestBookRunningApp(t *testing.T) {
	home := t.TempDir()
	gate := filepath.Join(t.TempDir(), "gate")
	// Waits (at most 30 s) for the gate before the bad step.
	r, h := launch(t, home, shRole("tr", 1, `echo "step 1 loss 2.5"; echo "step 2 loss 2.4"; i=0; while [ ! -e "`+gate+`" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; echo "step 3 loss inf"; echo "step 4 loss 2.2"`))
	src := &counting{r: r}
	book := metrics.NewBook(src, metrics.DefaultConfig(), "")
	ctx := context.Background()
	deadline := time.Now().Add(testkit.Scale(30 * time.Second))
	read := 0 // lines read over every reading
	for {
		f, err := book.Scan(ctx, h, describe(t, r, h))
		if err != nil {
			t.Fatal(err)
		}
		if f.N != 0 {
			t.Fatalf("alarms before the bad step: %+v", f)
		}
		if n, _ := src.reset(); n > 0 {
			read += n
			break // the first lines are read
		}
		if time.Now().After(deadline) {
			t.Fatal("the first lines were never read")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, ok := book.Known(h); ok {
		t.Fatal("a running app is known as finished")
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if st, err := r.Wait(ctx, h, 20*time.Millisecond); err != nil || st.State != spec.Succeeded {
		t.Fatalf("app: %v %v", st, err)
	}
	f, err := book.Scan(ctx, h, describe(t, r, h))
	if err != nil || f.N != 1 || f.Lines[0] != "loss on tr/0 is inf at step 3" {
		t.Fatalf("after the bad step: %+v %v", f, err)
	}
	// The last reading starts at the time of the last line read before, and reads
	// again the lines of that time (one or two: lines written in one go share a time)
	// to find those that ended since.
	n, since := src.reset()
	if read += n; read < 5 || read > 6 || len(since) != 1 || since[0].IsZero() {
		t.Errorf("the readings read %d lines in all, the last from %v; want the 4 lines and those of the last time read again, the last reading from where the one before ended", read, since)
	}
	if k, ok := book.Known(h); !ok || k.N != 1 {
		t.Errorf("the finished app is not known: %+v %v", k, ok)
	}
}

// TestBookLineEndingLate: a line's time is when it began. Replica 0 begins a line and
// ends it (a NaN) only after replica 1 has written later lines that a reading took: the
// next reading must still find it, and the finished app must be kept with its alarm,
// never as "no alarm".
func TestBookLineEndingLate(t *testing.T) {
	home := t.TempDir()
	dir := t.TempDir()
	gate, ended := filepath.Join(dir, "gate"), filepath.Join(dir, "ended")
	wait := func(f string) string {
		return `i=0; while [ ! -e "` + f + `" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; `
	}
	r, h := launch(t, home, shRole("tr", 2, `if [ "$0" = 0 ]; then echo "step 1 loss 2.5"; printf "step 2 loss "; `+wait(gate)+`echo "nan"; touch "`+ended+`"; else sleep 0.3; echo "step 1 loss 2.5"; echo "step 2 loss 2.4"; `+wait(ended)+`fi`))
	book := metrics.NewBook(r, metrics.DefaultConfig(), "")
	ctx := context.Background()
	deadline := time.Now().Add(testkit.Scale(30 * time.Second))
	for {
		// Until replica 1's lines (later than the unfinished line's start) are read.
		f, err := book.Scan(ctx, h, describe(t, r, h))
		if err != nil || f.N != 0 {
			t.Fatalf("before the line ends: %+v %v", f, err)
		}
		lines := 0
		for _, k := range []int{0, 1} {
			it, err := r.LogLines(ctx, h, "tr", k, sched.LogOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, err := it.Next(ctx); err == nil; _, err = it.Next(ctx) {
				lines++
			}
			it.Close()
		}
		if lines == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d lines written, want 3 before the gate", lines)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2100 * time.Millisecond) // past rescanEvery: the next Scan reads again
	if f, err := book.Scan(ctx, h, describe(t, r, h)); err != nil || f.N != 0 {
		t.Fatalf("before the line ends: %+v %v", f, err)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if st, err := r.Wait(ctx, h, 20*time.Millisecond); err != nil || st.State != spec.Succeeded {
		t.Fatalf("app: %v %v", st, err)
	}
	f, err := book.Scan(ctx, h, describe(t, r, h))
	if err != nil || f.N != 1 || f.Lines[0] != "loss on tr/0 is NaN at step 2" {
		t.Fatalf("after the line ended: %+v %v, want the NaN of tr/0 at step 2", f, err)
	}
	if k, ok := book.Known(h); !ok || k.N != 1 {
		t.Errorf("the finished app is kept as %+v %v, want its alarm", k, ok)
	}
}

// cpuTime is the CPU time this process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writeMixed writes n lines cycling through the lines of testdata/formats.
func writeMixed(path string, n int) error {
	files, err := filepath.Glob("testdata/formats/*.txt")
	if err != nil {
		return err
	}
	var base []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		for _, l := range strings.Split(string(data), "\n") {
			if q, ok := strings.CutPrefix(l, "line "); ok {
				s, err := strconv.Unquote(q)
				if err != nil {
					return fmt.Errorf("%s: %w", f, err)
				}
				base = append(base, s)
			}
		}
	}
	var b strings.Builder
	for i := range n {
		b.WriteString(base[i%len(base)])
		b.WriteByte('\n')
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// TestBookSlowPattern: the background scan gives up a user pattern that is too slow,
// and says so beside the alarms.
func TestBookSlowPattern(t *testing.T) {
	home := t.TempDir()
	// 300 lines of 1 KiB: past patternMeanAfter (256) lines, a pattern that takes
	// milliseconds a line is far over its mean budget (50 µs), however loaded the
	// machine; it may be given up sooner for one line over its line budget.
	pad := strings.Repeat("a", 1000)
	r, h := launch(t, home, shRole("tr", 1, `i=0; while [ $i -lt 300 ]; do echo "step $i loss 2.5 `+pad+`"; i=$((i+1)); done; echo "step 300 loss nan"`))
	if st, err := r.Wait(context.Background(), h, 20*time.Millisecond); err != nil || st.State != spec.Succeeded {
		t.Fatalf("app: %v %v", st, err)
	}
	cfg, err := metrics.ParseConfig(map[string]string{"pattern.slow": strings.Repeat("(.*)", 60) + "Z"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := metrics.NewBook(r, cfg, "").Scan(context.Background(), h, describe(t, r, h))
	if err != nil || f.N != 1 || f.Lines[0] != "loss on tr/0 is NaN at step 300" {
		t.Fatalf("found %+v %v", f, err)
	}
	if len(f.Notes) != 1 || !strings.HasPrefix(f.Notes[0], "pattern.slow is too slow") {
		t.Fatalf("notes %q, want the slow pattern's", f.Notes)
	}
}

// TestBookBadFile: a damaged file is no alarm and no error: the logs are read again.
func TestBookBadFile(t *testing.T) {
	dir := t.TempDir()
	for _, data := range []string{"{", `[{"handle":"local_cwd://wick/x","n":"many"}]`, "\x00\xff"} {
		if err := os.WriteFile(filepath.Join(dir, "alarms.json"), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		h, _ := spec.ParseHandle("local_cwd://wick/x")
		if f, ok := metrics.NewBook(nil, metrics.DefaultConfig(), dir).Known(h); ok {
			t.Errorf("%q: known %+v", data, f)
		}
	}
}

// BenchmarkBookScan: what the app list spends on an app's alarms. "finished" reads a
// finished app of 100k metric lines once (what a first look at an old app costs, off
// the UI loop); "known" is the same app the next time (from the Book's file);
// "running-no-new-lines" is the periodic reading of a running app with nothing new.
// Beside them, "baseline-read-lines" only reads the same lines (no extraction).
func BenchmarkBookScan(b *testing.B) {
	const lines = 100_000
	home := b.TempDir()
	reg := &sched.Registry{}
	local.Register(reg)
	r := runner.New(reg, sched.Config{Session: spec.DefaultSession, StateDir: home, WorkDir: b.TempDir(), Self: []string{os.Args[0]}})
	b.Cleanup(func() { _ = r.Close() })
	ctx := context.Background()
	run := func(script string) spec.Handle {
		h, err := r.Run(ctx, &spec.AppDef{Name: "bench", Roles: []spec.Role{shRole("tr", 1, script)}}, local.NameCwd, nil, "", nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			_ = r.Cancel(ctx, h)
			_, _ = r.Wait(ctx, h, 20*time.Millisecond)
		})
		return h
	}
	done := run(fmt.Sprintf(`awk 'BEGIN { for (i = 0; i < %d; i++) printf "step %%d loss %%.6f lr 0.001 grad_norm 1.5\n", i, 3 / (1 + i / 1000) }'`, lines))
	if _, err := r.Wait(ctx, done, 20*time.Millisecond); err != nil {
		b.Fatal(err)
	}
	d, err := r.Describe(ctx, done)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("finished", func(b *testing.B) {
		for b.Loop() {
			f, err := metrics.NewBook(r, metrics.DefaultConfig(), "").Scan(ctx, done, d)
			if err != nil || f.N != 0 {
				b.Fatal(f, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/lines, "ns/line")
	})
	b.Run("baseline-read-lines", func(b *testing.B) {
		for b.Loop() {
			it, err := r.LogLines(ctx, done, "tr", 0, sched.LogOptions{})
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for _, err := it.Next(ctx); err == nil; _, err = it.Next(ctx) {
				n++
			}
			it.Close()
			if n != lines {
				b.Fatal(n)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/lines, "ns/line")
	})
	b.Run("known", func(b *testing.B) {
		dir := b.TempDir()
		book := metrics.NewBook(r, metrics.DefaultConfig(), dir)
		if _, err := book.Scan(ctx, done, d); err != nil {
			b.Fatal(err)
		}
		book.Save()
		for b.Loop() {
			if _, err := metrics.NewBook(r, metrics.DefaultConfig(), dir).Scan(ctx, done, d); err != nil {
				b.Fatal(err)
			}
		}
	})
	// A finished app of 1M lines of the frameworks' formats (testdata/formats, mixed),
	// read once: the CPU time of the whole reading (lines read, values extracted,
	// alarms kept), beside reading the same lines alone.
	corpus := filepath.Join(b.TempDir(), "mixed.log")
	if err := writeMixed(corpus, 1<<20); err != nil {
		b.Fatal(err)
	}
	mixed := run(`cat "` + corpus + `"`)
	if _, err := r.Wait(ctx, mixed, 20*time.Millisecond); err != nil {
		b.Fatal(err)
	}
	dm, err := r.Describe(ctx, mixed)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("finished-1M-mixed", func(b *testing.B) {
		cpu := cpuTime()
		for b.Loop() {
			if _, err := metrics.NewBook(r, metrics.DefaultConfig(), "").Scan(ctx, mixed, dm); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N)/1e9, "cpu-s/scan")
	})
	b.Run("baseline-read-1M-mixed", func(b *testing.B) {
		cpu := cpuTime()
		for b.Loop() {
			it, err := r.LogLines(ctx, mixed, "tr", 0, sched.LogOptions{})
			if err != nil {
				b.Fatal(err)
			}
			for _, err := it.Next(ctx); err == nil; _, err = it.Next(ctx) {
			}
			it.Close()
		}
		b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N)/1e9, "cpu-s/scan")
	})
	b.Run("running-no-new-lines", func(b *testing.B) {
		live := run(`echo "step 1 loss 2.5"; sleep 600`)
		dl, err := r.Describe(ctx, live)
		if err != nil {
			b.Fatal(err)
		}
		// What a Book's later readings of a running app do: read from the last line's
		// time on, here with nothing new.
		since := time.Now()
		for b.Loop() {
			if _, err := metrics.Read(ctx, r, live, dl, since, metrics.NewStore(metrics.DefaultConfig()), nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestBookGluedTee: a line where torchrun's tee glued two workers' lines
// ("[0]:step 2 loss 2.4[1]:step 2 loss nan", a worker caught between its text and its
// newline) is read as each rank's, as the wall reads it: rank 1's NaN is rank 1's in
// the alarms (a Book, with its namer) and in a reading without one (a sweep's compare
// and its stop on NaN).
func TestBookGluedTee(t *testing.T) {
	home := t.TempDir()
	r, h := launch(t, home, spec.Role{Name: "trainer", Entrypoint: "sh", NumReplicas: 1, Args: []string{"-c",
		`printf '[0]:step 1 loss 2.5\n[1]:step 1 loss 2.5\n[0]:step 2 loss 2.4[1]:step 2 loss nan\n[0]:\n'`,
		"torchrun", "--nproc_per_node", "2"}})
	if st, err := r.Wait(context.Background(), h, 20*time.Millisecond); err != nil || st.State != spec.Succeeded {
		t.Fatalf("app: %v %v", st, err)
	}
	d := describe(t, r, h)
	f, err := metrics.NewBook(r, metrics.DefaultConfig(), "").Scan(context.Background(), h, d)
	if err != nil || f.N != 1 || f.Lines[0] != "loss on rank 1 is NaN at step 2" {
		t.Errorf("found %+v %v, want rank 1's NaN at step 2", f, err)
	}
	store := metrics.NewStore(metrics.DefaultConfig())
	if _, err := new(metrics.Position).Read(context.Background(), r, h, d, store, nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range store.Series("loss") {
		got = append(got, fmt.Sprintf("%s: %d at step %d, last %v", s.Rank, s.Count, s.Last.Step, s.Last.Value))
	}
	want := []string{"trainer/0:0: 2 at step 2, last 2.4", "trainer/0:1: 2 at step 2, last NaN"}
	if !slices.Equal(got, want) {
		t.Errorf("read without a namer:\n%q\nwant\n%q", got, want)
	}
}
