// Package runner is the one door to the engine: it turns AppDefs (or components and
// their arguments) into dry runs and launched apps on a named scheduler, and observes,
// waits for, cancels, deletes and lists apps by handle. The UI and the one-shot verbs
// both go through it.
package runner

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/wick-dev/wick/engine/alerts"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
)

// Env vars the runner injects into every role, as TorchX does.
const (
	EnvJobID       = "TORCHX_JOB_ID"
	EnvSessionID   = "TORCHX_INTERNAL_SESSION_ID"
	EnvParentRunID = "TORCHX_PARENT_RUN_ID"
)

// Runner launches and observes apps through the registered schedulers. Schedulers are
// created lazily, one per name. A Runner is safe for concurrent use.
type Runner struct {
	reg *sched.Registry
	cfg sched.Config
	// sessionID is TorchX's session id, made on first use: a random one costs a
	// read of the kernel's random source, which the verbs that launch nothing skip.
	sessionID func() string

	mu     sync.Mutex
	scheds map[string]sched.Scheduler
	// roleEnv, when set, gives env that every role of a new app gets (TorchX's
	// tracker variables, from .torchxconfig): see SetRoleEnv.
	roleEnv func() map[string]string
	// appMeta, when set, is AppDef metadata every new app gets (`wick run
	// --hang-after`'s spec.MetaHangAfter): see SetAppMetadata.
	appMeta map[string]string
	// sweeps holds the sweeps of StateDir: their queued apps are listed, described,
	// waited for and cancelled here as every other app is.
	sweeps *sweep.Store
}

// New returns a runner over the schedulers of reg. cfg.Session defaults to
// spec.DefaultSession.
func New(reg *sched.Registry, cfg sched.Config) *Runner {
	if cfg.Session == "" {
		cfg.Session = spec.DefaultSession
	}
	r := &Runner{reg: reg, cfg: cfg, scheds: map[string]sched.Scheduler{}}
	r.sessionID = sync.OnceValue(func() string {
		if id := os.Getenv(EnvSessionID); id != "" {
			return id
		}
		return uuid4()
	})
	if cfg.StateDir != "" {
		r.sweeps = sweep.NewStore(cfg.StateDir)
	}
	return r
}

// SetRoleEnv makes DryRun put the variables f returns into every role's env, after
// the component's own, as TorchX's runner puts TORCHX_TRACKERS and
// TORCHX_TRACKER_<NAME>_CONFIG there. Call it before the runner is used.
func (r *Runner) SetRoleEnv(f func() map[string]string) { r.roleEnv = f }

// SetAppMetadata makes DryRun put the entries of meta into every app's metadata, over
// the component's own: settings that travel with the app to every scheduler and every
// face that observes it (spec.MetaHangAfter). Call it before the runner is used.
func (r *Runner) SetAppMetadata(meta map[string]string) { r.appMeta = meta }

// Session is the session name put in new handles.
func (r *Runner) Session() string { return r.cfg.Session }

// StateDir is wick's state directory, as the Runner was given it: the UI keeps its own
// small state beside the schedulers' (StateDir/ui).
func (r *Runner) StateDir() string { return r.cfg.StateDir }

// SchedulerBackends lists the scheduler names, the default first.
func (r *Runner) SchedulerBackends() []string { return r.reg.Names() }

// Scheduler returns the scheduler named name, creating it on first use.
func (r *Runner) Scheduler(name string) (sched.Scheduler, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.scheds[name]; ok {
		return s, nil
	}
	f, err := r.reg.Factory(name)
	if err != nil {
		return nil, err
	}
	s, err := f(r.cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r.scheds[name] = s
	return s, nil
}

// SchedulerRunOpts returns the run options of the scheduler named name.
func (r *Runner) SchedulerRunOpts(name string) (spec.RunOpts, error) {
	s, err := r.Scheduler(name)
	if err != nil {
		return nil, err
	}
	return s.RunOpts(), nil
}

// DryRun plans app on the scheduler named schedName without launching anything: it
// validates the app, injects TorchX's env into every role (on a copy), resolves cfg
// against the scheduler's run options and asks the scheduler for its request.
func (r *Runner) DryRun(ctx context.Context, app *spec.AppDef, schedName string, cfg spec.Cfg, workspace string) (*sched.DryRunInfo, error) {
	if err := app.Validate(); err != nil {
		return nil, err
	}
	if err := spec.ValidateName("session", r.cfg.Session); err != nil {
		return nil, err
	}
	s, err := r.Scheduler(schedName)
	if err != nil {
		return nil, err
	}
	resolved, err := s.RunOpts().Resolve(cfg)
	if err == nil {
		err = alerts.CheckCfg(resolved)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", schedName, err)
	}
	app = app.Clone()
	for k, v := range r.appMeta {
		if app.Metadata == nil {
			app.Metadata = map[string]string{}
		}
		app.Metadata[k] = v
	}
	parent := os.Getenv(EnvParentRunID)
	var extra map[string]string
	if r.roleEnv != nil {
		extra = r.roleEnv()
	}
	for i := range app.Roles {
		env := app.Roles[i].Env
		env[EnvJobID] = fmt.Sprintf("%s://%s/${%s}", schedName, r.cfg.Session, spec.MacroAppID)
		env[EnvSessionID] = r.sessionID()
		if parent != "" {
			env[EnvParentRunID] = parent
		}
		for k, v := range extra { // SetRoleEnv's: --parent_run_id wins over the env's
			env[k] = v
		}
	}
	sub := sched.Submission{
		AppID:     spec.MakeAppID(app.Name),
		Session:   r.cfg.Session,
		App:       app,
		Cfg:       resolved,
		Workspace: workspace,
	}
	req, err := s.DryRun(ctx, sub)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", schedName, err)
	}
	return &sched.DryRunInfo{Scheduler: schedName, Submission: sub, Request: req}, nil
}

// Schedule launches a planned app and returns its handle.
func (r *Runner) Schedule(ctx context.Context, info *sched.DryRunInfo, progress sched.Progress) (spec.Handle, error) {
	s, err := r.Scheduler(info.Scheduler)
	if err != nil {
		return spec.Handle{}, err
	}
	// The component call is recorded while the app is launched (its write and fsync
	// were on every launch's path after the scheduler's), and taken back if the
	// launch fails.
	h, call := info.Handle(), info.Call
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		r.recordCallAs(h, call)
	}()
	err = s.Schedule(ctx, info, progress)
	<-recorded
	if err != nil {
		r.forgetCall(h)
		return spec.Handle{}, fmt.Errorf("%s: %w", info.Scheduler, err)
	}
	if info.Handle() != h {
		// Named by the scheduler once submitted (Slurm's job id).
		r.forgetCall(h)
		r.recordCall(info)
	}
	r.startWatcher(s, info, progress)
	return info.Handle(), nil
}

// startWatcher starts the alerts' watcher (engine/alerts) of an app just launched
// that has an on_alarm, or an on_end its scheduler does not run itself. The app runs
// whatever happens to its watcher: a watcher that cannot start is said through
// progress (and r's Warn), not a failed launch.
func (r *Runner) startWatcher(s sched.Scheduler, info *sched.DryRunInfo, progress sched.Progress) {
	job, ok := alerts.JobOf(info, s)
	if !ok || r.cfg.StateDir == "" {
		return
	}
	if err := alerts.Start(r.cfg.Self, r.cfg.StateDir, os.Environ(), job); err != nil {
		msg := fmt.Sprintf("%s: on_end/on_alarm will not run: %v", info.Handle(), err)
		if r.cfg.Warn != nil {
			r.cfg.Warn(msg)
		} else if progress != nil {
			progress(msg)
		}
	}
}

// Run plans and launches app: DryRun then Schedule.
func (r *Runner) Run(ctx context.Context, app *spec.AppDef, schedName string, cfg spec.Cfg, workspace string, progress sched.Progress) (spec.Handle, error) {
	info, err := r.DryRun(ctx, app, schedName, cfg, workspace)
	if err != nil {
		return spec.Handle{}, err
	}
	return r.Schedule(ctx, info, progress)
}

// ErrNoSuchApp is wrapped when a handle names no app.
var ErrNoSuchApp = sched.ErrNotFound

func (r *Runner) schedulerOf(h spec.Handle) (sched.Scheduler, error) {
	s, err := r.Scheduler(h.Scheduler)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h, err)
	}
	return s, nil
}

func notFound(h spec.Handle, err error) error {
	if errors.Is(err, sched.ErrNotFound) {
		return fmt.Errorf("%w: %s", sched.ErrNotFound, h)
	}
	return fmt.Errorf("%s: %w", h, err)
}

// Describe returns what the app's scheduler knows of it: status, AppDef, run options.
func (r *Runner) Describe(ctx context.Context, h spec.Handle) (*sched.Description, error) {
	return r.describe(ctx, h, nil)
}

// DescribeReplicas is Describe for a caller that looks at the replicas of refs only:
// the status may hold, of each role, only theirs. A scheduler that can read them alone
// (sched.ReplicaDescriber) does, so that the cost grows with those replicas, not with
// the app's; the others describe the whole app.
func (r *Runner) DescribeReplicas(ctx context.Context, h spec.Handle, refs []sched.ReplicaRef) (*sched.Description, error) {
	return r.describe(ctx, h, refs)
}

// describe is Describe, of the replicas of refs only if refs is not nil.
func (r *Runner) describe(ctx context.Context, h spec.Handle, refs []sched.ReplicaRef) (*sched.Description, error) {
	s, err := r.schedulerOf(h)
	if err != nil {
		return nil, err
	}
	var d *sched.Description
	if rd, ok := s.(sched.ReplicaDescriber); ok && refs != nil {
		d, err = rd.DescribeReplicas(ctx, h.AppID, refs)
	} else {
		d, err = s.Describe(ctx, h.AppID)
	}
	if err != nil {
		if sd, ok := r.sweepDescription(h); ok && isNotFound(err) {
			return sd, nil // queued in its sweep
		}
		return nil, notFound(h, err)
	}
	d.Status.Sweep = sweep.RefOf(d.App)
	if err := sameSession(h, &d.Status); err != nil {
		return nil, err
	}
	d.Status.Handle = h.String()
	d.Status.Scheduler = h.Scheduler
	d.Status.AppID = h.AppID
	return d, nil
}

// ErrNoUsage is wrapped when the app's scheduler cannot tell what its replicas use.
var ErrNoUsage = errors.New("scheduler does not report resource usage")

// Usage returns the CPU and memory of each running replica of the app, and what it
// does on GPUs where there are (attachGPU). The scheduler
// keeps each process's previous sample, so a caller that refreshes gets the CPU over
// the time since its previous call; the first call gives each process's average since
// it started. It wraps ErrNoUsage for a scheduler that cannot tell (slurm).
func (r *Runner) Usage(ctx context.Context, h spec.Handle) (map[sched.ReplicaKey]sched.Usage, error) {
	s, err := r.schedulerOf(h)
	if err != nil {
		return nil, err
	}
	u, ok := s.(sched.UsageReader)
	if !ok {
		return nil, fmt.Errorf("%s: %w", h, ErrNoUsage)
	}
	m, err := u.Usage(ctx, h.AppID)
	if err != nil {
		return nil, notFound(h, err)
	}
	r.attachGPU(ctx, s, h.AppID, m)
	return m, nil
}

// AttachUsage sets the Usage of each running replica of st (an app's status, as
// Describe returned it) from the scheduler's Usage. Replicas it cannot read keep a nil
// Usage; a scheduler that cannot tell leaves st as it is and returns nil.
func (r *Runner) AttachUsage(ctx context.Context, h spec.Handle, st *spec.AppStatus) error {
	if st.State.Terminal() {
		return nil
	}
	m, err := r.Usage(ctx, h)
	if errors.Is(err, ErrNoUsage) {
		return nil
	}
	if err != nil {
		return err
	}
	for i := range st.Roles {
		for j := range st.Roles[i].Replicas {
			rep := &st.Roles[i].Replicas[j]
			if u, ok := m[sched.ReplicaKey{Role: st.Roles[i].Role, Replica: rep.ID}]; ok && rep.State == spec.Running {
				rep.Usage = &u
			}
		}
	}
	return nil
}

// sameSession refuses a handle whose session is not the app's: the app ids of two
// sessions never clash, so such a handle names no app (it must not be answered, and
// echoed back, as if it did).
func sameSession(h spec.Handle, st *spec.AppStatus) error {
	if st.Handle == "" {
		return nil // the scheduler does not say
	}
	got, err := spec.ParseHandle(st.Handle)
	if err != nil || got.Session == "" || got.Session == h.Session {
		return nil
	}
	return fmt.Errorf("%w: %s (app %s is in session %s)", sched.ErrNotFound, h, h.AppID, got.Session)
}

// Status returns the app's status.
func (r *Runner) Status(ctx context.Context, h spec.Handle) (*spec.AppStatus, error) {
	d, err := r.Describe(ctx, h)
	if err != nil {
		return nil, err
	}
	return &d.Status, nil
}

// waiter is implemented by schedulers that can wait for an app to end without
// polling (the local scheduler watches its state file).
type waiter interface {
	Wait(ctx context.Context, appID string) (*spec.AppStatus, error)
}

// Wait returns the app's status once it is terminal, or when ctx is done. It polls
// every interval unless the scheduler can wait for the end itself.
func (r *Runner) Wait(ctx context.Context, h spec.Handle, interval time.Duration) (*spec.AppStatus, error) {
	if s, err := r.schedulerOf(h); err == nil {
		if w, ok := s.(waiter); ok {
			st, err := w.Wait(ctx, h.AppID)
			if isNotFound(err) {
				// Queued in a sweep: wait for it to leave the queue.
				if qst, qerr := r.waitQueued(ctx, h, interval); qerr != nil || qst != nil {
					return qst, qerr
				}
				st, err = w.Wait(ctx, h.AppID)
			}
			if err != nil {
				return st, notFound(h, err)
			}
			st.Handle, st.Scheduler, st.AppID = h.String(), h.Scheduler, h.AppID
			return st, nil
		}
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		st, err := r.Status(ctx, h)
		if err != nil {
			return nil, err
		}
		if st.State.Terminal() {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-t.C:
		}
	}
}

// Cancel asks the app to stop; it does not wait. Cancelling a terminal app does nothing.
func (r *Runner) Cancel(ctx context.Context, h spec.Handle) error {
	s, err := r.schedulerOf(h)
	if err != nil {
		return err
	}
	if _, err := r.Describe(ctx, h); err != nil && errors.Is(err, sched.ErrNotFound) {
		return err
	}
	if _, err := s.Describe(ctx, h.AppID); isNotFound(err) {
		if handled, err := r.cancelQueued(ctx, h, false); handled || err != nil {
			return err // out of its sweep's queue
		}
	}
	if err := s.Cancel(ctx, h.AppID); err != nil {
		return notFound(h, err)
	}
	return nil
}

// Delete removes the app's state, logs and containers. A running app is refused unless
// force, which cancels it first.
func (r *Runner) Delete(ctx context.Context, h spec.Handle, force bool) error {
	s, err := r.schedulerOf(h)
	if err != nil {
		return err
	}
	if _, err := r.Describe(ctx, h); err != nil && errors.Is(err, sched.ErrNotFound) {
		return err
	}
	if _, err := s.Describe(ctx, h.AppID); isNotFound(err) {
		if handled, err := r.deleteQueued(ctx, h, force); handled || err != nil {
			return err
		}
	}
	if err := s.Delete(ctx, h.AppID, force); err != nil {
		return notFound(h, err)
	}
	r.forgetCall(h)
	if r.cfg.StateDir != "" {
		// The alerts' watcher of the app, if it had one, has ended or ends on its
		// next look (the app is gone); its directory goes with the app.
		_ = os.RemoveAll(alerts.Dir(r.cfg.StateDir, h))
	}
	return nil
}

// ListError is a scheduler that could not be listed; the others still are.
type ListError struct {
	Scheduler string
	Err       error
}

func (e *ListError) Error() string { return e.Scheduler + ": " + e.Err.Error() }
func (e *ListError) Unwrap() error { return e.Err }

// List returns the apps of the scheduler named schedName, or of every scheduler when it
// is "", newest first, with handles filled in. A scheduler that cannot be listed (a
// Docker Engine that is down) is reported in the errors while the others are listed,
// with what it listed nonetheless (a Slurm controller that is down: the last known
// states of wick's jobs).
func (r *Runner) List(ctx context.Context, schedName string) ([]spec.AppStatus, []error) {
	return r.list(ctx, schedName, false)
}

// ListAllHomes is List with the apps other WICK_HOMEs launched where a scheduler
// lists only this home's by default (sched.AllHomesLister: local_docker), marked
// Foreign.
func (r *Runner) ListAllHomes(ctx context.Context, schedName string) ([]spec.AppStatus, []error) {
	return r.list(ctx, schedName, true)
}

func (r *Runner) list(ctx context.Context, schedName string, allHomes bool) ([]spec.AppStatus, []error) {
	names := r.reg.Names()
	if schedName != "" {
		names = []string{schedName}
	}
	type result struct {
		apps []spec.AppStatus
		err  error
	}
	results := make([]result, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			s, err := r.Scheduler(name)
			if err != nil {
				results[i].err = err
				return
			}
			list := s.List
			if l, ok := s.(sched.AllHomesLister); ok && allHomes {
				list = l.ListAllHomes
			}
			apps, err := list(ctx)
			if err != nil {
				// What it could list still is (a Slurm controller that is down:
				// the last known states, marked).
				results[i].err = &ListError{Scheduler: name, Err: err}
			}
			for j := range apps {
				a := &apps[j]
				a.Scheduler = name
				session := r.cfg.Session
				if a.Handle != "" {
					if h, err := spec.ParseHandle(a.Handle); err == nil {
						session = h.Session
					}
				}
				a.Handle = spec.Handle{Scheduler: name, Session: session, AppID: a.AppID}.String()
			}
			results[i].apps = apps
		})
	}
	wg.Wait()
	var all []spec.AppStatus
	var errs []error
	for _, res := range results {
		all = append(all, res.apps...)
		if res.err != nil {
			errs = append(errs, res.err)
		}
	}
	all = r.withSweeps(all, schedName)
	sortNewestFirst(all)
	return all, errs
}

// LogLines returns the lines of replica k of role in the app.
func (r *Runner) LogLines(ctx context.Context, h spec.Handle, role string, k int, opts sched.LogOptions) (sched.LogIterator, error) {
	s, err := r.schedulerOf(h)
	if err != nil {
		return nil, err
	}
	it, err := s.Logs(ctx, h.AppID, role, k, opts)
	if err != nil {
		return nil, r.logsNotFound(h, err)
	}
	return it, nil
}

// LogLinesOf returns the iterators of many replicas of the app, in the order of refs:
// at once when the scheduler can (sched.MultiLogger), else one by one. On error none is
// left open.
func (r *Runner) LogLinesOf(ctx context.Context, h spec.Handle, refs []sched.ReplicaRef, opts sched.LogOptions) ([]sched.LogIterator, error) {
	s, err := r.schedulerOf(h)
	if err != nil {
		return nil, err
	}
	if ml, ok := s.(sched.MultiLogger); ok {
		its, err := ml.LogsOf(ctx, h.AppID, refs, opts)
		if err != nil {
			return nil, r.logsNotFound(h, err)
		}
		return its, nil
	}
	its := make([]sched.LogIterator, 0, len(refs))
	for _, ref := range refs {
		it, err := r.LogLines(ctx, h, ref.Role, ref.Replica, opts)
		if err != nil {
			for _, it := range its {
				it.Close()
			}
			return nil, err
		}
		its = append(its, it)
	}
	return its, nil
}

// ErrNoRawLog is returned by RawLog when the scheduler's logs are not plain files, or
// not this replica's (sched.ErrNoRawLog).
var ErrNoRawLog = sched.ErrNoRawLog

// RawLog opens one stream of a replica's log as stored, when the scheduler keeps logs
// in files (sched.RawLogReader); otherwise it returns ErrNoRawLog.
func (r *Runner) RawLog(ctx context.Context, h spec.Handle, role string, k int, stream sched.Stream) (io.ReadCloser, error) {
	s, err := r.schedulerOf(h)
	if err != nil {
		return nil, err
	}
	raw, ok := s.(sched.RawLogReader)
	if !ok {
		return nil, ErrNoRawLog
	}
	rc, err := raw.RawLog(ctx, h.AppID, role, k, stream)
	if err != nil {
		return nil, r.logsNotFound(h, err)
	}
	return rc, nil
}

// Close closes every scheduler the runner created. Running apps keep running.
func (r *Runner) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, s := range r.scheds {
		errs = append(errs, s.Close())
	}
	r.scheds = map[string]sched.Scheduler{}
	return errors.Join(errs...)
}

func uuid4() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// Exec prepares req to run in the place of the replica ROLE/k of the app h (see
// sched.Execer): the command runs when the returned Command's Run is called, bound by
// ctx. It wraps sched.ErrNoExec for a scheduler that cannot.
func (r *Runner) Exec(ctx context.Context, h spec.Handle, role string, k int, req sched.ExecRequest) (sched.Command, error) {
	s, err := r.schedulerOf(h)
	if err != nil {
		return nil, err
	}
	e, ok := s.(sched.Execer)
	if !ok {
		return nil, fmt.Errorf("%s: %w (%s)", h, sched.ErrNoExec, h.Scheduler)
	}
	if _, err := r.Describe(ctx, h); err != nil {
		return nil, err // no such app, as every verb says it
	}
	c, err := e.Exec(ctx, h.AppID, role, k, req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h, err) // no such role or replica: named
	}
	return c, nil
}

// RunSelf runs wick itself (args: one of its hidden verbs) in the place of replica k
// of role, for a scheduler whose replicas run elsewhere (sched.SelfRunner), and
// returns its stdout. It fails wrapping sched.ErrNoSelf where wick cannot run there.
// The app is not described first: the caller has its status.
func (r *Runner) RunSelf(ctx context.Context, h spec.Handle, role string, k int, args []string) ([]byte, error) {
	s, err := r.schedulerOf(h)
	if err != nil {
		return nil, err
	}
	sr, ok := s.(sched.SelfRunner)
	if !ok {
		return nil, fmt.Errorf("%s: %w (%s)", h, sched.ErrNoSelf, h.Scheduler)
	}
	out, err := sr.RunSelf(ctx, h.AppID, role, k, args)
	if err != nil {
		return nil, fmt.Errorf("%s/%s/%d: %w", h, role, k, err)
	}
	return out, nil
}

// HostPIDs returns the host pid of each running replica's first process, for a
// scheduler whose replicas run on this machine under pids its status does not give
// (sched.HostPIDer); nil, nil for one whose status gives them or that cannot tell.
func (r *Runner) HostPIDs(ctx context.Context, h spec.Handle) (map[sched.ReplicaKey]int, error) {
	s, err := r.schedulerOf(h)
	if err != nil {
		return nil, err
	}
	p, ok := s.(sched.HostPIDer)
	if !ok {
		return nil, nil
	}
	m, err := p.HostPIDs(ctx, h.AppID)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h, err)
	}
	return m, nil
}

// Self is the command that runs wick itself (sched.Config.Self), for views that run a
// verb of wick's (the UI's stack key).
func (r *Runner) Self() []string { return r.cfg.Self }
