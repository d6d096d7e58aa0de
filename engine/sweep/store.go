package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Files of a sweep's directory.
const (
	sweepFile    = "sweep.json"
	plansFile    = "plans.json"
	lockFile     = "lock"
	QueueLog     = "queue.log"
	storeVersion = 1
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
	Version   int       `json:"version"`
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
	for i := range s.Entries {
		if s.Entries[i].Handle == h {
			return &s.Entries[i]
		}
	}
	return nil
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

// Store is the sweeps of one WICK_HOME.
type Store struct{ dir string }

// NewStore returns the sweeps kept under stateDir.
func NewStore(stateDir string) *Store { return &Store{dir: filepath.Join(stateDir, "sweeps")} }

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
	s.Version = storeVersion
	if err := writeJSON(dir, plansFile, plans); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	if err := writeJSON(dir, sweepFile, s); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

func writeJSON(dir, name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := safefs.WriteFileAtomic(dir, name, append(data, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// Load reads sweep id.
func (st *Store) Load(id string) (*Sweep, error) {
	dir, err := st.Dir(id)
	if err != nil {
		return nil, err
	}
	return loadDir(dir)
}

func loadDir(dir string) (*Sweep, error) {
	data, err := safefs.ReadFile(filepath.Join(dir, sweepFile), maxSweepFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoSweep, filepath.Base(dir))
	}
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", filepath.Base(dir), err)
	}
	var s Sweep
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("sweep %s: corrupt %s: %w", filepath.Base(dir), sweepFile, err)
	}
	return &s, nil
}

// Plans reads the plans of sweep id, in entry index order.
func (st *Store) Plans(id string) ([]Plan, error) {
	dir, err := st.Dir(id)
	if err != nil {
		return nil, err
	}
	data, err := safefs.ReadFile(filepath.Join(dir, plansFile), maxSweepFile*4)
	if err != nil {
		return nil, fmt.Errorf("sweep %s: plans: %w", id, err)
	}
	var plans []Plan
	if err := json.Unmarshal(data, &plans); err != nil {
		return nil, fmt.Errorf("sweep %s: corrupt %s: %w", id, plansFile, err)
	}
	return plans, nil
}

// Update changes sweep id under its lock: fn gets the sweep as on disk, and what it
// leaves is written back (unless it returns an error). Every writer (the queue,
// cancel, delete, another terminal) goes through Update, so none loses another's
// change.
func (st *Store) Update(id string, fn func(*Sweep) error) (*Sweep, error) {
	dir, err := st.Dir(id)
	if err != nil {
		return nil, err
	}
	unlock, err := lock(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	s, err := loadDir(dir)
	if err != nil {
		return nil, err
	}
	if err := fn(s); err != nil {
		return s, err
	}
	return s, writeJSON(dir, sweepFile, s)
}

// lock takes the sweep's flock. Writers hold it for a read and a write, never across
// a launch, so waiting on it is short.
func lock(dir string) (func(), error) {
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
	ents, err := os.ReadDir(st.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list sweeps: %w", err)
	}
	var out []*Sweep
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), IDPrefix) {
			continue
		}
		s, err := loadDir(filepath.Join(st.dir, e.Name()))
		if err != nil {
			continue
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out, nil
}

// Find returns the sweep that holds the app of handle h, and whether one does.
func (st *Store) Find(h string) (*Sweep, bool) {
	all, _ := st.All()
	for _, s := range all {
		if s.Entry(h) != nil {
			return s, true
		}
	}
	return nil, false
}

// Remove deletes sweep id's directory (its apps are deleted by their schedulers).
func (st *Store) Remove(id string) error {
	dir, err := st.Dir(id)
	if err != nil {
		return err
	}
	return os.RemoveAll(dir)
}
