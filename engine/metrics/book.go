package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Lines opens the lines of one replica of an app: the Runner, or the UI's engine.
type Lines interface {
	LogLines(ctx context.Context, h spec.Handle, role string, k int, opts sched.LogOptions) (sched.LogIterator, error)
}

// Read adds to store, in time order, the committed lines of every replica of d written
// at or after since (zero: all), teaching namer (nil: none) the ranks. It returns the
// time of the last line read, since when there was none.
func Read(ctx context.Context, src Lines, h spec.Handle, d *sched.Description, since time.Time, store *Store, namer *Namer) (time.Time, error) {
	pos := &Position{}
	if !since.IsZero() {
		for _, ref := range replicasOf(d) {
			pos.markOf(ref).t = since
		}
	}
	_, err := pos.Read(ctx, src, h, d, store, namer)
	last := since
	for _, m := range pos.at {
		if m.t.After(last) {
			last = m.t
		}
	}
	return last, err
}

// Position is where a reading of an app's logs ended, replica by replica: the time of
// the last line read and how many lines of that time were read. A line's time is when
// it began, so a line that ends late (a progress bar drawn for an hour, a line written
// in pieces) comes after lines of later times of other replicas, and at the time of the
// line before it in its own replica's log: a reading from a single time would miss it.
// The zero Position reads from the start.
type Position struct {
	at map[sched.ReplicaRef]*refMark
}

type mark struct {
	t time.Time
	n int // lines read at t
}

// Read adds to store, in time order, the committed lines of every replica of d written
// since the position, and moves the position past them. It returns how many lines it
// read.
func (p *Position) Read(ctx context.Context, src Lines, h spec.Handle, d *sched.Description, store *Store, namer *Namer) (int, error) {
	var its []sched.LogIterator
	defer func() {
		for _, it := range its {
			it.Close()
		}
	}()
	for _, ref := range replicasOf(d) {
		var m mark
		if at := p.at[ref]; at != nil {
			m = at.mark
		}
		it, err := src.LogLines(ctx, h, ref.Role, ref.Replica, sched.LogOptions{Streams: sched.Combined, Since: m.t})
		if err != nil {
			return 0, fmt.Errorf("logs of %s/%d: %w", ref.Role, ref.Replica, err)
		}
		if m.n > 0 {
			it = &skipRead{LogIterator: it, t: m.t, n: m.n}
		}
		its = append(its, it)
	}
	if len(its) == 0 {
		return 0, nil
	}
	merged := logs.Merge(its...)
	its = nil // the merge closes them
	defer merged.Close()
	// A line where torchrun's tee glued several workers' lines is read as each of
	// them, each its rank's (split as the wall splits it): by the namer, else by one
	// made for it, which learns the nodes' workers as the namer would.
	split := namer
	if split == nil {
		split = NewNamerOf(d)
	}
	n := 0
	var cur *refMark // the replica of the last line read
	for {
		l, err := merged.Next(ctx)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if l.Pending {
			continue
		}
		n++
		split.Observe(l)
		if parts := split.Split(l); parts != nil {
			for _, part := range parts {
				store.Add(part)
			}
		} else {
			store.Add(l)
		}
		if cur == nil || cur.ref.Role != l.Role || cur.ref.Replica != l.Replica {
			// Lines come in runs of one replica: its mark is looked up once a run.
			cur = p.markOf(sched.ReplicaRef{Role: l.Role, Replica: l.Replica})
		}
		if l.Time.Equal(cur.t) {
			cur.n++
		} else {
			cur.mark = mark{l.Time, 1}
		}
	}
}

// refMark is a replica's mark, kept by pointer while its lines are read.
type refMark struct {
	ref sched.ReplicaRef
	mark
}

// markOf returns the mark of ref, to be updated in place.
func (p *Position) markOf(ref sched.ReplicaRef) *refMark {
	if p.at == nil {
		p.at = map[sched.ReplicaRef]*refMark{}
	}
	m := p.at[ref]
	if m == nil {
		m = &refMark{ref: ref}
		p.at[ref] = m
	}
	return m
}

// skipRead drops the first n committed lines at time t: read by the reading before.
type skipRead struct {
	sched.LogIterator
	t time.Time
	n int
}

// Ready is the inner iterator's (the merge keeps replicas in time order with it); a
// reading does not follow, so an iterator without it never blocks for long.
func (s *skipRead) Ready() bool {
	if r, ok := s.LogIterator.(sched.Readier); ok {
		return r.Ready()
	}
	return true
}

func (s *skipRead) Next(ctx context.Context) (sched.Line, error) {
	for {
		l, err := s.LogIterator.Next(ctx)
		if err != nil || s.n == 0 || l.Pending {
			return l, err
		}
		if !l.Time.Equal(s.t) {
			s.n = 0
			return l, nil
		}
		s.n--
	}
}

// replicasOf lists the replicas of an app: from its status, else from its AppDef.
func replicasOf(d *sched.Description) []sched.ReplicaRef {
	var refs []sched.ReplicaRef
	for _, role := range d.Status.Roles {
		for _, r := range role.Replicas {
			refs = append(refs, sched.ReplicaRef{Role: role.Role, Replica: r.ID})
		}
	}
	if len(refs) == 0 && d.App != nil {
		for _, role := range d.App.Roles {
			for k := range role.NumReplicas {
				refs = append(refs, sched.ReplicaRef{Role: role.Name, Replica: k})
			}
		}
	}
	return refs
}

// Found is what a Book knows of an app's alarms: how many, and the first of them
// described with their ranks named as a user does ("loss on rank 1 is NaN at step 7").
type Found struct {
	N     int      `json:"n"`
	Lines []string `json:"lines,omitempty"`
	// Notes says what the reading gave up on (a pattern too slow, skipped).
	Notes []string `json:"notes,omitempty"`
}

// Bounds of a Book.
const (
	// MaxFoundLines is how many alarms a Book describes per app (the count goes on).
	MaxFoundLines = 8
	// maxBookKept is how many finished apps a Book's file remembers; the oldest go.
	maxBookKept = 2048
	// maxBookFile bounds what is read of a Book's file.
	maxBookFile = 8 << 20
	// bookFile is the file, in a Book's directory, of the finished apps' alarms.
	bookFile = "alarms.json"
	// rescanEvery is how often a running app's new lines are read at most.
	rescanEvery = 2 * time.Second
	// saveEvery is how often a Book's file is written at most while apps finish.
	saveEvery = 5 * time.Second
)

// Book keeps the alarms of many apps, read from their logs: a finished app's once
// (and remembered in a file, so that a list of old apps costs nothing the next time),
// a running app's as its lines come, reading only the lines written since the last
// reading. It is safe for concurrent use. A nil Book reads nothing and finds no alarm.
type Book struct {
	cfg Config
	src Lines
	dir string // where the finished apps' alarms are kept ("" keeps none)

	mu    sync.Mutex
	live  map[string]*bookEntry // by handle: apps read while running (or being read)
	kept  map[string]Found      // by handle: finished apps
	order []string              // kept's handles, oldest first
	dirty bool                  // kept has changed since the file was written
	saved time.Time             // when the file was last written
	// watched counts, by handle, the views that read every line of the app
	// themselves (a log wall): Scan leaves those apps alone.
	watched map[string]int
}

// bookEntry is a running app's reading. Holding busy (a token) serializes the readings
// of one app; a waiter gives up when its context is done.
type bookEntry struct {
	busy  chan struct{}
	store *Store
	namer *Namer
	pos   Position  // where the last reading ended
	at    time.Time // when it was last read
	found Found
}

// NewBook returns a Book that reads logs through src, extracts with cfg, and keeps the
// finished apps' alarms in dir ("" keeps them in memory only). An unreadable file is
// an empty one: the alarms are read again from the logs.
func NewBook(src Lines, cfg Config, dir string) *Book {
	b := &Book{cfg: cfg, src: src, dir: dir, live: map[string]*bookEntry{}, kept: map[string]Found{}}
	if dir == "" {
		return b
	}
	data, err := safefs.ReadFile(filepath.Join(dir, bookFile), maxBookFile)
	if err != nil {
		return b
	}
	var saved []struct {
		Handle string `json:"handle"`
		Found
	}
	if json.Unmarshal(data, &saved) != nil {
		return b
	}
	for _, s := range saved {
		if _, dup := b.kept[s.Handle]; dup || len(b.order) == maxBookKept {
			continue
		}
		if len(s.Lines) > MaxFoundLines {
			s.Lines = s.Lines[:MaxFoundLines]
		}
		b.kept[s.Handle] = s.Found
		b.order = append(b.order, s.Handle)
	}
	return b
}

// Config is the extraction the Book reads with (DefaultConfig for a nil Book): what a
// view that reads the same apps' metrics reads with.
func (b *Book) Config() Config {
	if b == nil {
		return DefaultConfig()
	}
	return b.cfg
}

// Watch tells the Book that a view reads every line of app h itself (the log wall,
// which extracts the same metrics): until release is called, Scan reads none of h's
// lines and returns what it found before. A wall of 1,024 replicas otherwise paid
// for a second reading of every line, merged in time order, each time the app list
// asked.
func (b *Book) Watch(h spec.Handle) (release func()) {
	if b == nil {
		return func() {}
	}
	key := h.String()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.watched == nil {
		b.watched = map[string]int{}
	}
	b.watched[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.watched[key]--; b.watched[key] <= 0 {
				delete(b.watched, key)
			}
		})
	}
}

// Known returns what the Book knows of a finished app without reading anything; ok is
// false when the app was not read to its end yet.
func (b *Book) Known(h spec.Handle) (Found, bool) {
	if b == nil {
		return Found{}, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	f, ok := b.kept[h.String()]
	return f, ok
}

// Scan returns the alarms of app h, described by d (its status says whether it has
// ended, and its replicas which logs to read). A finished app is read once; a running
// one reads the lines written since its last reading, at most every rescanEvery; a
// watched one (see Watch) is not read. On an error the alarms found so far are
// returned with it.
func (b *Book) Scan(ctx context.Context, h spec.Handle, d *sched.Description) (Found, error) {
	if b == nil {
		return Found{}, nil
	}
	key := h.String()
	b.mu.Lock()
	if f, ok := b.kept[key]; ok {
		b.mu.Unlock()
		return f, nil
	}
	e := b.live[key]
	if b.watched[key] > 0 {
		b.mu.Unlock()
		if e == nil {
			return Found{}, nil
		}
		// A reading under way may be writing it: take the token to read it.
		select {
		case e.busy <- struct{}{}:
		case <-ctx.Done():
			return Found{}, ctx.Err()
		}
		defer func() { <-e.busy }()
		return e.found, nil
	}
	if e == nil {
		e = &bookEntry{busy: make(chan struct{}, 1), store: NewAlarmStore(b.cfg), namer: NewNamerOf(d)}
		b.live[key] = e
	}
	b.mu.Unlock()

	// Another reading of the app (the list's, while describe asks) may take seconds on
	// a big finished app: wait for it as long as ctx allows.
	select {
	case e.busy <- struct{}{}:
	case <-ctx.Done():
		return Found{}, ctx.Err()
	}
	defer func() { <-e.busy }()
	if e.store == nil {
		// Read to its end by a concurrent Scan.
		return e.found, nil
	}
	ended := d.Status.State.Terminal()
	if !ended && !e.at.IsZero() && time.Since(e.at) < rescanEvery {
		return e.found, nil
	}
	// The ranks are named from the latest status too (a node's group rank, learned
	// by the scheduler once its workers started), as the wall and wick log name them.
	e.namer.Update(d)
	_, err := e.pos.Read(ctx, b.src, h, d, e.store, e.namer)
	e.at = time.Now()
	e.found = describe(e.store.Alarms(), e.namer)
	e.found.Notes = append([]string(nil), e.store.Notices()...)
	if err != nil {
		return e.found, err
	}
	if ended {
		e.store, e.namer = nil, nil // nothing more will come: let the values go
		b.keep(key, e.found)
	}
	return e.found, nil
}

func describe(alarms []Alarm, namer *Namer) Found {
	f := Found{N: len(alarms)}
	for _, a := range alarms[:min(len(alarms), MaxFoundLines)] {
		f.Lines = append(f.Lines, a.DescribeWith(namer.Name))
	}
	return f
}

// keep remembers a finished app's alarms, and writes them to the Book's file (best
// effort: a failure only means reading the logs again next time).
func (b *Book) keep(key string, f Found) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.live, key)
	if _, ok := b.kept[key]; !ok {
		b.order = append(b.order, key)
	}
	b.kept[key] = f
	for len(b.order) > maxBookKept {
		delete(b.kept, b.order[0])
		b.order = b.order[1:]
	}
	b.dirty = true
	// A first list of many old apps finishes many readings in a row: the file is
	// written at most every saveEvery then, and by Save at the end.
	if time.Since(b.saved) >= saveEvery {
		b.saveLocked()
	}
}

// Save writes what changed to the Book's file (the UI calls it when it closes).
func (b *Book) Save() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.saveLocked()
}

// Forget drops what the Book knows of app h (after it is deleted).
func (b *Book) Forget(h spec.Handle) {
	if b == nil {
		return
	}
	key := h.String()
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.live, key)
	if _, ok := b.kept[key]; !ok {
		return
	}
	delete(b.kept, key)
	for i, k := range b.order {
		if k == key {
			b.order = append(b.order[:i:i], b.order[i+1:]...)
			break
		}
	}
	b.dirty = true
	b.saveLocked()
}

// Retain drops the readings of running apps not in handles (gone from the list), so
// that their values do not stay in memory.
func (b *Book) Retain(handles map[string]bool) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for key := range b.live {
		if !handles[key] {
			delete(b.live, key)
		}
	}
}

func (b *Book) saveLocked() {
	if b.dir == "" || !b.dirty {
		return
	}
	type saved struct {
		Handle string `json:"handle"`
		Found
	}
	out := make([]saved, 0, len(b.order))
	for _, k := range b.order {
		out = append(out, saved{k, b.kept[k]})
	}
	data, err := json.Marshal(out)
	if err != nil || safefs.MkdirAll(b.dir) != nil {
		return
	}
	if safefs.WriteFileAtomic(b.dir, bookFile, data) == nil {
		b.dirty, b.saved = false, time.Now()
	}
}
