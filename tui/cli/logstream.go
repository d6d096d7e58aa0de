package cli

import (
	"context"
	"errors"
	"io"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// streamLogs opens one iterator per replica and hands every line to emit, in time order
// across replicas. idle is called whenever no line is ready, so that buffered output
// reaches the user promptly while following.
func (a *app) streamLogs(ctx context.Context, h spec.Handle, refs []replicaRef, opts sched.LogOptions, emit func(sched.Line) error, idle func() error) error {
	return a.streamLogsRuns(ctx, h, refs, opts, emit, idle, nil)
}

// streamLogsRuns is streamLogs, which, given runs, prints the lines through it a run at
// a time when every iterator can give runs (emit must then be runs.print).
func (a *app) streamLogsRuns(ctx context.Context, h spec.Handle, refs []replicaRef, opts sched.LogOptions, emit func(sched.Line) error, idle func() error, runs *linePrinter) error {
	srefs := make([]sched.ReplicaRef, len(refs))
	for i, ref := range refs {
		srefs[i] = sched.ReplicaRef{Role: ref.role, Replica: ref.k}
	}
	its, err := a.runner().LogLinesOf(ctx, h, srefs, opts)
	if err != nil {
		return err
	}
	if runs != nil {
		if rrs, ok := runReaders(its); ok {
			defer func() {
				for _, it := range its {
					it.Close()
				}
			}()
			return runs.mergeRuns(ctx, its, rrs)
		}
	}
	merged := logs.Merge(its...)
	defer merged.Close()
	for {
		line, err := merged.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := emit(line); err != nil {
			return err
		}
		if !merged.Ready() {
			if err := idle(); err != nil {
				return err
			}
		}
	}
}

// runReaders returns its as sched.RunReaders, if every one is.
func runReaders(its []sched.LogIterator) ([]sched.RunReader, bool) {
	rrs := make([]sched.RunReader, len(its))
	for i, it := range its {
		rr, ok := it.(sched.RunReader)
		if !ok {
			return nil, false
		}
		rrs[i] = rr
	}
	return rrs, true
}

// mergeRuns prints the lines of its in time order, as printing the lines of their
// logs.Merge one by one does (lines of one time keep the order of the iterators), but
// a run of lines at a time: no Line per line, no goroutine per replica. The iterators
// with a run to give are kept in logs.Heads, Merge's own order: each run costs
// O(log n) for n replicas, not a look at every replica (1,024 replicas that each
// wrote one line at a time made that look most of the time).
func (p *linePrinter) mergeRuns(ctx context.Context, its []sched.LogIterator, rrs []sched.RunReader) error {
	type head struct {
		l    sched.Line
		line bool // a single line from Next, not a run
	}
	heads := make([]head, len(its))
	order := logs.NewHeads(len(its))
	// next reads the next run of iterator i into heads[i], and reports false at its end.
	next := func(i int) (bool, error) {
		l, ok, err := rrs[i].NextRun(ctx)
		if err == nil && !ok {
			l, err = its[i].Next(ctx)
		}
		switch {
		case errors.Is(err, io.EOF):
			heads[i] = head{}
			return false, nil
		case err != nil:
			return false, err
		}
		heads[i] = head{l: l, line: !ok}
		return true, nil
	}
	for i := range heads {
		more, err := next(i)
		if err != nil {
			return err
		}
		if more {
			order.Push(i, heads[i].l.Time)
		}
	}
	for order.Len() > 0 {
		best := order.First()
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
		more, err := next(best)
		switch {
		case err != nil:
			return err
		case more:
			order.Advance(heads[best].l.Time)
		default:
			order.Pop()
		}
	}
	return nil
}
