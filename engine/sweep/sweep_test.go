package sweep

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

func TestParseParamsAndGrid(t *testing.T) {
	ps, err := ParseParams([]string{"lr=0.1,0.01", "--bs=32,64,128"})
	if err != nil {
		t.Fatal(err)
	}
	if ps[1].Name != "bs" {
		t.Errorf("a leading -- is dropped: got %q", ps[1].Name)
	}
	g := Grid(ps)
	want := [][]string{{"0.1", "32"}, {"0.1", "64"}, {"0.1", "128"}, {"0.01", "32"}, {"0.01", "64"}, {"0.01", "128"}}
	if fmt.Sprint(g) != fmt.Sprint(want) {
		t.Errorf("grid = %v, want %v", g, want)
	}
	if got := AppName("trainer", ps, g[1]); got != "trainer-lr0.1-bs64" {
		t.Errorf("app name = %q", got)
	}
}

func TestParseParamsRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		specs []string
		want  string
	}{
		{[]string{"lr"}, "want NAME=V1,V2"},
		{[]string{"lr="}, "empty value"},
		{[]string{"lr=1,,2"}, "empty value"},
		{[]string{"=1,2"}, "want NAME=V1,V2"},
		{[]string{"lr=1,1"}, "given twice"},
		{[]string{"lr=1", "lr=2"}, "swept twice"},
		{[]string{"a b=1"}, "not a parameter name"},
		{[]string{"a=" + values(101), "b=" + values(100)}, "more than 10000 apps"},
	} {
		_, err := ParseParams(tc.specs)
		if err == nil || !errors.Is(err, ErrBadSweep) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: err = %v, want one line with %q", tc.specs, err, tc.want)
		}
	}
}

func values(n int) string {
	vs := make([]string, n)
	for i := range vs {
		vs[i] = fmt.Sprint(i)
	}
	return strings.Join(vs, ",")
}

func TestDevicesNeverShared(t *testing.T) {
	d := NewDevices([]string{"0", "1", "2"})
	a, ok := d.Take(2)
	if !ok || fmt.Sprint(a) != "[0 1]" {
		t.Fatalf("take 2 = %v %v", a, ok)
	}
	if _, ok := d.Take(2); ok {
		t.Fatal("took 2 of 1 free device")
	}
	b, _ := d.Take(1)
	if fmt.Sprint(b) != "[2]" {
		t.Fatalf("take 1 = %v", b)
	}
	d.Free(a)
	c, _ := d.Take(2)
	if fmt.Sprint(c) != "[0 1]" {
		t.Fatalf("after free: %v", c)
	}
}

func TestMoveReordersTheQueue(t *testing.T) {
	s := &Sweep{ID: "sweep-x"}
	for i, st := range []EntryState{Launched, Queued, Queued, Queued} {
		s.Entries = append(s.Entries, Entry{Index: i, Handle: fmt.Sprint("h", i), State: st})
	}
	if err := s.Move("h3", 1); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, e := range s.Entries {
		order = append(order, e.Handle)
	}
	if fmt.Sprint(order) != "[h0 h3 h1 h2]" {
		t.Errorf("order = %v", order)
	}
	if err := s.Move("h0", 1); err == nil {
		t.Error("moved an app that is not queued")
	}
}

// fakeLauncher launches nothing: it records each launch (with its devices) and ends
// an app when the test says so.
type fakeLauncher struct {
	mu       sync.Mutex
	launched []string
	cuda     map[string]string
	running  int
	maxRun   int
	ends     map[string]chan spec.AppState
	failApp  string
	// waitErrs is how many waits for an app fail before one works; waits counts them.
	waitErrs map[string]int
	waits    map[string]int
	// refuse, if set, may refuse a launch (running: the apps running then).
	refuse func(id string, running int) error
	// describeErr fails every Describe.
	describeErr error
}

type fakeSched struct {
	sched.Scheduler
	f *fakeLauncher
}

// Describe fails with the launcher's describeErr, else says the app runs.
func (s fakeSched) Describe(context.Context, string) (*sched.Description, error) {
	if s.f != nil && s.f.describeErr != nil {
		return nil, s.f.describeErr
	}
	return &sched.Description{Status: spec.AppStatus{State: spec.Running}}, nil
}

func (fakeSched) RunOpts() spec.RunOpts { return nil }
func (fakeSched) DryRun(_ context.Context, sub sched.Submission) (any, error) {
	return strings.Join(sub.Devices, ","), nil
}

func (f *fakeLauncher) Scheduler(string) (sched.Scheduler, error) { return fakeSched{f: f}, nil }

func (f *fakeLauncher) Schedule(_ context.Context, info *sched.DryRunInfo, _ sched.Progress) (spec.Handle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := info.Handle()
	if h.AppID == f.failApp {
		return spec.Handle{}, errors.New("no room for it")
	}
	if f.refuse != nil {
		if err := f.refuse(h.AppID, f.running); err != nil {
			return spec.Handle{}, err
		}
	}
	f.launched = append(f.launched, h.AppID)
	f.cuda[h.AppID] = info.Request.(string)
	f.running++
	f.maxRun = max(f.maxRun, f.running)
	return h, nil
}

func (f *fakeLauncher) end(id string) {
	f.mu.Lock()
	ch := f.ends[id]
	f.mu.Unlock()
	ch <- spec.Succeeded
}

func (f *fakeLauncher) Wait(ctx context.Context, h spec.Handle, _ time.Duration) (*spec.AppStatus, error) {
	f.mu.Lock()
	ch := f.ends[h.AppID]
	if f.waits != nil {
		f.waits[h.AppID]++
		if f.waits[h.AppID] <= f.waitErrs[h.AppID] {
			f.mu.Unlock()
			return nil, errors.New("inotify_add_watch: no space left on device")
		}
	}
	f.mu.Unlock()
	select {
	case st := <-ch:
		f.mu.Lock()
		f.running--
		f.mu.Unlock()
		return &spec.AppStatus{State: st}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (f *fakeLauncher) Cancel(context.Context, spec.Handle) error { return nil }

func (f *fakeLauncher) snapshot() ([]string, map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.launched), f.cuda
}

// waitFor polls cond for a few seconds: the queue runs on its own goroutine.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.Wait(t, 20*time.Second, what, func() (bool, string) { return cond(), "" })
}

// TestQueueGivesEachAppItsOwnGPUs runs a queue over three fake devices: the app that
// needs two waits until two are free, no device is given twice, and a launch that
// fails does not stop the queue.
func TestQueueGivesEachAppItsOwnGPUs(t *testing.T) {
	store := NewStore(t.TempDir())
	s := &Sweep{ID: NewID(), Created: time.Now(), Scheduler: "fake", Names: []string{"x"}, Devices: []string{"0", "1", "2"}}
	needs := []int{1, 2, 1, 1, 1}
	var plans []Plan
	f := &fakeLauncher{cuda: map[string]string{}, ends: map[string]chan spec.AppState{}}
	for i, n := range needs {
		id := fmt.Sprintf("app%d", i)
		s.Entries = append(s.Entries, Entry{Index: i, Values: []string{fmt.Sprint(i)}, Name: id,
			Handle: "fake://wick/" + id, State: Queued, GPUs: n})
		r := spec.NewRole("r", "img", "true")
		r.Env = map[string]string{}
		plans = append(plans, Plan{Scheduler: "fake", AppID: id, Session: "wick", App: &spec.AppDef{Name: id, Roles: []spec.Role{r}}})
		f.ends[id] = make(chan spec.AppState, 1)
	}
	f.failApp = "app3"
	if _, err := store.Create(s, plans); err != nil {
		t.Fatal(err)
	}
	q := &Queue{Store: store, ID: s.ID, Launcher: f, Logf: t.Logf}
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { done <- q.Run(ctx) }()

	// app0 (1 GPU) starts; app1 needs 2 and there are 2 free: it starts too.
	waitFor(t, "app0 and app1 launched", func() bool { l, _ := f.snapshot(); return len(l) == 2 })
	_, cuda := f.snapshot()
	if cuda["app0"] != "0" || cuda["app1"] != "1,2" {
		t.Fatalf("devices: %v", cuda)
	}
	// Every device is taken: app2 waits, however long, and its row says why.
	waitFor(t, "app2's row says it waits for a GPU", func() bool {
		sw, _ := store.Load(s.ID)
		return sw.Entries[2].Wait == "waiting for 1 GPU: 0 of the pool's 3 free"
	})
	if sw, _ := store.Load(s.ID); !strings.Contains(sw.Status(&sw.Entries[2]).Msg, "queued, 0 ahead of it; waiting for 1 GPU: 0 of the pool's 3 free") {
		t.Errorf("app2's row: %q", sw.Status(&sw.Entries[2]).Msg)
	}
	f.end("app1")
	// app2 starts; app3's launch fails; app4 goes on.
	waitFor(t, "app2 and app4 launched", func() bool { l, _ := f.snapshot(); return len(l) == 4 })
	launched, cuda := f.snapshot()
	if fmt.Sprint(launched) != "[app0 app1 app2 app4]" {
		t.Errorf("launched %v", launched)
	}
	if cuda["app2"] == cuda["app0"] || cuda["app4"] == cuda["app0"] || cuda["app4"] == cuda["app2"] {
		t.Errorf("a device is shared: %v", cuda)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, _ := store.Load(s.ID)
	if e := got.Entry("fake://wick/app3"); e.State != NotLaunched || !strings.Contains(e.Error, "no room for it") {
		t.Errorf("app3: %+v", e)
	}
	st := got.Status(got.Entry("fake://wick/app3"))
	if st.State != spec.Failed || !strings.Contains(st.Msg, "launch failed: no room for it") {
		t.Errorf("app3's row: %s %q", st.State, st.Msg)
	}
}

// TestQueueRespectsMaxParallel: without devices, at most MaxParallel apps run.
func TestQueueRespectsMaxParallel(t *testing.T) {
	store := NewStore(t.TempDir())
	s := &Sweep{ID: NewID(), Created: time.Now(), Scheduler: "fake", Names: []string{"x"}, MaxParallel: 2}
	f := &fakeLauncher{cuda: map[string]string{}, ends: map[string]chan spec.AppState{}}
	var plans []Plan
	for i := range 6 {
		id := fmt.Sprintf("app%d", i)
		s.Entries = append(s.Entries, Entry{Index: i, Values: []string{fmt.Sprint(i)}, Handle: "fake://wick/" + id, State: Queued})
		r := spec.NewRole("r", "img", "true")
		r.Env = map[string]string{}
		plans = append(plans, Plan{Scheduler: "fake", AppID: id, Session: "wick", App: &spec.AppDef{Name: id, Roles: []spec.Role{r}}})
		f.ends[id] = make(chan spec.AppState, 1)
	}
	if _, err := store.Create(s, plans); err != nil {
		t.Fatal(err)
	}
	q := &Queue{Store: store, ID: s.ID, Launcher: f}
	done := make(chan error, 1)
	go func() { done <- q.Run(context.Background()) }()
	for i := range 6 {
		waitFor(t, fmt.Sprintf("app%d launched", i), func() bool { l, _ := f.snapshot(); return len(l) > i })
		if i >= 1 {
			f.end(fmt.Sprintf("app%d", i-1))
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	maxRun := f.maxRun
	f.mu.Unlock()
	if maxRun > 2 {
		t.Errorf("%d apps ran at once; --max-parallel 2", maxRun)
	}
	if _, cuda := f.snapshot(); cuda["app0"] != "" {
		t.Errorf("CUDA_VISIBLE_DEVICES set without GPUs: %q", cuda["app0"])
	}
}

// TestParseParamRanges: a range of numbers in a value list is every number of it,
// with the decimals its start and step have; a bad range is a one-line error naming
// it; a value that only looks like one (a path) is itself.
func TestParseParamRanges(t *testing.T) {
	for in, want := range map[string]string{
		"n=1..4":                 "1 2 3 4",
		"n=0,2..6:2,9":           "0 2 4 6 9",
		"lr=0.1..0.5:0.1":        "0.1 0.2 0.3 0.4 0.5",
		"lr=0.001..0.0031:0.001": "0.001 0.002 0.003",
		"x=-2..1":                "-2 -1 0 1",
		"d=../data,..":           "../data ..",
		"v=1.0..2":               "",
	} {
		p, err := ParseParam(in)
		if want == "" {
			if !errors.Is(err, ErrBadSweep) || !strings.Contains(err.Error(), "needs a step") {
				t.Errorf("%s: %v, want a step asked for", in, err)
			}
			continue
		}
		if err != nil || strings.Join(p.Values, " ") != want {
			t.Errorf("%s: %q %v, want %s", in, p.Values, err, want)
		}
	}
	for _, in := range []string{"n=4..1", "n=1..3:0", "n=1..3,2", "n=0..20000"} {
		if _, err := ParseParam(in); !errors.Is(err, ErrBadSweep) {
			t.Errorf("%s: %v, want refused", in, err)
		}
	}
}
