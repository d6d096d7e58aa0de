package logs

import (
	"errors"
	"io"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
)

// TestNestedMergeOrdersByTime merges merges, as a reader of Slurm's replicas does (a
// replica's lines are its stdout and stderr files merged): the lines of all the
// replicas come in time order. A Merged whose sources were still being read must not
// look idle to the Merge above it, which would then deliver another replica's later
// lines first.
func TestNestedMergeOrdersByTime(t *testing.T) {
	clock := &fakeClock{}
	rec := NewRecorder()
	rec.now = clock.now
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	reps := []*replicaLogs{newReplicaLogs(t, rec), newReplicaLogs(t, rec)}
	const n = 200
	for i := range n {
		clock.set(t0.Add(time.Duration(i) * time.Millisecond))
		s := sched.Stdout
		if rand.IntN(2) == 0 {
			s = sched.Stderr
		}
		reps[rand.IntN(2)].write(s, strconv.Itoa(i)+"\n")
	}
	for _, r := range reps {
		r.stop()
		r.w.End()
	}
	// Each read has its own pumps and their timing: a few reads make a race show.
	for round := range 20 {
		var nodes []sched.LogIterator
		for k, r := range reps {
			var files []sched.LogIterator
			for _, s := range []sched.Stream{sched.Stdout, sched.Stderr} {
				it, err := Open(Source{Dir: r.dir, Replica: k}, sched.LogOptions{Streams: s})
				if err != nil {
					t.Fatal(err)
				}
				files = append(files, it)
			}
			nodes = append(nodes, Merge(files...))
		}
		m := Merge(nodes...)
		got := 0
		for {
			l, err := nextWithin(t, m, 5*time.Second)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if l.Text != strconv.Itoa(got) {
				m.Close()
				t.Fatalf("read %d: line %d is %q (replica %d), want %d: out of time order", round, got, l.Text, l.Replica, got)
			}
			got++
		}
		m.Close()
		if got != n {
			t.Fatalf("read %d: %d lines, want %d", round, got, n)
		}
	}
}
