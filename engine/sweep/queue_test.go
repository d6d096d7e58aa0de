package sweep

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/wick-dev/wick/engine/spec"
)

// newFakeSweep makes a sweep of n apps on the fake launcher, stored.
func newFakeSweep(t *testing.T, n, maxParallel int) (*Store, *Sweep, *fakeLauncher) {
	t.Helper()
	store := NewStore(t.TempDir())
	s := &Sweep{ID: NewID(), Scheduler: "fake", Names: []string{"x"}, MaxParallel: maxParallel}
	f := &fakeLauncher{cuda: map[string]string{}, ends: map[string]chan spec.AppState{}, waits: map[string]int{}, waitErrs: map[string]int{}}
	var plans []Plan
	for i := range n {
		id := fmt.Sprintf("app%d", i)
		s.Entries = append(s.Entries, Entry{Index: i, Values: []string{fmt.Sprint(i)}, Name: id, Handle: "fake://wick/" + id, State: Queued})
		plans = append(plans, Plan{Scheduler: "fake", AppID: id, Session: "wick", App: &spec.AppDef{Name: id, Roles: []spec.Role{spec.NewRole("r", "img", "true")}}})
		f.ends[id] = make(chan spec.AppState, 1)
	}
	if _, err := store.Create(s, plans); err != nil {
		t.Fatal(err)
	}
	return store, s, f
}

func runQueue(t *testing.T, store *Store, id string, f *fakeLauncher) chan error {
	t.Helper()
	q := &Queue{Store: store, ID: id, Launcher: f, Logf: t.Logf}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- q.Run(ctx) }()
	return done
}

// TestQueueRetriesAFailedWait: a wait for an app's end that fails (an inotify limit,
// the Engine restarting) is not its end: with --max-parallel 1, the next app starts
// only once the first has really ended.
func TestQueueRetriesAFailedWait(t *testing.T) {
	store, s, f := newFakeSweep(t, 2, 1)
	f.waitErrs["app0"] = 2
	done := runQueue(t, store, s.ID, f)
	waitFor(t, "three waits for app0 (two failed)", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.waits["app0"] >= 3
	})
	if l, _ := f.snapshot(); fmt.Sprint(l) != "[app0]" {
		t.Fatalf("launched %v while app0 ran: a failed wait freed its slot", l)
	}
	f.end("app0")
	waitFor(t, "app1 launched", func() bool { l, _ := f.snapshot(); return len(l) == 2 })
	f.end("app1")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// slurmQOSRefusal is what sbatch prints past a QOS's MaxSubmitJobsPerUser: the reason
// (job_state_reason_string, src/common/slurm_protocol_defs.c) and then
// ESLURM_ACCOUNTING_POLICY's message (src/common/slurm_errno.c), as the slurm
// scheduler passes them on (without "sbatch: error: ").
const slurmQOSRefusal = "slurm: sbatch refused the job: QOSMaxSubmitJobPerUserLimit Batch job submission failed: Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"

// TestQueueKeepsAppsRefusedForALimit: past a submit limit of 2 jobs, or with a full
// disk, a refused app stays queued (the list says why) and is launched once a slot
// frees; no app is lost as launch_failed.
func TestQueueKeepsAppsRefusedForALimit(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		why  string
	}{
		{"slurm qos", errors.New(slurmQOSRefusal), "QOSMaxSubmitJobPerUserLimit"},
		{"slurm assoc", errors.New("slurm: sbatch refused the job: AssocMaxSubmitJobLimit Batch job submission failed: Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"), "AssocMaxSubmitJobLimit"},
		{"full disk", fmt.Errorf("local_cwd: write the app's state: %w", syscall.ENOSPC), "no space left on device"},
	} {
		t.Run(c.name, func(t *testing.T) {
			store, s, f := newFakeSweep(t, 5, 0)
			f.refuse = func(_ string, running int) error {
				if running >= 2 {
					return c.err
				}
				return nil
			}
			done := runQueue(t, store, s.ID, f)
			waitFor(t, "two launched, the third refused", func() bool {
				sw, _ := store.Load(s.ID)
				return sw.Entries[2].Wait != ""
			})
			sw, _ := store.Load(s.ID)
			e := sw.Entries[2]
			if e.State != Queued || !strings.Contains(e.Wait, c.why) {
				t.Errorf("refused app: %s %q", e.State, e.Wait)
			}
			if st := sw.Status(&sw.Entries[2]); st.State != spec.Queued || !strings.Contains(st.Msg, c.why) {
				t.Errorf("its row: %s %q", st.State, st.Msg)
			}
			for i := range 5 {
				waitFor(t, fmt.Sprintf("app%d launched", i), func() bool { l, _ := f.snapshot(); return len(l) > i })
				f.end(fmt.Sprintf("app%d", i))
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			sw, _ = store.Load(s.ID)
			for _, e := range sw.Entries {
				if e.State != Launched || e.Wait != "" {
					t.Errorf("%s: %s %q %q", e.Name, e.State, e.Error, e.Wait)
				}
			}
		})
	}
}

func TestLimitRefusal(t *testing.T) {
	for _, c := range []struct {
		err   error
		limit bool
	}{
		{errors.New(slurmQOSRefusal), true},
		{errors.New("sbatch: error: QOSGrpSubmitJobsLimit"), true},
		{fmt.Errorf("x: %w", syscall.EDQUOT), true},
		{errors.New("open /home/u/.local/state/wick/local/apps/a/state.json: no space left on device"), true},
		{errors.New("sbatch: error: invalid partition specified: gpu"), false},
		{errors.New("QOSMaxWallDurationPerJobLimit"), false}, // the job itself: never fits
		{nil, false},
	} {
		if _, got := LimitRefusal(c.err); got != c.limit {
			t.Errorf("%v: limit %v, want %v", c.err, got, c.limit)
		}
	}
}

// TestQueueRestartCountsAnAppItCannotDescribe: at a queue's restart, an app launched
// before whose describe fails (the Engine restarting) still holds its slot.
func TestQueueRestartCountsAnAppItCannotDescribe(t *testing.T) {
	store, s, f := newFakeSweep(t, 2, 1)
	err := store.Update(s.ID, func(s *Sweep) error {
		s.Entries[0].State, s.Entries[0].Launched = Launched, s.Created.Add(1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f.describeErr = errors.New("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?")
	f.waitErrs["app0"] = 1
	done := runQueue(t, store, s.ID, f)
	waitFor(t, "app0 waited for twice", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.waits["app0"] >= 2
	})
	if l, _ := f.snapshot(); len(l) != 0 {
		t.Fatalf("launched %v beside an app it could not describe (max-parallel 1)", l)
	}
	f.end("app0")
	waitFor(t, "app1 launched", func() bool { l, _ := f.snapshot(); return len(l) == 1 })
	f.end("app1")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
