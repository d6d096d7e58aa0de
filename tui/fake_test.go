package tui_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// fakeSched is an in-memory scheduler for screens that must not depend on processes
// or the wall clock: apps "run" the moment they are scheduled and end as end says.
// It sits behind a real runner.Runner, so the runner's dry run (env injection, run
// option resolution) is the real one.
type fakeSched struct {
	name string
	now  func() time.Time

	mu   sync.Mutex
	apps map[string]*fakeApp
	// end is the state a scheduled app is in at once; Running by default.
	end spec.AppState
	// fail, when set, makes Schedule fail after its progress steps.
	fail error
}

type fakeApp struct {
	desc  sched.Description
	lines []sched.Line
}

// fakeRequest is what the fake scheduler "submits": one entry per replica.
type fakeRequest struct {
	Replicas []fakeReplica `json:"replicas"`
}

type fakeReplica struct {
	Name string            `json:"name"`
	Argv []string          `json:"argv"`
	Env  map[string]string `json:"env"`
}

func (s *fakeSched) Name() string { return s.name }

func (s *fakeSched) RunOpts() spec.RunOpts {
	return spec.RunOpts{
		{Name: "log_dir", Type: spec.OptString, Help: "directory for the logs"},
		{Name: "retries", Type: spec.OptInt, Default: 0, Help: "how many times to retry"},
		{Name: "verbose", Type: spec.OptBool, Default: false, Help: "say more"},
	}
}

func (s *fakeSched) DryRun(_ context.Context, sub sched.Submission) (any, error) {
	var req fakeRequest
	for _, r := range sub.App.Roles {
		for k := range r.NumReplicas {
			m := spec.Macros{AppID: sub.AppID, ReplicaID: fmt.Sprint(k)}
			rr := m.Apply(r)
			req.Replicas = append(req.Replicas, fakeReplica{
				Name: fmt.Sprintf("%s/%d", r.Name, k),
				Argv: append([]string{rr.Entrypoint}, rr.Args...),
				Env:  rr.Env,
			})
		}
	}
	return req, nil
}

func (s *fakeSched) Schedule(_ context.Context, info *sched.DryRunInfo, progress sched.Progress) error {
	progress.Report("building image for %s", info.App.Name)
	progress.Report("starting %d replicas", len(info.Request.(fakeRequest).Replicas))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	now := s.now()
	st := spec.AppStatus{AppID: info.AppID, Name: info.App.Name, State: s.end, Created: now}
	var lines []sched.Line
	for _, r := range info.App.Roles {
		rs := spec.RoleStatus{Role: r.Name}
		for k := range r.NumReplicas {
			rep := spec.ReplicaStatus{ID: k, Role: r.Name, State: s.end, PID: 4242 + k, Started: now}
			if s.end.Terminal() {
				rep.ExitCode = spec.IntPtr(0)
				rep.Ended = now.Add(1500 * time.Millisecond)
				st.Ended = rep.Ended
			}
			rs.Replicas = append(rs.Replicas, rep)
			lines = append(lines, sched.Line{Time: now, Stream: sched.Stdout, Role: r.Name, Replica: k, Text: strings.Join(r.Args, " ")})
		}
		st.Roles = append(st.Roles, rs)
	}
	s.apps[info.AppID] = &fakeApp{desc: sched.Description{Status: st, App: info.App.Clone(), Cfg: info.Cfg}, lines: lines}
	return nil
}

// remove drops an app behind the UI's back (as another terminal's wick delete would).
func (s *fakeSched) remove(appID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.apps, appID)
}

// add puts an app straight into the scheduler, for list screens.
func (s *fakeSched) add(st spec.AppStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apps[st.AppID] = &fakeApp{desc: sched.Description{Status: st}}
}

func (s *fakeSched) Describe(_ context.Context, appID string) (*sched.Description, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.apps[appID]
	if !ok {
		return nil, fmt.Errorf("%w: %s", sched.ErrNotFound, appID)
	}
	d := a.desc
	return &d, nil
}

func (s *fakeSched) List(context.Context) ([]spec.AppStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []spec.AppStatus
	for _, a := range s.apps {
		out = append(out, a.desc.Status)
	}
	return out, nil
}

func (s *fakeSched) Cancel(_ context.Context, appID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.apps[appID]
	if !ok {
		return fmt.Errorf("%w: %s", sched.ErrNotFound, appID)
	}
	if !a.desc.Status.State.Terminal() {
		a.desc.Status.State = spec.Cancelled
		a.desc.Status.Ended = s.now()
	}
	return nil
}

func (s *fakeSched) Delete(_ context.Context, appID string, force bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.apps[appID]
	if !ok {
		return fmt.Errorf("%w: %s", sched.ErrNotFound, appID)
	}
	if !a.desc.Status.State.Terminal() && !force {
		return sched.ErrRunning
	}
	delete(s.apps, appID)
	return nil
}

func (s *fakeSched) Logs(_ context.Context, appID, role string, k int, opts sched.LogOptions) (sched.LogIterator, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.apps[appID]
	if !ok {
		return nil, fmt.Errorf("%w: %s", sched.ErrNotFound, appID)
	}
	var lines []sched.Line
	for _, l := range a.lines {
		if l.Role == role && l.Replica == k {
			lines = append(lines, l)
		}
	}
	return &sliceIter{lines: lines, follow: opts.Follow && !a.desc.Status.State.Terminal()}, nil
}

func (s *fakeSched) Close() error { return nil }

// sliceIter yields lines; when following a running app it then blocks until ctx is
// done, as a real follow does.
type sliceIter struct {
	lines  []sched.Line
	follow bool
}

func (it *sliceIter) Next(ctx context.Context) (sched.Line, error) {
	if len(it.lines) == 0 {
		if it.follow {
			<-ctx.Done()
			return sched.Line{}, ctx.Err()
		}
		return sched.Line{}, io.EOF
	}
	l := it.lines[0]
	it.lines = it.lines[1:]
	return l, nil
}

func (it *sliceIter) Close() error { return nil }

// fakeRunner returns a real runner over one fake scheduler named "test".
func fakeRunner(now func() time.Time, end spec.AppState) (*runner.Runner, *fakeSched) {
	fs := &fakeSched{name: "test", now: now, apps: map[string]*fakeApp{}, end: end}
	reg := &sched.Registry{}
	reg.Register("test", func(sched.Config) (sched.Scheduler, error) { return fs, nil })
	return runner.New(reg, sched.Config{Session: "wick"}), fs
}
