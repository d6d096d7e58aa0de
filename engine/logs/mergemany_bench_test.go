package logs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
)

// writeRunsLog writes the files of a finished replica's logs directly, as a Writer
// would have: n lines of 50 bytes, perRun of them a run (read at once, one record):
// run k holds lines k*perRun on, at the time t gives its first (non-decreasing), to
// stderr if t says so; then the end mark. Many replicas are set up in milliseconds
// this way, where pipes and a Writer each take minutes.
func writeRunsLog(dir string, n, perRun int, t func(j int) (time int64, stderr bool)) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	var comb []byte
	var streams [2][]byte
	idx := make([]byte, recordSize, (n+2)*recordSize)
	var b [recordSize]byte
	encodeHeader(&b)
	copy(idx, b[:])
	line := []byte("line 0000000 ....................................\n")
	last := int64(0)
	var run record
	si, code := 0, uint8(codeStdout)
	for j := range n {
		v := j
		for k := 11; k >= 5; k-- {
			line[k] = byte('0' + v%10)
			v /= 10
		}
		if j%perRun == 0 {
			var stderr bool
			last, stderr = t(j)
			si, code = 0, uint8(codeStdout)
			if stderr {
				si, code = 1, codeStderr
			}
			run = record{time: last, combOff: int64(len(comb)), streamOff: int64(len(streams[si])), stream: code}
		}
		run.length += int64(len(line))
		run.lines++
		comb = append(comb, line...)
		streams[si] = append(streams[si], line...)
		if run.lines == int64(perRun) || j == n-1 {
			run.encode(&b)
			idx = append(idx, b[:]...)
		}
	}
	end := record{time: last, flags: flagEnd}
	end.encode(&b)
	idx = append(idx, b[:]...)
	for name, data := range map[string][]byte{StdoutFile: streams[0], StderrFile: streams[1], CombinedFile: comb, IndexFile: idx} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// manyReplicas writes the logs of reps replicas of n lines each under base, which
// wrote their lines at the same time: line j of replica k at j ms plus k's own offset
// below a millisecond, so that a merge takes them in turn.
func manyReplicas(b *testing.B, reps, n int) []string {
	return manyReplicaRuns(b, reps, n, 1)
}

// manyReplicaRuns is manyReplicas with perRun lines a run, the runs perRun ms apart.
func manyReplicaRuns(b *testing.B, reps, n, perRun int) []string {
	base := b.TempDir()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	dirs := make([]string, reps)
	for k := range reps {
		dirs[k] = filepath.Join(base, strconv.Itoa(k))
		off := int64(k*7919%1000) * int64(time.Microsecond)
		if err := writeRunsLog(dirs[k], n, perRun, func(j int) (int64, bool) { return t0 + int64(j)*int64(time.Millisecond) + off, false }); err != nil {
			b.Fatal(err)
		}
	}
	return dirs
}

// openAll opens an iterator on each of dirs.
func openAll(b *testing.B, dirs []string) []sched.LogIterator {
	its := make([]sched.LogIterator, len(dirs))
	for k, d := range dirs {
		it, err := Open(Source{Dir: d, Role: "sh", Replica: k}, sched.LogOptions{})
		if err != nil {
			b.Fatal(err)
		}
		its[k] = it
	}
	return its
}

// drainLines reads it to its end and returns how many lines it gave, writing each to
// io.Discard as `wick log` writes them out.
func drainLines(b *testing.B, it sched.LogIterator) int {
	n := 0
	for {
		l, err := it.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			b.Fatal(err)
		}
		io.WriteString(io.Discard, l.Text)
		n++
	}
}

// heapPeak samples the live heap every millisecond until stop is closed, and
// returns the highest it saw.
func heapPeak(stop <-chan struct{}, peak *atomic.Uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		metrics.Read(s)
		if v := s[0].Value.Uint64(); v > peak.Load() {
			peak.Store(v)
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// BenchmarkMergeMany merges the finished logs of 256 and 1,024 replicas of 1,000
// lines each, and of 2 replicas of 500,000 (50 bytes, each line read on its own;
// the replicas wrote at the same time, so the merge takes them in turn), and of
// 1,024 replicas of 5,000 lines read 50 at a time (a replica's log, 250 KB, is then
// one block of its iterator), beside reading the same replicas one by one,
// interleaved in each op: merged/sum is the merge against the sum of the single
// reads. allocs/merge and MB-peak are the merge's own (the live heap's highest,
// sampled every millisecond, less what it was before).
func BenchmarkMergeMany(b *testing.B) {
	for _, c := range []struct{ reps, lines, perRun int }{{2, 500_000, 1}, {256, 1000, 1}, {1024, 1000, 1}, {1024, 5000, 50}} {
		reps, lines := c.reps, c.lines
		name := fmt.Sprintf("replicas=%d", reps)
		if c.perRun > 1 {
			name += fmt.Sprintf("/lines=%d/run=%d", lines, c.perRun)
		}
		b.Run(name, func(b *testing.B) {
			dirs := manyReplicaRuns(b, reps, lines, c.perRun)
			var merged, sum time.Duration
			var allocs uint64
			var peak atomic.Uint64
			var ms runtime.MemStats
			for b.Loop() {
				start := time.Now()
				for _, it := range openAll(b, dirs) {
					if n := drainLines(b, it); n != lines {
						b.Fatalf("%d lines, want %d", n, lines)
					}
					it.Close()
				}
				sum += time.Since(start)

				runtime.GC()
				runtime.ReadMemStats(&ms)
				before, mallocs := ms.HeapAlloc, ms.Mallocs
				var opPeak atomic.Uint64
				stop := make(chan struct{})
				sampled := make(chan struct{})
				go func() { heapPeak(stop, &opPeak); close(sampled) }()
				start = time.Now()
				m := Merge(openAll(b, dirs)...)
				if n := drainLines(b, m); n != reps*lines {
					b.Fatalf("%d lines, want %d", n, reps*lines)
				}
				m.Close()
				merged += time.Since(start)
				close(stop)
				<-sampled
				runtime.ReadMemStats(&ms)
				allocs += ms.Mallocs - mallocs
				if p := opPeak.Load(); p > before && p-before > peak.Load() {
					peak.Store(p - before)
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(merged.Milliseconds())/n, "ms-merged")
			b.ReportMetric(float64(sum.Milliseconds())/n, "ms-sum")
			b.ReportMetric(float64(merged)/float64(sum), "merged/sum")
			b.ReportMetric(float64(allocs)/n, "allocs/merge")
			b.ReportMetric(float64(peak.Load())/(1<<20), "MB-peak")
		})
	}
}

// BenchmarkFollowerHeap measures what an iterator that follows a replica holds, as
// the wall keeps one for each of 1,024 running replicas (Follow and Pending, one
// Watcher): each replica has written 100 lines and is drawing a progress bar, and
// each follower has read all of it and waits for more. KB/follower is the live heap
// after a collection, less what it was before the followers were opened, by follower.
func BenchmarkFollowerHeap(b *testing.B) {
	const reps, lines = 1024, 100
	dirs := manyReplicas(b, reps, lines)
	for _, d := range dirs {
		// Still running: no end mark yet, and a bar drawn on stdout.
		idx := filepath.Join(d, IndexFile)
		st, err := os.Stat(idx)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.Truncate(idx, st.Size()-recordSize); err != nil {
			b.Fatal(err)
		}
		f, err := os.OpenFile(filepath.Join(d, StdoutFile), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		f.WriteString("epoch 1  37%|███▋      | 37/100\r")
		f.Close()
	}
	var perFollower float64
	var ms runtime.MemStats
	waited, stop := context.WithCancel(context.Background())
	stop() // Next then waits as a follower does, and returns at once
	for b.Loop() {
		w := NewWatcher()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		before := ms.HeapAlloc
		its := make([]*Iterator, reps)
		for k, d := range dirs {
			it, err := Open(Source{Dir: d, Role: "sh", Replica: k, Watcher: w}, sched.LogOptions{Follow: true, Pending: true})
			if err != nil {
				b.Fatal(err)
			}
			its[k] = it
			n, pending := 0, 0
			for it.Ready() {
				l, err := it.Next(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				if l.Pending {
					pending++
				} else {
					n++
				}
			}
			if n != lines || pending != 1 {
				b.Fatalf("replica %d: %d lines and %d pending, want %d and 1", k, n, pending, lines)
			}
			// The wall's reader of a replica off screen comes back later; one on
			// screen waits.
			if _, err := it.Next(waited); !errors.Is(err, context.Canceled) {
				b.Fatalf("replica %d: %v, want no more lines yet", k, err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&ms)
		perFollower = float64(ms.HeapAlloc-before) / reps / 1024
		for _, it := range its {
			it.Close()
		}
	}
	b.ReportMetric(perFollower, "KB/follower")
}
