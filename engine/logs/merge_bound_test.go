package logs

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/internal/testkit"
)

// countingIter is a ready iterator of n lines from t0, one a microsecond, that counts
// how many lines were read from it.
type countingIter struct {
	n, i int
	t0   time.Time
	read *atomic.Int64
}

func (c *countingIter) Next(ctx context.Context) (sched.Line, error) {
	if c.i == c.n {
		return sched.Line{}, io.EOF
	}
	c.i++
	c.read.Add(1)
	return sched.Line{Text: "line", Time: c.t0.Add(time.Duration(c.i) * time.Microsecond)}, nil
}
func (c *countingIter) Ready() bool  { return c.i < c.n }
func (c *countingIter) Close() error { return nil }

// TestMergeReadsAheadBoundedly: a replica whose lines all come after another's was read
// whole into memory while the other's lines were emitted (4.3 GB for 2 x 10M lines).
// The late source may only be read a few batches ahead.
func TestMergeReadsAheadBoundedly(t *testing.T) {
	const n = 200_000
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var lateRead atomic.Int64
	early := &countingIter{n: n, t0: t0, read: new(atomic.Int64)}
	late := &countingIter{n: n, t0: t0.Add(time.Hour), read: &lateRead}
	m := Merge(early, late)
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(30*time.Second))
	defer cancel()
	maxAhead := int64(0)
	for i := range 2 * n {
		l, err := m.Next(ctx)
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if i < n {
			if !l.Time.Before(late.t0) {
				t.Fatalf("line %d out of order", i)
			}
			maxAhead = max(maxAhead, lateRead.Load())
		}
	}
	if _, err := m.Next(ctx); err != io.EOF {
		t.Fatalf("after the last line: %v", err)
	}
	// Credits, a batch in the pump's hands and one in the channel.
	if limit := int64((mergeCredits + 2) * mergeBatch); maxAhead > limit {
		t.Errorf("the late source was read %d lines ahead, want at most %d", maxAhead, limit)
	}
	t.Logf("read ahead at most %d lines", maxAhead)
}
