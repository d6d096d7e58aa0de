// Package hang finds the hang alarm of a running app: every replica is alive but the
// progress stopped, no rank printed a line or reached a new metric step for the app's
// hang time. It reads the last lines of each replica through the same log iterators
// as every view (the Runner's, or the UI's engine), so `wick status`, `describe`,
// `wick list` and the wall say the same.
package hang

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"time"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Defaults of the hang time when the app sets none (spec.MetaHangAfter): the larger of
// DefaultAfter and StepFactor times the median interval between steps seen so far. Five
// minutes is far longer than a training step or a checkpoint's save on most jobs and
// far shorter than gloo's and NCCL's 30 minute timeouts; a job whose steps take a
// minute gets ten.
const (
	DefaultAfter = 5 * time.Minute
	StepFactor   = 10
)

// TailLines is how many of each replica's last lines a check reads: enough for the
// recent steps of every rank of a node (a median of intervals), bounded whatever the
// log's size. An app of many replicas reads fewer of each, MaxLines in all, and never
// fewer than minTail.
const (
	TailLines = 512
	MaxLines  = 32 << 10
	minTail   = 16
)

// Lines opens the lines of one replica of an app: the Runner, or the UI's engine.
type Lines interface {
	LogLines(ctx context.Context, h spec.Handle, role string, k int, opts sched.LogOptions) (sched.LogIterator, error)
}

// Progress is what one rank showed last.
type Progress struct {
	// Name is the rank as users name it: "rank 1", "trainer/0".
	Name string
	// Last is the time of its last line, zero when it printed none.
	Last time.Time
	// Step is the last step it reached, -1 when it named none.
	Step int64
}

// After is the hang time: own when it is set (positive), else the larger of
// DefaultAfter and StepFactor times the median of intervals (the times between a
// rank's steps). A negative own means no alarm, returned as is.
func After(own time.Duration, intervals []time.Duration) time.Duration {
	if own != 0 {
		return own
	}
	if len(intervals) == 0 {
		return DefaultAfter
	}
	s := slices.Clone(intervals)
	slices.Sort(s)
	return max(DefaultAfter, StepFactor*s[len(s)/2])
}

// Judge is the rule: the app hangs at now when no rank showed progress (a line) since
// start (when its replicas started) for after. Those that stopped first are the ranks
// behind the others in steps; when all are at one step, the ranks whose output
// stopped clearly before every other's (by a tenth of the hang time, at least a
// second). It returns nil when the app does not hang or after is not positive.
func Judge(ps []Progress, start, now time.Time, after time.Duration) *spec.Hang {
	if after <= 0 {
		return nil
	}
	since := start
	for _, p := range ps {
		if p.Last.After(since) {
			since = p.Last
		}
	}
	if now.Sub(since) < after {
		return nil
	}
	h := &spec.Hang{Since: since, After: after, Step: -1, Ahead: -1}
	lo, hi := int64(-1), int64(-1)
	for _, p := range ps {
		if p.Step < 0 {
			continue
		}
		if lo < 0 || p.Step < lo {
			lo = p.Step
		}
		hi = max(hi, p.Step)
	}
	h.Step, h.Ahead = lo, hi
	if lo >= 0 && lo < hi {
		for _, p := range ps {
			if p.Step == lo {
				h.Ranks = append(h.Ranks, p.Name)
			}
		}
		return h
	}
	// One step (or none) for all: by the time each stopped.
	last := func(p Progress) time.Time {
		if p.Last.IsZero() {
			return start
		}
		return p.Last
	}
	first := time.Time{}
	for _, p := range ps {
		if t := last(p); first.IsZero() || t.Before(first) {
			first = t
		}
	}
	margin := max(time.Second, after/10)
	var early []string
	for _, p := range ps {
		if last(p).Sub(first) <= margin {
			early = append(early, p.Name)
		}
	}
	if len(early) < len(ps) {
		h.Ranks = early
	}
	return h
}

// Check judges the app d describes at now, from the last lines of each of its replicas
// (TailLines, fewer for an app of many). It returns nil, nil when the app does not hang. An app is checked when it
// is RUNNING with every replica RUNNING and it is a training job: a role runs torchrun
// or a rank printed a metric step (a quiet server is not hung).
func Check(ctx context.Context, src Lines, h spec.Handle, d *sched.Description, now time.Time) (*spec.Hang, error) {
	own, ok := ownAfter(d)
	if !ok || d.Status.State != spec.Running {
		return nil, nil
	}
	var start time.Time
	torchrun := false
	for _, role := range d.Status.Roles {
		if d.App != nil {
			if r := d.App.Role(role.Role); r != nil && ranks.RunsTorchrun(append([]string{r.Entrypoint}, r.Args...)) {
				torchrun = true
			}
		}
		for _, rep := range role.Replicas {
			if rep.State != spec.Running {
				return nil, nil
			}
			if rep.Started.After(start) {
				start = rep.Started
			}
		}
	}
	least := own // the shortest hang time the app can have
	if own == 0 {
		least = DefaultAfter
	}
	if start.IsZero() || now.Sub(start) < least {
		return nil, nil // cannot have hung yet: read nothing
	}
	// A look at each replica's last line first: an app that printed within the
	// shortest hang time it can have is not hung, and its logs are not read further.
	if quiet, err := quietSince(ctx, src, h, d, start); err != nil || now.Sub(quiet) < least {
		return nil, err
	}
	r, err := read(ctx, src, h, d)
	if err != nil {
		return nil, err
	}
	if !torchrun && !r.stepped {
		return nil, nil
	}
	return Judge(r.ranks, start, now, After(own, r.intervals)), nil
}

// Attach sets st.Hang from Check (nil when the app does not hang). An app whose logs
// cannot be read is left as it is, with the error.
func Attach(ctx context.Context, src Lines, h spec.Handle, d *sched.Description, now time.Time) error {
	hg, err := Check(ctx, src, h, d, now)
	if err != nil {
		return err
	}
	d.Status.Hang = hg
	return nil
}

// ownAfter is the app's own hang time (0: the default); false when the app turned the
// alarm off.
func ownAfter(d *sched.Description) (time.Duration, bool) {
	if d.App == nil {
		return 0, true
	}
	v, ok := d.App.Metadata[spec.MetaHangAfter]
	if !ok {
		return 0, true
	}
	after, err := spec.ParseHangAfter(v)
	if err != nil {
		return 0, true // checked at launch; an edited record falls back to the default
	}
	return after, after >= 0
}

// reading is what the last lines of an app's replicas tell.
type reading struct {
	ranks     []Progress
	intervals []time.Duration
	stepped   bool
}

// read reads the last lines of every replica: each rank's last line and step, and the
// intervals between steps.
func read(ctx context.Context, src Lines, h spec.Handle, d *sched.Description) (reading, error) {
	store := metrics.NewStore(metrics.DefaultConfig())
	namer := metrics.NewNamerOf(d)
	last := map[metrics.Rank]time.Time{}
	// A torchrun node's own lines (its agent's, without a `[N]:` prefix) are output
	// but no rank: a node whose workers printed is named by them.
	ranked := map[sched.ReplicaRef]bool{}
	var order []metrics.Rank
	n := 0
	for _, role := range d.Status.Roles {
		n += len(role.Replicas)
	}
	tail := max(minTail, min(TailLines, MaxLines/max(n, 1)))
	for _, role := range d.Status.Roles {
		for _, rep := range role.Replicas {
			ref := sched.ReplicaRef{Role: role.Role, Replica: rep.ID}
			if err := readReplica(ctx, src, h, ref, tail, store, namer, func(r metrics.Rank, t time.Time) {
				if _, ok := last[r]; !ok {
					order = append(order, r)
				}
				last[r] = t
				if r.Local >= 0 {
					ranked[ref] = true
				}
			}); err != nil {
				return reading{}, err
			}
			if _, ok := last[metrics.Rank{Role: role.Role, Replica: rep.ID, Local: -1}]; !ok && !ranked[ref] {
				r := metrics.Rank{Role: role.Role, Replica: rep.ID, Local: -1}
				order = append(order, r)
				last[r] = time.Time{} // printed nothing
			}
		}
	}
	steps := map[metrics.Rank]int64{}
	var rd reading
	for i, name := range store.Names() {
		for _, s := range store.Series(name) {
			if s.Last.Step >= 0 {
				rd.stepped = true
				if cur, ok := steps[s.Rank]; !ok || s.Last.Step > cur {
					steps[s.Rank] = s.Last.Step
				}
			}
			if i == 0 {
				rd.intervals = append(rd.intervals, stepIntervals(s.Points())...)
			}
		}
	}
	for _, r := range order {
		if r.Local < 0 && ranked[sched.ReplicaRef{Role: r.Role, Replica: r.Replica}] {
			continue
		}
		step, ok := steps[r]
		if !ok {
			step = -1
		}
		rd.ranks = append(rd.ranks, Progress{Name: namer.Name(r), Last: last[r], Step: step})
	}
	sort.SliceStable(rd.ranks, func(i, j int) bool { return cmp.Less(rd.ranks[i].Name, rd.ranks[j].Name) })
	return rd, nil
}

// readReplica reads the last tail committed lines of one replica into store and
// namer (nil: neither), and tells seen the rank and time of each.
func readReplica(ctx context.Context, src Lines, h spec.Handle, ref sched.ReplicaRef, tail int, store *metrics.Store, namer *metrics.Namer, seen func(metrics.Rank, time.Time)) error {
	it, err := src.LogLines(ctx, h, ref.Role, ref.Replica, sched.LogOptions{Tail: tail})
	if err != nil {
		return fmt.Errorf("the hang check: %s/%d: %w", ref.Role, ref.Replica, err)
	}
	defer it.Close()
	for {
		l, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("the hang check: %s/%d: %w", ref.Role, ref.Replica, err)
		}
		if store == nil { // the time only
			seen(metrics.Rank{Role: l.Role, Replica: l.Replica, Local: -1}, l.Time)
			continue
		}
		namer.Observe(l)
		// A line where torchrun's tee glued several workers' lines is each rank's
		// part (split as the wall splits it): a rank's step there is its own.
		if parts := namer.Split(l); parts != nil {
			for _, part := range parts {
				p := store.Add(part)
				seen(metrics.Rank{Role: l.Role, Replica: l.Replica, Local: p.Local}, l.Time)
			}
			continue
		}
		p := store.Add(l)
		seen(metrics.Rank{Role: l.Role, Replica: l.Replica, Local: p.Local}, l.Time)
	}
}

// quietSince is the time of the app's last line (start when none is later), from the
// last line of each replica.
func quietSince(ctx context.Context, src Lines, h spec.Handle, d *sched.Description, start time.Time) (time.Time, error) {
	last := start
	for _, role := range d.Status.Roles {
		for _, rep := range role.Replicas {
			err := readReplica(ctx, src, h, sched.ReplicaRef{Role: role.Role, Replica: rep.ID}, 1, nil, nil, func(_ metrics.Rank, t time.Time) {
				if t.After(last) {
					last = t
				}
			})
			if err != nil {
				return time.Time{}, err
			}
		}
	}
	return last, nil
}

// stepIntervals are the times between the points of a series where its step changed.
func stepIntervals(pts []metrics.Point) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(pts); i++ {
		if pts[i].Step != pts[i-1].Step && pts[i].Step >= 0 && pts[i-1].Step >= 0 {
			if dt := time.Duration(pts[i].Time - pts[i-1].Time); dt > 0 {
				out = append(out, dt)
			}
		}
	}
	return out
}
