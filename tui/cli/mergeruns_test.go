package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/tui/render"
)

// fakeRuns is a replica's log as a RunReader gives it: runs of lines, and now and then
// a single line that NextRun says it does not hold (as a line too long to hold is).
type fakeRuns struct {
	items []fakeItem
	i     int
}

type fakeItem struct {
	l    sched.Line // a run (Text: lines ended by newlines but maybe the last) or a line
	line bool       // given by Next, not NextRun
}

func (f *fakeRuns) NextRun(context.Context) (sched.Line, bool, error) {
	if f.i == len(f.items) {
		return sched.Line{}, false, io.EOF
	}
	if f.items[f.i].line {
		return sched.Line{}, false, nil
	}
	f.i++
	return f.items[f.i-1].l, true, nil
}

func (f *fakeRuns) Next(context.Context) (sched.Line, error) {
	if f.i == len(f.items) || !f.items[f.i].line {
		return sched.Line{}, errors.New("Next called where NextRun holds a run")
	}
	f.i++
	return f.items[f.i-1].l, nil
}

func (f *fakeRuns) Close() error { return nil }

// randomReplicas makes the logs of n replicas: runs of 1 to 3 lines (most of one, as
// replicas that write a line at a time give), single lines, lines with \r, a partial
// last line, at times drawn from a few milliseconds so that many are equal, across
// replicas and within one.
func randomReplicas(rng *rand.Rand, n int) [][]fakeItem {
	base := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	reps := make([][]fakeItem, n)
	for k := range reps {
		t := base.Add(time.Duration(rng.IntN(3)) * time.Millisecond)
		for j := range rng.IntN(8) {
			t = t.Add(time.Duration(rng.IntN(3)) * time.Millisecond) // 0: a tie within the replica
			l := sched.Line{Time: t, Role: "r" + strconv.Itoa(k%2), Replica: k / 2, Stream: []sched.Stream{sched.Stdout, sched.Stderr}[rng.IntN(2)]}
			if rng.IntN(5) == 0 {
				l.Text = "single " + strconv.Itoa(k) + "." + strconv.Itoa(j)
				reps[k] = append(reps[k], fakeItem{l: l, line: true})
				continue
			}
			var text strings.Builder
			lines := 1
			if rng.IntN(3) == 0 {
				lines += rng.IntN(3)
			}
			for m := range lines {
				text.WriteString("run " + strconv.Itoa(k) + "." + strconv.Itoa(j) + "." + strconv.Itoa(m))
				if rng.IntN(6) == 0 {
					text.WriteString("\r 50%\r100%\r")
				}
				text.WriteByte('\n')
			}
			l.Text = text.String()
			reps[k] = append(reps[k], fakeItem{l: l})
		}
		if len(reps[k]) > 0 && !reps[k][len(reps[k])-1].line && rng.IntN(4) == 0 {
			last := &reps[k][len(reps[k])-1].l
			last.Text = strings.TrimSuffix(last.Text, "\n") // no newline at the end
		}
	}
	return reps
}

// printRuns prints the replicas with merge (mergeRuns or mergeRunsScan), as wick log
// of them all does.
func printRuns(t *testing.T, reps [][]fakeItem, prefix bool, merge func(*linePrinter, context.Context, []sched.LogIterator, []sched.RunReader) error) string {
	t.Helper()
	its := make([]sched.LogIterator, len(reps))
	rrs := make([]sched.RunReader, len(reps))
	refs := make([]replicaRef, len(reps))
	for k, items := range reps {
		f := &fakeRuns{items: items}
		its[k], rrs[k] = f, f
		refs[k] = replicaRef{"r" + strconv.Itoa(k%2), k / 2}
	}
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	p := &linePrinter{w: w, st: render.Plain{}, prefix: prefix, index: prefixIndex(refs)}
	if err := merge(p, context.Background(), its, rrs); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestMergeRunsMatchesTheScan: mergeRuns, which keeps the replicas in a heap, prints
// byte for byte what the look at every replica for every run printed, on 2,000 random
// apps of 0 to 40 replicas (equal times across and within replicas, single-line runs,
// lines given by Next, progress bars, a last line without newline), with and without
// prefixes.
func TestMergeRunsMatchesTheScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 1))
	for c := range 2000 {
		reps := randomReplicas(rng, rng.IntN(41))
		prefix := c%5 != 0
		want := printRuns(t, reps, prefix, mergeRunsScan)
		got := printRuns(t, reps, prefix, (*linePrinter).mergeRuns)
		if got != want {
			t.Fatalf("case %d (%d replicas): by the heap\n%q\nby the scan\n%q", c, len(reps), got, want)
		}
	}
}

// mergeRunsScan is mergeRuns as it was before the heap, kept as the reference
// TestMergeRunsMatchesTheScan and BenchmarkLogManyReplicas compare it with: for each
// run, a look at every replica for the earliest head (of equal times, the first).
func mergeRunsScan(p *linePrinter, ctx context.Context, its []sched.LogIterator, rrs []sched.RunReader) error {
	type head struct {
		l    sched.Line
		line bool
		done bool
	}
	heads := make([]head, len(its))
	next := func(i int) error {
		l, ok, err := rrs[i].NextRun(ctx)
		if err == nil && !ok {
			l, err = its[i].Next(ctx)
		}
		switch {
		case errors.Is(err, io.EOF):
			heads[i] = head{done: true}
			return nil
		case err != nil:
			return err
		}
		heads[i] = head{l: l, line: !ok}
		return nil
	}
	for i := range heads {
		if err := next(i); err != nil {
			return err
		}
	}
	for {
		best := -1
		for i := range heads {
			if !heads[i].done && (best < 0 || heads[i].l.Time.Before(heads[best].l.Time)) {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		h := &heads[best]
		var err error
		if h.line {
			err = p.print(h.l)
		} else {
			err = p.writeRun(p.prefixOf(h.l.Role, h.l.Replica), h.l.Text)
		}
		if err != nil {
			return err
		}
		if err := next(best); err != nil {
			return err
		}
	}
}
