package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// rankRefresh is how often a reader of an app's lines asks for the app's status while
// the group rank of one of its torchrun nodes is not known (several nodes of a c10d
// rendezvous, where node k need not be group rank k, and torchrun says which only at
// LOGLEVEL=INFO). The scheduler learns it from the node's workers soon after they
// start (Slurm: the replica's wrapper, within 200 ms); asking more often would cost a
// status (squeue, scontrol) for little.
const rankRefresh = 2 * time.Second

// maxHeld bounds the bytes of lines a rank filter holds while their node's group rank
// is not known; past it the oldest are dropped (and counted).
const maxHeld = 8 << 20

// refreshRanks hands newer descriptions of the app h (d is the one read first) on the
// channel it returns, one every rankRefresh at most, until every node's group rank is
// in the status, the app has ended, or ctx is done; then it closes the channel. It
// returns nil when d already says all there is. Only the latest description waits in
// the channel: a reader that takes none for a while misses nothing it needs.
func refreshRanks(ctx context.Context, r *runner.Runner, h spec.Handle, d *sched.Description) <-chan *sched.Description {
	if d == nil || d.Status.State.Terminal() || ranks.NewTracker(d).StatusKnows() {
		return nil
	}
	out := make(chan *sched.Description, 1)
	go func() {
		defer close(out)
		tick := time.NewTicker(rankRefresh)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			nd, err := r.Describe(ctx, h)
			if err != nil {
				continue // a status that failed this time (a slow controller): ask again
			}
			select {
			case <-out: // the older one, not taken yet
			default:
			}
			out <- nd
			if nd.Status.State.Terminal() || ranks.NewTracker(nd).StatusKnows() {
				return
			}
		}
	}()
	return out
}

// rankFilter passes only the lines of the given global ranks to emit: each replica
// is a torchrun node whose ranks are learned as the wall and the metrics learn them
// (a ranks.Tracker: its status, its workers' group rank, and its own lines), and the
// traceback the app's root cause puts on a rank is that rank's. Lines are passed as
// stored, torchrun's "[local_rank]:" prefix included.
//
// A worker's line of a node whose group rank is not known yet is held, not guessed:
// it is passed (or not) once the rank is learned, from the node's own lines or from a
// newer status (fresh), after the lines passed meanwhile. What is still held at the
// end is not printed (see finish).
type rankFilter struct {
	t     *ranks.Tracker
	want  []int
	emit  func(sched.Line) error
	fresh <-chan *sched.Description
	// held are the lines waiting for their node's ranks, in order, and their size.
	held      []sched.Line
	heldBytes int
	dropped   map[replicaRef]int
	// seen is set once a line carried torchrun's prefix: without one (torchrun run
	// without --tee) no line can be told to be a rank's.
	seen bool
}

// newRankFilter returns the filter of the app d describes; fresh (nil for none) hands
// it newer descriptions.
func newRankFilter(d *sched.Description, want []int, fresh <-chan *sched.Description, emit func(sched.Line) error) *rankFilter {
	return &rankFilter{t: ranks.NewTracker(d), want: want, emit: emit, fresh: fresh, dropped: map[replicaRef]int{}}
}

// line takes the next line of the app.
func (f *rankFilter) line(l sched.Line) error {
	if err := f.refresh(); err != nil {
		return err
	}
	knew := f.t.Known(l.Role, l.Replica)
	f.t.Observe(l)
	known := f.t.Known(l.Role, l.Replica)
	if _, _, ok := ranks.Parse(l.Text); ok && !known {
		f.seen = true
		if !l.Pending { // a pending line is redrawn by the line that ends it
			f.hold(l)
		}
		return nil
	}
	if known && !knew && len(f.held) > 0 {
		// The node's own line taught it its ranks (a rendezvous block).
		if err := f.release(); err != nil {
			return err
		}
	}
	return f.pass(l)
}

// pass emits l if it is one of the wanted ranks'.
func (f *rankFilter) pass(l sched.Line) error {
	g, _, ok := f.t.Attribute(&l)
	f.seen = f.seen || ok
	if ok && slices.Contains(f.want, g) {
		return f.emit(l)
	}
	return nil
}

func (f *rankFilter) hold(l sched.Line) {
	f.held = append(f.held, l)
	f.heldBytes += len(l.Text)
	for f.heldBytes > maxHeld && len(f.held) > 0 {
		old := f.held[0]
		f.held = f.held[1:]
		f.heldBytes -= len(old.Text)
		f.dropped[replicaRef{old.Role, old.Replica}]++
	}
}

// refresh takes a newer description, if one came.
func (f *rankFilter) refresh() error {
	select {
	case d, ok := <-f.fresh:
		if !ok {
			f.fresh = nil
			return nil
		}
		return f.learn(d)
	default:
		return nil
	}
}

// learn takes a newer description and passes the held lines whose node's ranks it
// tells.
func (f *rankFilter) learn(d *sched.Description) error {
	if d == nil {
		return nil
	}
	f.t.Update(d)
	return f.release()
}

// release passes the held lines whose node's ranks are known now, in their order.
func (f *rankFilter) release() error {
	kept := f.held[:0]
	f.heldBytes = 0
	for i, l := range f.held {
		if !f.t.Known(l.Role, l.Replica) {
			kept = append(kept, l)
			f.heldBytes += len(l.Text)
			continue
		}
		if err := f.pass(l); err != nil {
			f.held = append(kept, f.held[i+1:]...)
			return err
		}
	}
	clear(f.held[len(kept):])
	f.held = kept
	return nil
}

// idle wraps a follower's idle: a newer description is taken while the lines pause.
func (f *rankFilter) idle(next func() error) func() error {
	return func() error {
		if err := f.refresh(); err != nil {
			return err
		}
		return next()
	}
}

// finish ends the filter once the lines are read: final (nil if it could not be had)
// is the app's latest description, whose group ranks pass the lines still held. Lines
// whose node's ranks are still not known are not printed: warn says how many, of
// which node.
func (f *rankFilter) finish(final *sched.Description, warn io.Writer, h spec.Handle) error {
	if len(f.held) > 0 {
		if err := f.learn(final); err != nil {
			return err
		}
	}
	for _, l := range f.held {
		f.dropped[replicaRef{l.Role, l.Replica}]++
	}
	f.held, f.heldBytes = nil, 0
	for _, ref := range sortedRefs(f.dropped) {
		fmt.Fprintf(warn, "wick: warning: %d lines of %s/%s/%d are not shown: its group rank (which ranks its workers are) is not known\n",
			f.dropped[ref], h, ref.role, ref.k)
	}
	return nil
}

// sortedRefs are the keys of m, by role then replica.
func sortedRefs(m map[replicaRef]int) []replicaRef {
	refs := make([]replicaRef, 0, len(m))
	for ref := range m {
		refs = append(refs, ref)
	}
	slices.SortFunc(refs, func(a, b replicaRef) int {
		if a.role != b.role {
			if a.role < b.role {
				return -1
			}
			return 1
		}
		return a.k - b.k
	})
	return refs
}
