package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Files of a sweep's directory.
const (
	sweepFile = "sweep.json"
	// plansFile holds the plans, one JSON line per app in index order, so that one
	// app's plan is read without decoding the others (wick status of a queued app);
	// oldPlansFile is the JSON array of sweeps made before.
	plansFile    = "plans.jsonl"
	oldPlansFile = "plans.json"
	lockFile     = "lock"
	// QueueLog is the queue process's own messages, and the journal's notes.
	QueueLog = "queue.log"
	// storeVersion 2: sweep.json is a snapshot, its journal the changes since.
	storeVersion = 2
	// maxSweepFile bounds what is read of sweep.json: 10,000 apps are a few MB.
	maxSweepFile = 64 << 20
	// IDPrefix starts every sweep id, so that a sweep id is never read as an app id.
	IDPrefix = "sweep-"
)

// Metadata keys set on every app of a sweep (AppDef.Metadata), so that a scheduler's
// own record of the app says which sweep it belongs to.
const (
	MetaSweep  = "wick.sweep"
	MetaValues = "wick.sweep.values"
)

// EntryState is where an app of a sweep is in the queue.
type EntryState string

// The states of an entry. Once launched, the app's own state is its scheduler's.
const (
	Queued      EntryState = "queued"        // waiting for a slot
	Launching   EntryState = "launching"     // the queue is launching it
	Launched    EntryState = "launched"      // its scheduler has it
	NotLaunched EntryState = "launch_failed" // its launch failed: Error says why
	Removed     EntryState = "cancelled"     // cancelled while queued: never launched
	Deleted     EntryState = "deleted"       // deleted while not launched
)

// Entry is one app of a sweep.
type Entry struct {
	Index  int        `json:"index"`
	Values []string   `json:"values"`
	Name   string     `json:"name"`
	Handle string     `json:"handle"`
	State  EntryState `json:"state"`
	// Error is why the launch failed.
	Error string `json:"error,omitempty"`
	// Wait is why a queued app waits beyond its turn: its scheduler refused it for a
	// limit (Slurm's submit limits, a full disk); the queue tries it again.
	Wait string `json:"wait,omitempty"`
	// CancelRequested is a cancel that came while the app was being launched: the
	// queue cancels it once launched.
	CancelRequested bool `json:"cancel_requested,omitempty"`
	// GPUs is how many devices the app needs (0 on a machine without GPUs).
	GPUs int `json:"gpus,omitempty"`
	// Devices are the GPUs given to the app (its CUDA_VISIBLE_DEVICES).
	Devices []string `json:"devices,omitempty"`
	// LaunchStarted is when the queue began launching it; Launched when its launch
	// returned; Ended when it left the queue without running (cancelled, failed).
	LaunchStarted time.Time `json:"launch_started,omitzero"`
	Launched      time.Time `json:"launched,omitzero"`
	Ended         time.Time `json:"ended,omitzero"`
	// Stopped says why the queue cancelled the app (--stop-on-nan: "loss NaN at step
	// 12"), or "".
	Stopped string `json:"stopped,omitempty"`
}

// Sweep is a group of apps launched together by `wick run --sweep`.
type Sweep struct {
	Version int `json:"version"`
	// Gen is the generation of the snapshot (sweep.json): one more at each
	// compaction of the journal. Readers compare it with the journal's.
	Gen       uint64    `json:"gen,omitempty"`
	ID        string    `json:"id"`
	Created   time.Time `json:"created"`
	Component string    `json:"component"`
	Scheduler string    `json:"scheduler"`
	Session   string    `json:"session"`
	// Names are the swept names, in the order given; each entry's Values follow it.
	Names []string `json:"names"`
	// MaxParallel is how many apps run at once (0: all).
	MaxParallel int `json:"max_parallel"`
	// StopOnNaN makes the queue cancel a running app whose metrics go NaN or Inf.
	StopOnNaN bool `json:"stop_on_nan,omitempty"`
	// Devices are the GPUs the queue hands out (empty: none, CPU slots only).
	Devices []string `json:"devices,omitempty"`
	// Env and WorkDir are the launching command's environment (KEY=VALUE) and working
	// directory: the queue runs with them, so that every app of the sweep, resumed or
	// not, gets them (its PATH, virtualenv, CUDA_VISIBLE_DEVICES). Empty in sweeps made
	// before: the queue then runs with the resuming command's.
	Env     []string `json:"env,omitempty"`
	WorkDir string   `json:"work_dir,omitempty"`
	// Queue is the queue process, once it runs.
	Queue logs.Proc `json:"queue,omitzero"`
	// Entries are the apps, in queue order.
	Entries []Entry `json:"entries"`
}

// Ref is the SweepRef of entry e.
func (s *Sweep) Ref(e *Entry) *spec.SweepRef {
	r := &spec.SweepRef{ID: s.ID, Names: s.Names, Values: make(map[string]string, len(s.Names))}
	for i, n := range s.Names {
		if i < len(e.Values) {
			r.Values[n] = e.Values[i]
		}
	}
	return r
}

// Entry returns the entry of handle h, or nil.
func (s *Sweep) Entry(h string) *Entry {
	if i := s.index(h); i >= 0 {
		return &s.Entries[i]
	}
	return nil
}

// index is the place of the entry of handle h, or -1.
func (s *Sweep) index(h string) int {
	for i := range s.Entries {
		if s.Entries[i].Handle == h {
			return i
		}
	}
	return -1
}

// Waiting counts the entries not launched yet (queued or being launched).
func (s *Sweep) Waiting() int {
	n := 0
	for _, e := range s.Entries {
		if e.State == Queued || e.State == Launching {
			n++
		}
	}
	return n
}

// Plan is what one app of a sweep is launched from: the runner's submission, planned
// when the sweep was made, with its run options in string form (typed again by the
// scheduler's options at launch, as JSON would turn ints into floats).
type Plan struct {
	Scheduler string            `json:"scheduler"`
	AppID     string            `json:"app_id"`
	Session   string            `json:"session"`
	App       *spec.AppDef      `json:"app"`
	Cfg       map[string]string `json:"cfg"`
	Workspace string            `json:"workspace,omitempty"`
	Call      *sched.Call       `json:"call,omitempty"`
}

// PlanOf makes the plan of a dry run.
func PlanOf(info *sched.DryRunInfo) Plan {
	return Plan{Scheduler: info.Scheduler, AppID: info.AppID, Session: info.Session, App: info.App,
		Cfg: spec.CfgStrings(info.Cfg), Workspace: info.Workspace, Call: info.Call}
}

// Store is the sweeps of one WICK_HOME. It keeps each sweep it has read in memory,
// with how far it read its journal, so that reading a sweep again reads only what
// changed since (see journal.go). It is safe for concurrent use.
type Store struct {
	dir string
	mu  sync.Mutex
	// cache is the sweeps read, by id.
	cache map[string]*cached
	// compactAt, when not 0, is the journal size that triggers a compaction (tests).
	compactAt int64
}

// NewStore returns the sweeps kept under stateDir.
func NewStore(stateDir string) *Store {
	return &Store{dir: filepath.Join(stateDir, "sweeps"), cache: map[string]*cached{}}
}

// NewID makes a new sweep id.
func NewID() string { return IDPrefix + spec.RandomID()[:8] }

// IsID says whether s looks like a sweep id.
func IsID(s string) bool {
	return strings.HasPrefix(s, IDPrefix) && spec.ValidateName("sweep id", s) == nil
}

// Dir is the directory of sweep id.
func (st *Store) Dir(id string) (string, error) {
	if err := spec.ValidateName("sweep id", id); err != nil || !strings.HasPrefix(id, IDPrefix) {
		return "", fmt.Errorf("%w: %q is not a sweep id", ErrNoSweep, id)
	}
	return filepath.Join(st.dir, id), nil
}

// ErrNoSweep is wrapped when a sweep id names no sweep.
var ErrNoSweep = errors.New("no such sweep")

// Create writes a new sweep and its plans (one per entry, in the same order).
func (st *Store) Create(s *Sweep, plans []Plan) (string, error) {
	dir, err := st.Dir(s.ID)
	if err != nil {
		return "", err
	}
	if err := safefs.MkdirAll(st.dir); err != nil {
		return "", fmt.Errorf("sweep directory: %w", err)
	}
	if err := os.Mkdir(dir, safefs.DirMode); err != nil {
		return "", fmt.Errorf("sweep directory: %w", err)
	}
	s.Version, s.Gen = storeVersion, 0
	var lines bytes.Buffer
	for i := range plans {
		b, err := json.Marshal(&plans[i])
		if err != nil {
			_ = os.RemoveAll(dir)
			return "", fmt.Errorf("plan of app %d: %w", i, err)
		}
		lines.Write(b)
		lines.WriteByte('\n')
	}
	if err := safefs.WriteFileAtomic(dir, plansFile, lines.Bytes()); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("write %s: %w", plansFile, err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	// The first snapshot, of generation 1, and its empty journal; s stays the caller's.
	if err := st.compact(dir, s.clone()); err != nil {
		delete(st.cache, s.ID)
		_ = os.RemoveAll(dir)
		return "", err
	}
	s.Gen = 1
	return dir, nil
}

// Load reads sweep id: the copy returned is the caller's.
func (st *Store) Load(id string) (*Sweep, error) {
	var out *Sweep
	err := st.view(id, func(s *Sweep) { out = s.clone() })
	return out, err
}

// view calls fn with sweep id as on disk now, without copying it: fn must not change
// it or keep it.
func (st *Store) view(id string, fn func(*Sweep)) error {
	dir, err := st.Dir(id)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	c, err := st.refresh(dir, false)
	if err != nil {
		return err
	}
	fn(c.s)
	return nil
}

// Plans reads the plans of sweep id, in entry index order.
func (st *Store) Plans(id string) ([]Plan, error) {
	data, old, err := st.readPlans(id)
	if err != nil {
		return nil, err
	}
	var plans []Plan
	if old {
		if err := json.Unmarshal(data, &plans); err != nil {
			return nil, fmt.Errorf("sweep %s: corrupt %s: %w", id, oldPlansFile, err)
		}
		return plans, nil
	}
	for i := 0; len(data) > 0; i++ {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		data = rest
		var p Plan
		if err := json.Unmarshal(line, &p); err != nil {
			return nil, fmt.Errorf("sweep %s: corrupt %s: the plan of app %d: %w", id, plansFile, i, err)
		}
		plans = append(plans, p)
	}
	return plans, nil
}

// Plan reads the plan of the app of index i of sweep id (decoding it alone).
func (st *Store) Plan(id string, i int) (*Plan, error) {
	data, old, err := st.readPlans(id)
	if err != nil {
		return nil, err
	}
	if old {
		plans, err := st.Plans(id)
		if err != nil {
			return nil, err
		}
		if i < 0 || i >= len(plans) {
			return nil, fmt.Errorf("sweep %s: no plan of app %d", id, i)
		}
		return &plans[i], nil
	}
	for k := 0; k < i && len(data) > 0; k++ {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			data = nil
			break
		}
		data = data[nl+1:]
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	if i < 0 || len(line) == 0 {
		return nil, fmt.Errorf("sweep %s: no plan of app %d", id, i)
	}
	var p Plan
	if err := json.Unmarshal(line, &p); err != nil {
		return nil, fmt.Errorf("sweep %s: corrupt %s: the plan of app %d: %w", id, plansFile, i, err)
	}
	return &p, nil
}

// readPlans reads the plans file of sweep id; old says it is the JSON array of a sweep
// made before plans.jsonl.
func (st *Store) readPlans(id string) (data []byte, old bool, err error) {
	dir, err := st.Dir(id)
	if err != nil {
		return nil, false, err
	}
	data, err = safefs.ReadFile(filepath.Join(dir, plansFile), maxSweepFile*4)
	if errors.Is(err, fs.ErrNotExist) {
		old = true
		data, err = safefs.ReadFile(filepath.Join(dir, oldPlansFile), maxSweepFile*4)
	}
	if err != nil {
		return nil, false, fmt.Errorf("sweep %s: plans: %w", id, err)
	}
	return data, old, nil
}

// Update changes sweep id under its lock: fn gets a copy of the sweep as on disk, and
// what it changes is written (unless it returns an error): the entries it changed, as
// one line appended to the sweep's journal. Every writer (the queue, cancel, delete,
// another terminal) goes through Update, so none loses another's change.
func (st *Store) Update(id string, fn func(*Sweep) error) error {
	dir, err := st.Dir(id)
	if err != nil {
		return err
	}
	unlock, err := lock(dir)
	if err != nil {
		return err
	}
	defer unlock()
	st.mu.Lock()
	defer st.mu.Unlock()
	c, err := st.refresh(dir, true)
	if err != nil {
		return err
	}
	work := c.s.clone()
	if err := fn(work); err != nil {
		return err
	}
	return st.commit(dir, c, work)
}

// Change is Update for a change of a few entries, which it makes without copying
// the sweep (the queue's changes, a cancel): fn reads s as on disk, and must not
// change it, but changes the entries edit gives it, edit(i) being a copy of
// s.Entries[i]. What it changes is written, unless it returns an error.
func (st *Store) Change(id string, fn func(s *Sweep, edit func(i int) *Entry) error) error {
	dir, err := st.Dir(id)
	if err != nil {
		return err
	}
	unlock, err := lock(dir)
	if err != nil {
		return err
	}
	defer unlock()
	st.mu.Lock()
	defer st.mu.Unlock()
	c, err := st.refresh(dir, true)
	if err != nil {
		return err
	}
	edits := map[int]*Entry{}
	var order []int
	edit := func(i int) *Entry {
		if e := edits[i]; e != nil {
			return e
		}
		e := c.s.Entries[i]
		edits[i] = &e
		order = append(order, i)
		return &e
	}
	if err := fn(c.s, edit); err != nil {
		return err
	}
	rec := record{Seq: c.seq + 1}
	for _, i := range order {
		if !entryEqual(edits[i], &c.s.Entries[i]) {
			rec.Entries = append(rec.Entries, *edits[i])
		}
	}
	return st.write(dir, c, &rec, func() *Sweep {
		w := c.s.clone()
		for _, i := range order {
			w.Entries[i] = *edits[i]
		}
		return w
	})
}

// checkDir refuses a sweep directory that is a symbolic link (or no directory):
// its files are opened through it, and none is followed.
func checkDir(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrNoSweep, filepath.Base(dir))
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (%s): refused", dir, fi.Mode().Type())
	}
	return nil
}

// lock takes the sweep's flock. Writers hold it for a read and a write, never across
// a launch, so waiting on it is short.
func lock(dir string) (func(), error) {
	if err := checkDir(dir); errors.Is(err, ErrNoSweep) {
		return nil, err
	} else if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", filepath.Base(dir), err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoSweep, filepath.Base(dir))
	}
	if err != nil {
		return nil, fmt.Errorf("lock sweep: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock sweep: %w", err)
	}
	return func() { f.Close() }, nil
}

// All reads every sweep, newest first. Sweeps that cannot be read are skipped: a
// sweep being created or deleted.
func (st *Store) All() ([]*Sweep, error) {
	var out []*Sweep
	err := st.each(func(s *Sweep) bool {
		out = append(out, s.clone())
		return true
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out, err
}

// each calls fn with every sweep that can be read (not a copy: fn must not change or
// keep it), until fn returns false. It forgets the sweeps no longer on disk.
func (st *Store) each(fn func(*Sweep) bool) error {
	ents, err := os.ReadDir(st.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list sweeps: %w", err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	seen := make(map[string]bool, len(ents))
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), IDPrefix) {
			continue
		}
		seen[e.Name()] = true
		c, err := st.refresh(filepath.Join(st.dir, e.Name()), false)
		if err != nil {
			continue
		}
		if !fn(c.s) {
			return nil
		}
	}
	for id := range st.cache {
		if !seen[id] {
			delete(st.cache, id)
		}
	}
	return nil
}

// Find returns the sweep that holds the app of handle h, and whether one does.
func (st *Store) Find(h string) (*Sweep, bool) {
	var found *Sweep
	_ = st.each(func(s *Sweep) bool {
		if s.Entry(h) != nil {
			found = s.clone()
		}
		return found == nil
	})
	return found, found != nil
}

// Remove deletes sweep id's directory (its apps are deleted by their schedulers).
func (st *Store) Remove(id string) error {
	dir, err := st.Dir(id)
	if err != nil {
		return err
	}
	st.mu.Lock()
	delete(st.cache, id)
	st.mu.Unlock()
	return os.RemoveAll(dir)
}
