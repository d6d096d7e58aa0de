package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

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

// maxHeld bounds the memory of the lines a rank filter holds while their node's group
// rank is not known (their text and a Line each: see heldSize); past it the oldest go
// out at once, named by their node (see rankFilter.unplace), rather than be lost.
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
// newer status (fresh), after the lines passed meanwhile. A held line is never lost:
// what is still held at the end (the app ended, the follow was interrupted or failed)
// goes to named, named by its node as `wick metrics` names it (role/replica:local),
// and so do the oldest held lines past maxHeld (see finish).
type rankFilter struct {
	t     *ranks.Tracker
	want  []int
	emit  func(sched.Line) error
	named func(name string, l sched.Line) error
	fresh <-chan *sched.Description
	// held are the lines waiting for their node's ranks, in order, and their size.
	held      []sched.Line
	heldBytes int
	limit     int // maxHeld; smaller in tests
	// unplaced counts, by node, the lines that went to named.
	unplaced map[replicaRef]int
	// seen is set once a line carried torchrun's prefix: without one (torchrun run
	// without --tee) no line can be told to be a rank's.
	seen bool
}

// newRankFilter returns the filter of the app d describes; fresh (nil for none) hands
// it newer descriptions; named prints a line whose node's ranks are not known, named
// by that node.
func newRankFilter(d *sched.Description, want []int, fresh <-chan *sched.Description, emit func(sched.Line) error, named func(string, sched.Line) error) *rankFilter {
	return &rankFilter{t: ranks.NewTracker(d), want: want, emit: emit, named: named, fresh: fresh,
		limit: maxHeld, unplaced: map[replicaRef]int{}}
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
			return f.hold(l)
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

// pass emits l if it is one of the wanted ranks', or, where torchrun's tee glued
// several workers' lines into l (ranks.Tracker.Split), those of them that are.
func (f *rankFilter) pass(l sched.Line) error {
	if parts := f.t.Split(l); parts != nil {
		for _, p := range parts {
			if err := f.passOne(p); err != nil {
				return err
			}
		}
		return nil
	}
	return f.passOne(l)
}

// passOne emits l if it is one of the wanted ranks'.
func (f *rankFilter) passOne(l sched.Line) error {
	g, _, ok := f.t.Attribute(&l)
	f.seen = f.seen || ok
	if ok && slices.Contains(f.want, g) {
		return f.emit(l)
	}
	return nil
}

// heldSize is what a held line costs: its text and its Line, so that the bound holds
// for many short lines too.
func heldSize(l sched.Line) int { return len(l.Text) + int(unsafe.Sizeof(l)) }

// hold keeps l until its node's ranks are known. Past the bound, the oldest held lines
// go out named by their node, down to three quarters of it (so that the held lines
// are copied once per quarter of the bound, not once per line): memory stays bounded
// and no line is lost.
func (f *rankFilter) hold(l sched.Line) error {
	// A cut line's Full reader dies with its iterator, before the line may go out: a
	// held line keeps the start it was given (as --json gives it).
	l.Full = nil
	f.held = append(f.held, l)
	f.heldBytes += heldSize(l)
	if f.heldBytes <= f.limit {
		return nil
	}
	n := 0
	for f.heldBytes > f.limit/4*3 && n < len(f.held) {
		f.heldBytes -= heldSize(f.held[n])
		n++
	}
	out := f.held[:n]
	f.held = slices.Clone(f.held[n:]) // a fresh array: the old one's lines are freed
	return f.unplace(out)
}

// unplace prints lines whose node's ranks are not known, named by their node.
func (f *rankFilter) unplace(ls []sched.Line) error {
	for _, l := range ls {
		local, _, _ := ranks.Parse(l.Text)
		name := l.Role + "/" + strconv.Itoa(l.Replica) + ":" + strconv.Itoa(local)
		f.unplaced[replicaRef{l.Role, l.Replica}]++
		if err := f.named(name, l); err != nil {
			return err
		}
	}
	return nil
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
			f.heldBytes += heldSize(l)
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

// finish ends the filter, however the lines ended (read to the end, the follow
// interrupted, an error): final (nil if it could not be had) is the app's latest
// description, whose group ranks pass the lines still held, after a description the
// refresh already handed over. The lines whose node's ranks are still not known are
// printed named by their node, and warn says, in one line, how many of which node
// were (those past maxHeld included).
func (f *rankFilter) finish(final *sched.Description, warn io.Writer, h spec.Handle) error {
	if len(f.held) > 0 {
		if err := f.refresh(); err != nil {
			return err
		}
		if err := f.learn(final); err != nil {
			return err
		}
	}
	held := f.held
	f.held, f.heldBytes = nil, 0
	err := f.unplace(held)
	if len(f.unplaced) > 0 {
		var parts []string
		for _, ref := range sortedRefs(f.unplaced) {
			parts = append(parts, fmt.Sprintf("%d lines of %s/%s/%d", f.unplaced[ref], h, ref.role, ref.k))
		}
		fmt.Fprintf(warn, "wick: warning: %s printed named by node (ROLE/REPLICA:LOCAL_RANK), not by rank: the node's group rank was not known yet\n",
			strings.Join(parts, ", "))
	}
	return err
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
