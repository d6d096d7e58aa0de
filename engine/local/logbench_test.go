package local

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// manyReplicaApp launches an app of n replicas that print one line each and waits for
// it to end.
func manyReplicaApp(tb testing.TB, s *Scheduler, n int) (string, []sched.ReplicaRef) {
	tb.Helper()
	r := role("echo", "echo", "one line")
	r.NumReplicas = n
	id := start(tb, s, appOf("many", r), nil)
	if st := waitApp(tb, s, id); st.State != spec.Succeeded {
		tb.Fatalf("app %s", st.State)
	}
	refs := make([]sched.ReplicaRef, n)
	for k := range refs {
		refs[k] = sched.ReplicaRef{Role: "echo", Replica: k}
	}
	return id, refs
}

func readAll(tb testing.TB, its []sched.LogIterator) int {
	m := logs.Merge(its...)
	defer m.Close()
	n := 0
	for {
		_, err := m.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			tb.Fatal(err)
		}
		n++
	}
}

// TestLogsOfOpensEveryReplica: the many-replica path gives every replica's lines, and a
// replica the app does not have is an error with nothing left open.
func TestLogsOfOpensEveryReplica(t *testing.T) {
	s := testScheduler(t, false)
	id, refs := manyReplicaApp(t, s, 20)
	its, err := s.LogsOf(context.Background(), id, refs, sched.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := readAll(t, its); n != 20 {
		t.Fatalf("%d lines, want 20", n)
	}
	if _, err := s.LogsOf(context.Background(), id, append(refs, sched.ReplicaRef{Role: "echo", Replica: 20}), sched.LogOptions{}); err == nil {
		t.Fatal("replica 20 of 20 opened")
	}
}

// BenchmarkLog1000Replicas is `wick log` of a 1000-replica app whose replicas printed a
// line each: the state is read once and the 1000 logs merged (it took 12 s when every
// replica read the app's state again). The baseline, cat, reads the 1000 combined.log
// files and nothing else.
func BenchmarkLog1000Replicas(b *testing.B) {
	s := testScheduler(b, false)
	id, refs := manyReplicaApp(b, s, 1000)
	b.Run("wick-log", func(b *testing.B) {
		for b.Loop() {
			its, err := s.LogsOf(context.Background(), id, refs, sched.LogOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if n := readAll(b, its); n != len(refs) {
				b.Fatalf("%d lines", n)
			}
		}
	})
	// One replica at a time, as the wall opens its panes and reads back.
	b.Run("one-by-one", func(b *testing.B) {
		for b.Loop() {
			its := make([]sched.LogIterator, 0, len(refs))
			for _, r := range refs {
				it, err := s.Logs(context.Background(), id, r.Role, r.Replica, sched.LogOptions{})
				if err != nil {
					b.Fatal(err)
				}
				its = append(its, it)
			}
			if n := readAll(b, its); n != len(refs) {
				b.Fatalf("%d lines", n)
			}
		}
	})
	b.Run("cat", func(b *testing.B) {
		l, err := readLaunch(filepath.Join(s.appsDir(), id))
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			for _, r := range l.Request.Roles[0].Replicas {
				if _, err := os.ReadFile(r.Combined); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// TestLogCacheSeesChanges: what opening logs caches of an app never hides a change: a
// deleted app is no such app, a corrupted one says so.
func TestLogCacheSeesChanges(t *testing.T) {
	s := testScheduler(t, false)
	ctx := context.Background()
	a, _ := manyReplicaApp(t, s, 2)
	b, _ := manyReplicaApp(t, s, 2)
	for _, id := range []string{a, b} {
		it, err := s.Logs(ctx, id, "echo", 1, sched.LogOptions{})
		if err != nil {
			t.Fatal(err)
		}
		it.Close()
	}
	if err := s.Delete(ctx, a, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Logs(ctx, a, "echo", 1, sched.LogOptions{}); !errors.Is(err, sched.ErrNotFound) {
		t.Errorf("logs of a deleted app: %v", err)
	}
	if err := os.WriteFile(filepath.Join(s.appsDir(), b, stateFile), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	var ce *CorruptError
	if _, err := s.Logs(ctx, b, "echo", 1, sched.LogOptions{}); !errors.As(err, &ce) {
		t.Errorf("logs of a corrupted app: %v", err)
	}
}

// TestLogCacheLoadsAStateOnce: the readers of many replicas opening together, the
// state unchanged, load the app's state once; the others wait for it and find it
// cached (each loaded it while none was cached: 1,024 decodings at once).
func TestLogCacheLoadsAStateOnce(t *testing.T) {
	s := testScheduler(t, false)
	id, _ := manyReplicaApp(t, s, 2)
	dir := filepath.Join(s.appsDir(), id)
	c := &logCache{}
	var loads atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Go(func() {
			_, err := c.state(dir, func() (*state, error) {
				loads.Add(1)
				time.Sleep(20 * time.Millisecond) // a load takes a while: the others come meanwhile
				_, st, err := s.load(id)
				return st, err
			})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := loads.Load(); n != 1 {
		t.Fatalf("64 readers opening together loaded the state %d times, want 1", n)
	}
}

// BenchmarkLogDescribeAndRead is what `wick log` does in the scheduler for an app of
// 2 (and 1000) one-line replicas: describe it, then open and read its logs, with a
// cache as empty as a new command's. "once" is the path taken: Describe's read of the
// state and launch files serves the logs too. "twice" is the previous path, where
// opening the logs read both files again (the cache emptied between the two).
func BenchmarkLogDescribeAndRead(b *testing.B) {
	for _, n := range []int{2, 1000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			s := testScheduler(b, false)
			id, refs := manyReplicaApp(b, s, n)
			ctx := context.Background()
			run := func(b *testing.B, between func()) {
				for b.Loop() {
					s.logCache = &logCache{}
					if _, err := s.Describe(ctx, id); err != nil {
						b.Fatal(err)
					}
					between()
					its, err := s.LogsOf(ctx, id, refs, sched.LogOptions{})
					if err != nil {
						b.Fatal(err)
					}
					if got := readAll(b, its); got != n {
						b.Fatalf("%d lines", got)
					}
				}
			}
			b.Run("once", func(b *testing.B) { run(b, func() {}) })
			b.Run("twice", func(b *testing.B) { run(b, func() { s.logCache = &logCache{} }) })
		})
	}
}
