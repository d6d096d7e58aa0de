package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/internal/testkit"
)

// benchHome is a private WICK_HOME and working directory for a benchmark.
type benchHome struct {
	b          *testing.B
	home, work string
}

func newBenchHome(b *testing.B) *benchHome {
	root := b.TempDir()
	h := &benchHome{b: b, home: filepath.Join(root, "state"), work: filepath.Join(root, "work")}
	for _, d := range []string{h.home, h.work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	return h
}

func (h *benchHome) wick(args ...string) string {
	h.b.Helper()
	cmd := exec.Command(builtWick, args...)
	cmd.Dir = h.work
	cmd.Env = append(os.Environ(), "WICK_HOME="+h.home, "NO_COLOR=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		h.b.Fatalf("wick %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// BenchmarkSweepQueueStart runs a 100-app sweep of demo.train (1 replica, 10 to 109
// steps at 200 steps/s) with --max-parallel 4 and measures, for every app started
// when a slot freed, the time from the end of the app that freed it (its state's end)
// to the queue beginning its launch (start_p50/p99), and the launch itself, which is
// what `wick run --detach` costs (launch_p50/p99): the machine's own floor.
func BenchmarkSweepQueueStart(b *testing.B) {
	for range b.N {
		h := newBenchHome(b)
		steps := make([]string, 100)
		for i := range steps {
			steps[i] = strconv.Itoa(10 + i)
		}
		out := h.wick("run", "--sweep", "steps="+strings.Join(steps, ","), "--max-parallel", "4",
			"demo.train", "--replicas", "1", "--rate", "200", "--progress=false", "--warnings=false")
		id := strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
		sw, err := sweep.NewStore(h.home).Load(id)
		if err != nil {
			b.Fatal(err)
		}
		var apps []spec.AppStatus
		if err := json.Unmarshal([]byte(h.wick("list", "--sweep", id, "--json")), &apps); err != nil {
			b.Fatal(err)
		}
		ended := map[string]time.Time{}
		for _, a := range apps {
			ended[a.Handle] = a.Ended
		}
		var ends []time.Time
		var begins []time.Time
		var launches []time.Duration
		for _, e := range sw.Entries {
			ends = append(ends, ended[e.Handle])
			begins = append(begins, e.LaunchStarted)
			launches = append(launches, e.Launched.Sub(e.LaunchStarted))
		}
		slices.SortFunc(ends, time.Time.Compare)
		slices.SortFunc(begins, time.Time.Compare)
		// The k-th launch after the first 4 waited for the k-th end.
		var starts []time.Duration
		for k := 4; k < len(begins); k++ {
			starts = append(starts, begins[k].Sub(ends[k-4]))
		}
		b.ReportMetric(float64(percentile(starts, 0.5).Microseconds())/1000, "start_p50_ms")
		b.ReportMetric(float64(percentile(starts, 0.99).Microseconds())/1000, "start_p99_ms")
		b.ReportMetric(float64(percentile(launches, 0.5).Microseconds())/1000, "launch_p50_ms")
		b.ReportMetric(float64(percentile(launches, 0.99).Microseconds())/1000, "launch_p99_ms")
	}
}

// BenchmarkListSweeps times `wick list` (the process, start to end) over 1,000
// finished local apps in 100 sweeps of 10, beside the same 1,000 apps without sweeps.
// The apps are copies of one real finished app's state, each under its own id.
func BenchmarkListSweeps(b *testing.B) {
	h := newBenchHome(b)
	handle := strings.TrimSpace(h.wick("run", "utils.echo", "--msg", "hi"))
	src, err := spec.ParseHandle(handle)
	if err != nil {
		b.Fatal(err)
	}
	apps := filepath.Join(h.home, "local", "apps")
	state, err := os.ReadFile(filepath.Join(apps, src.AppID, "state.json"))
	if err != nil {
		b.Fatal(err)
	}
	launch, err := os.ReadFile(filepath.Join(apps, src.AppID, "launch.json"))
	if err != nil {
		b.Fatal(err)
	}
	store := sweep.NewStore(h.home)
	for s := range 100 {
		sw := &sweep.Sweep{ID: fmt.Sprintf("sweep-b%07d", s), Created: time.Now(), Component: "utils.echo",
			Scheduler: "local_cwd", Session: "wick", Names: []string{"msg"}, MaxParallel: 4}
		plans := make([]sweep.Plan, 10)
		for i := range 10 {
			id := fmt.Sprintf("echo-msg%d-b%03d%07d", i, s, i)
			dir := filepath.Join(apps, id)
			if err := os.Mkdir(dir, 0o700); err != nil {
				b.Fatal(err)
			}
			for name, data := range map[string][]byte{"state.json": state, "launch.json": launch} {
				data = bytes.ReplaceAll(data, []byte(src.AppID), []byte(id))
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
					b.Fatal(err)
				}
			}
			sw.Entries = append(sw.Entries, sweep.Entry{Index: i, Values: []string{strconv.Itoa(i)}, Name: id,
				Handle: "local_cwd://wick/" + id, State: sweep.Launched, Launched: time.Now()})
		}
		if _, err := store.Create(sw, plans); err != nil {
			b.Fatal(err)
		}
	}
	if n := strings.Count(h.wick("list"), "\n"); n != 1002 {
		b.Fatalf("wick list printed %d lines, want 1,001 apps and a header", n)
	}
	b.Run("sweeps", func(b *testing.B) {
		for range b.N {
			h.wick("list")
		}
	})
	b.Run("one-sweep", func(b *testing.B) {
		for range b.N {
			h.wick("list", "--sweep", "sweep-b0000042")
		}
	})
	// The same apps, the sweeps put aside.
	if err := os.Rename(filepath.Join(h.home, "sweeps"), filepath.Join(h.home, "sweeps.off")); err != nil {
		b.Fatal(err)
	}
	b.Run("baseline-no-sweeps", func(b *testing.B) {
		for range b.N {
			h.wick("list")
		}
	})
}

// finishedApps makes n finished local apps in h's WICK_HOME, copies of one real
// finished app of utils.echo, each under its own id, and returns their handles.
func finishedApps(b *testing.B, h *benchHome, n int, prefix string) []string {
	handle := strings.TrimSpace(h.wick("run", "utils.echo", "--msg", "hi"))
	src, err := spec.ParseHandle(handle)
	if err != nil {
		b.Fatal(err)
	}
	apps := filepath.Join(h.home, "local", "apps")
	files := map[string][]byte{}
	for _, name := range []string{"state.json", "launch.json"} {
		if files[name], err = os.ReadFile(filepath.Join(apps, src.AppID, name)); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.RemoveAll(filepath.Join(apps, src.AppID)); err != nil {
		b.Fatal(err)
	}
	out := make([]string, n)
	for i := range n {
		id := fmt.Sprintf("%s%07d", prefix, i)
		dir := filepath.Join(apps, id)
		if err := os.Mkdir(dir, 0o700); err != nil {
			b.Fatal(err)
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, name), bytes.ReplaceAll(data, []byte(src.AppID), []byte(id)), 0o600); err != nil {
				b.Fatal(err)
			}
		}
		out[i] = "local_cwd://wick/" + id
	}
	return out
}

// BenchmarkSweep10k times `wick sweep list` and `wick list --sweep ID` (the
// processes, start to end, paired: interleaved, medians) over a sweep of 10,000 apps
// of which the first 1,000 have run (finished local apps) and 9,000 are queued.
// "journal": the sweep as its queue leaves it, its 1,000 launches in its journal (one
// line each: the journal near its cap, the most a new reader reads); "compacted":
// the same sweep in sweep.json alone, as every sweep was before the journal (what a
// reader read then, its plans in one JSON array as well). `wick status` of a queued
// app (the 5,001st) reads the sweep and that app's plan. Baseline: `wick list` of the
// same 1,000 apps without a sweep.
func BenchmarkSweep10k(b *testing.B) {
	homes := map[string]*benchHome{}
	for _, v := range []string{"journal", "compacted", "none"} {
		h := newBenchHome(b)
		homes[v] = h
		mk := setupSweep10k(b, h)
		switch v {
		case "journal":
			mk("sweep-j0000000", false)
			fi, err := os.Stat(filepath.Join(h.home, "sweeps", "sweep-j0000000", "journal"))
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("journal %d bytes", fi.Size())
		case "compacted":
			mk("sweep-c0000000", true)
		}
	}
	for v, id := range map[string]string{"journal": "sweep-j0000000", "compacted": "sweep-c0000000"} {
		if got := strings.Count(homes[v].wick("list", "--sweep", id), "\n"); got != sweep10kApps+2 {
			b.Fatalf("wick list --sweep printed %d lines, want a title, a header and %d apps", got, sweep10kApps)
		}
	}
	queued := fmt.Sprintf("local_cwd://wick/echo-msg0-seed50-q%07d", 5000)
	env := func(h *benchHome) []string { return append(os.Environ(), "WICK_HOME="+h.home, "NO_COLOR=1") }
	j, c, none := homes["journal"], homes["compacted"], homes["none"]
	paired(b,
		timed("sweep-list-journal", j.work, env(j), builtWick, "sweep", "list"),
		timed("sweep-list-compacted", c.work, env(c), builtWick, "sweep", "list"),
		timed("list-sweep-journal", j.work, env(j), builtWick, "list", "--sweep", "sweep-j0000000"),
		timed("list-sweep-compacted", c.work, env(c), builtWick, "list", "--sweep", "sweep-c0000000"),
		timed("status-queued-journal", j.work, env(j), builtWick, "status", queued),
		timed("status-queued-compacted", c.work, env(c), builtWick, "status", queued),
		timed("baseline-list-no-sweep", none.work, env(none), builtWick, "list"),
	)
}

// sweep10kApps is the size of BenchmarkSweep10k's sweep, sweep10kRan how many of its
// apps have run.
const sweep10kApps, sweep10kRan = 10_000, 1_000

// setupSweep10k makes BenchmarkSweep10k's finished apps in h and returns what makes
// its sweep: its launches recorded in its journal, or, when launched is true, in its
// snapshot.
func setupSweep10k(b *testing.B, h *benchHome) func(id string, launched bool) {
	const n, ran = sweep10kApps, sweep10kRan
	handles := finishedApps(b, h, ran, "echo-b")
	store := sweep.NewStore(h.home)
	mk := func(id string, launched bool) {
		sw := &sweep.Sweep{ID: id, Created: time.Now(), Component: "utils.echo", Scheduler: "local_cwd",
			Session: "wick", Names: []string{"msg", "seed"}, MaxParallel: 4}
		for i := range n {
			e := sweep.Entry{Index: i, Values: []string{strconv.Itoa(i % 100), strconv.Itoa(i / 100)},
				Name: fmt.Sprintf("echo-msg%d-seed%d", i%100, i/100), State: sweep.Queued,
				Handle: fmt.Sprintf("local_cwd://wick/echo-msg%d-seed%d-q%07d", i%100, i/100, i)}
			if i < ran {
				e.Handle = handles[i]
				if launched {
					e.State, e.LaunchStarted, e.Launched = sweep.Launched, time.Now(), time.Now()
				}
			}
			sw.Entries = append(sw.Entries, e)
		}
		plans := make([]sweep.Plan, n)
		for i := range plans {
			h, _ := spec.ParseHandle(sw.Entries[i].Handle)
			r := spec.NewRole("echo", "unused", "echo", "msg"+sw.Entries[i].Values[0])
			plans[i] = sweep.Plan{Scheduler: "local_cwd", AppID: h.AppID, Session: "wick",
				App: &spec.AppDef{Name: sw.Entries[i].Name, Roles: []spec.Role{r}}, Cfg: map[string]string{}}
		}
		dir, err := store.Create(sw, plans)
		if err != nil {
			b.Fatal(err)
		}
		if launched {
			// The old format: the plans in one JSON array too.
			old, _ := json.Marshal(plans)
			if err := os.WriteFile(filepath.Join(dir, "plans.json"), old, 0o600); err != nil {
				b.Fatal(err)
			}
			if err := os.Remove(filepath.Join(dir, "plans.jsonl")); err != nil {
				b.Fatal(err)
			}
			return
		}
		for i := range ran {
			if err := store.Change(id, func(s *sweep.Sweep, edit func(int) *sweep.Entry) error {
				e := edit(i)
				e.State, e.LaunchStarted, e.Launched = sweep.Launched, time.Now(), time.Now()
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
	}
	return mk
}

// BenchmarkSweepQueueRate runs a 10,000-app sweep of utils.echo on local_cwd with
// --max-parallel 2 for a few seconds and reports the rate at which its queue launches
// apps (apps/s, from the first launch to the last within the window), beside what the
// machine can do: two loops of `wick run utils.echo` (attached: to the app's end), each
// launching the next app as soon as the last one ended, at most two at once as in the
// sweep, for as long (baseline-apps/s). The sweep is cancelled and deleted at the end.
// WICK_BENCH_QUEUE_SECONDS sets the window (10).
func BenchmarkSweepQueueRate(b *testing.B) {
	window := 10 * time.Second
	if v, err := strconv.Atoi(os.Getenv("WICK_BENCH_QUEUE_SECONDS")); err == nil && v > 0 {
		window = time.Duration(v) * time.Second
	}
	for range b.N {
		h := newBenchHome(b)
		vals := make([]string, sweep.MaxApps)
		for i := range vals {
			vals[i] = strconv.Itoa(i)
		}
		id := strings.TrimSpace(h.wick("run", "--detach", "--sweep", "msg="+strings.Join(vals, ","), "--max-parallel", "2", "utils.echo"))
		time.Sleep(window) // the queue runs on its own: this is the window it is given
		h.wick("cancel", id)
		sw, err := sweep.NewStore(h.home).Load(id)
		if err != nil {
			b.Fatal(err)
		}
		var first, last time.Time
		n := 0
		for _, e := range sw.Entries {
			if e.State != sweep.Launched || e.Launched.IsZero() {
				continue
			}
			n++
			if first.IsZero() || e.LaunchStarted.Before(first) {
				first = e.LaunchStarted
			}
			if e.Launched.After(last) {
				last = e.Launched
			}
		}
		if n < 2 {
			b.Fatalf("the queue launched %d apps in %s", n, window)
		}
		b.ReportMetric(float64(n)/last.Sub(first).Seconds(), "apps/s")
		h.wick("delete", "--force", id)

		// The baseline: two launchers, each launching an app as soon as its last ended.
		base := newBenchHome(b)
		deadline := time.Now().Add(window)
		counts := make([]int, 2)
		var wg sync.WaitGroup
		start := time.Now()
		for k := range counts {
			wg.Go(func() {
				for time.Now().Before(deadline) {
					cmd := exec.Command(builtWick, "run", "utils.echo", "--msg", "hi")
					cmd.Dir, cmd.Env = base.work, append(os.Environ(), "WICK_HOME="+base.home, "NO_COLOR=1")
					if err := cmd.Run(); err != nil {
						b.Errorf("wick run: %v", err)
						return
					}
					counts[k]++
				}
			})
		}
		wg.Wait()
		baseline := float64(counts[0]+counts[1]) / time.Since(start).Seconds()
		b.ReportMetric(baseline, "baseline-apps/s")
		b.ReportMetric(float64(n)/last.Sub(first).Seconds()/baseline, "queue/baseline")
		b.ReportMetric(testkit.Load(), "load")
	}
}
