package sweep

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

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

// BenchmarkStateChange is one state change of one app of a 1,000- and a 10,000-app sweep, as the
// queue makes three per app (launching, launched, and a Load of the whole sweep per
// round): Update reads sweep.json whole and writes it whole again. Beside it,
// BenchmarkWriteOnce is the write alone and BenchmarkLoad the read alone.
func BenchmarkStateChange(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("apps=%d", n), func(b *testing.B) { benchStateChange(b, n) })
	}
}

func benchStateChange(b *testing.B, n int) {
	store, s := benchSweep(b, n)
	b.Logf("load %.1f", testkit.Load())
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		k := i % len(s.Entries)
		if _, err := store.Update(s.ID, func(s *Sweep) error {
			e := &s.Entries[k]
			e.State, e.LaunchStarted = Launching, time.Now()
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	dir, _ := store.Dir(s.ID)
	if fi, err := os.Stat(filepath.Join(dir, sweepFile)); err == nil {
		b.ReportMetric(float64(fi.Size()), "bytes/write")
	}
}

// BenchmarkWriteOnce writes the sweep.json of a 1,000- and a 10,000-app sweep once.
func BenchmarkWriteOnce(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("apps=%d", n), func(b *testing.B) { benchWriteOnce(b, n) })
	}
}

func benchWriteOnce(b *testing.B, n int) {
	store, s := benchSweep(b, n)
	dir, _ := store.Dir(s.ID)
	b.Logf("load %.1f", testkit.Load())
	b.ResetTimer()
	for b.Loop() {
		if err := writeJSON(dir, sweepFile, s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad reads the sweep.json of a 1,000- and a 10,000-app sweep once (what every Load,
// Find and the queue's every round cost).
func BenchmarkLoad(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("apps=%d", n), func(b *testing.B) { benchLoad(b, n) })
	}
}

func benchLoad(b *testing.B, n int) {
	store, s := benchSweep(b, n)
	b.Logf("load %.1f", testkit.Load())
	b.ResetTimer()
	for b.Loop() {
		if _, err := store.Load(s.ID); err != nil {
			b.Fatal(err)
		}
	}
}
