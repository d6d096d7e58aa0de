package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/internal/testkit"
)

// benchSweep makes a sweep of n queued apps, each entry as `wick run --sweep` writes it.
func benchSweep(b *testing.B, n int) (*Store, *Sweep) {
	b.Helper()
	store := NewStore(b.TempDir())
	s := &Sweep{ID: NewID(), Created: time.Now(), Component: "demo.train", Scheduler: "local_cwd", Session: "wick",
		Names: []string{"rate", "steps"}, MaxParallel: 4}
	for i := range n {
		s.Entries = append(s.Entries, Entry{Index: i, Values: []string{fmt.Sprint(i % 100), fmt.Sprint(i / 100)},
			Name:   fmt.Sprintf("train-rate%d-steps%d", i%100, i/100),
			Handle: fmt.Sprintf("local_cwd://wick/train-rate%d-steps%d-%012d", i%100, i/100, i), State: Queued})
	}
	if _, err := store.Create(s, nil); err != nil {
		b.Fatal(err)
	}
	return store, s
}

// wchar is the bytes this process has passed to write(2) so far (/proc/self/io).
func wchar(b *testing.B) int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Skipf("no /proc/self/io: %v", err)
	}
	for line := range bytes.Lines(data) {
		if v, ok := bytes.CutPrefix(line, []byte("wchar: ")); ok {
			n, _ := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			return n
		}
	}
	b.Skip("no wchar in /proc/self/io")
	return 0
}

// BenchmarkStateChange is one state change of one app of a 1,000- and a 10,000-app
// sweep (the app marked launching, as the queue does before each launch), made by
// the queue's Store: "journal" is Change, as the queue makes them (a line appended to
// the journal, and a compaction, the sweep written whole, whenever the journal
// reaches its cap), "journal-update" the same through Update (which copies the sweep
// and compares: what a cancel of a whole sweep pays), "rewrite" the baseline: what
// Update did before, sweep.json read whole, changed and written whole again.
// bytes/change counts every byte written (write(2)), the compactions included.
func BenchmarkStateChange(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		for _, how := range []string{"journal", "journal-update", "rewrite"} {
			b.Run(fmt.Sprintf("apps=%d/%s", n, how), func(b *testing.B) { benchStateChange(b, n, how) })
		}
	}
}

func benchStateChange(b *testing.B, n int, how string) {
	store, s := benchSweep(b, n)
	dir, _ := store.Dir(s.ID)
	b.Logf("load %.1f", testkit.Load())
	change := func(k int) func(*Sweep) error {
		return func(s *Sweep) error {
			e := &s.Entries[k]
			e.State, e.LaunchStarted = Launching, time.Now()
			return nil
		}
	}
	w0 := wchar(b)
	start := time.Now()
	i := 0
	for b.Loop() {
		var err error
		switch k := i % n; how {
		case "rewrite":
			err = rewriteUpdate(dir, change(k))
		case "journal-update":
			err = store.Update(s.ID, change(k))
		default:
			err = store.Change(s.ID, func(s *Sweep, edit func(int) *Entry) error {
				e := edit(k)
				e.State, e.LaunchStarted = Launching, time.Now()
				return nil
			})
		}
		if err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(i)/time.Since(start).Seconds(), "changes/s")
	b.ReportMetric(float64(wchar(b)-w0)/float64(i), "bytes/change")
}

// rewriteUpdate is Update as it was before the journal: under the lock, sweep.json
// read whole, changed, and written whole again (the baseline of BenchmarkStateChange).
func rewriteUpdate(dir string, fn func(*Sweep) error) error {
	unlock, err := lock(dir)
	if err != nil {
		return err
	}
	defer unlock()
	data, err := safefs.ReadFile(filepath.Join(dir, sweepFile), maxSweepFile)
	if err != nil {
		return err
	}
	var s Sweep
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	if err := fn(&s); err != nil {
		return err
	}
	return writeJSON(dir, sweepFile, &s)
}

// writeJSON writes v whole to dir/name, as the Store wrote sweep.json at every change
// before the journal (rewriteUpdate).
func writeJSON(dir, name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := safefs.WriteFileAtomic(dir, name, append(data, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// BenchmarkLoad reads a 10,000-app sweep as a new process does (a new Store: wick
// list, status, sweep list), paired (interleaved, medians): "compacted" just after a
// compaction (sweep.json alone: what every reader read before the journal),
// "journal-full" with its journal at its cap (the most a reader reads: sweep.json
// and a quarter as many bytes of changes), "again" a Store that has read it before,
// reading it again after one more change (the UI, the queue: the journal's new line).
func BenchmarkLoad(b *testing.B) {
	const n = 10_000
	compacted, cs := benchSweep(b, n)
	full, fs := benchSweep(b, n)
	fillJournal(b, full, fs.ID)
	again := NewStore(filepath.Dir(full.dir))
	if _, err := again.Load(fs.ID); err != nil {
		b.Fatal(err)
	}
	k := 0
	load := func(st *Store, id string) time.Duration {
		start := time.Now()
		if _, err := st.Load(id); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	runs := []struct {
		name string
		run  func() time.Duration
	}{
		{"compacted", func() time.Duration { return load(NewStore(filepath.Dir(compacted.dir)), cs.ID) }},
		{"journal-full", func() time.Duration { return load(NewStore(filepath.Dir(full.dir)), fs.ID) }},
		{"again", func() time.Duration {
			// One more change, made by the writer (not timed), then the reading.
			if err := full.Change(fs.ID, func(s *Sweep, edit func(int) *Entry) error {
				edit(k % n).LaunchStarted = time.Now()
				k++
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			return load(again, fs.ID)
		}},
	}
	times := make([][]time.Duration, len(runs))
	for b.Loop() {
		for i, r := range runs {
			times[i] = append(times[i], r.run())
		}
	}
	for i, r := range runs {
		slices.Sort(times[i])
		b.ReportMetric(float64(times[i][len(times[i])/2].Microseconds())/1000, r.name+"-ms")
	}
	b.ReportMetric(testkit.Load(), "load")
}

// fillJournal changes apps until the journal of sweep id is one change short of its
// cap.
func fillJournal(b *testing.B, store *Store, id string) {
	dir, _ := store.Dir(id)
	for k := 0; ; k++ {
		store.mu.Lock()
		c := store.cache[id]
		full := c.off+600 > store.compactLimit(c)
		store.mu.Unlock()
		if full {
			break
		}
		if err := store.Update(id, func(s *Sweep) error {
			s.Entries[k].State, s.Entries[k].LaunchStarted = Launching, time.Now()
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, journalFile))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(fi.Size()), "journal_bytes")
}
