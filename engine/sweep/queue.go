package sweep

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wick-dev/wick/engine/gpus"
	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// QueueVerb is the hidden verb that runs a sweep's queue: `wick __sweep SWEEP_DIR`.
const QueueVerb = "__sweep"

// Launcher is what the queue needs of the Runner: plan and launch an app, wait for it
// to end, cancel it.
type Launcher interface {
	Scheduler(name string) (sched.Scheduler, error)
	Schedule(ctx context.Context, info *sched.DryRunInfo, progress sched.Progress) (spec.Handle, error)
	Wait(ctx context.Context, h spec.Handle, interval time.Duration) (*spec.AppStatus, error)
	Cancel(ctx context.Context, h spec.Handle) error
}

// rereadEvery is how often an idle queue reads its sweep again without an app having
// ended: to see a change of order or of --max-parallel made by another wick. An app's
// end wakes it at once.
const rereadEvery = time.Second

// waitPoll is the Runner's polling interval for schedulers that cannot wait for an
// app's end themselves (local apps wake the queue through their state file at once).
const waitPoll = 500 * time.Millisecond

// ErrQueueRunning is returned by Run when another queue process owns the sweep.
var ErrQueueRunning = errors.New("the sweep's queue is already running")

// Devices hands out GPUs: each running app gets its own, none shared.
type Devices struct {
	all  []string
	busy map[string]bool
}

// NewDevices returns the allocator of the devices all (GPU indices, as
// CUDA_VISIBLE_DEVICES names them).
func NewDevices(all []string) *Devices {
	return &Devices{all: all, busy: map[string]bool{}}
}

// Take gives n free devices, lowest first, or nil and false when fewer are free.
func (d *Devices) Take(n int) ([]string, bool) {
	var got []string
	for _, dev := range d.all {
		if len(got) == n {
			break
		}
		if !d.busy[dev] {
			got = append(got, dev)
		}
	}
	if len(got) < n {
		return nil, false
	}
	for _, dev := range got {
		d.busy[dev] = true
	}
	return got, true
}

// Hold marks devices as in use (an app launched by an earlier queue).
func (d *Devices) Hold(devs []string) {
	for _, dev := range devs {
		d.busy[dev] = true
	}
}

// Free gives devices back.
func (d *Devices) Free(devs []string) {
	for _, dev := range devs {
		delete(d.busy, dev)
	}
}

// Len is the number of devices.
func (d *Devices) Len() int { return len(d.all) }

// NumFree is the number of devices not in use.
func (d *Devices) NumFree() int { return len(d.all) - len(d.busy) }

// Queue runs one sweep's queue.
type Queue struct {
	Store    *Store
	ID       string
	Launcher Launcher
	// Logf writes the queue's own messages (queue.log).
	Logf func(format string, args ...any)
	// Ready, if set, is called once the queue owns the sweep.
	Ready func()
}

type ended struct {
	handle string
	state  spec.AppState
}

// run is one run of a queue: what it launched and is waiting for.
type run struct {
	q       *Queue
	self    logs.Proc
	logf    func(string, ...any)
	plans   map[int]*Plan
	devs    *Devices
	running map[string][]string // handle -> devices
	ends    chan ended
	wctx    context.Context
	// stopOnNaN is the sweep's StopOnNaN.
	stopOnNaN bool
	// heldUntil is when the queue may try to launch again after its scheduler
	// refused an app for a limit (an app's end lets it try at once); held is the
	// back-off of the next refusal.
	heldUntil time.Time
	held      time.Duration
	// outside are devices of the pool that apps of this machine outside the sweep
	// hold (a plain run's lease: gpus.ErrBusy), kept from the sweep's apps until
	// outsideUntil or until an app of the sweep ends, then tried again.
	outside      []string
	outsideUntil time.Time
}

// Run launches the sweep's queued apps, at most MaxParallel at once and each with
// its own devices, starting the next as soon as one ends, until none is queued. The
// apps it launched keep running after it returns.
func (q *Queue) Run(ctx context.Context) error {
	r := &run{q: q, logf: q.Logf, running: map[string][]string{}}
	if r.logf == nil {
		r.logf = func(string, ...any) {}
	}
	s, err := r.own()
	if err != nil {
		return err
	}
	defer r.disown()
	if q.Ready != nil {
		q.Ready()
	}
	plans, err := q.Store.Plans(q.ID)
	if err != nil {
		return err
	}
	r.plans = make(map[int]*Plan, len(plans))
	for i := range plans {
		r.plans[i] = &plans[i]
	}
	r.devs = NewDevices(s.Devices)
	r.stopOnNaN = s.StopOnNaN
	r.ends = make(chan ended, len(s.Entries))
	var stopWaits context.CancelFunc
	r.wctx, stopWaits = context.WithCancel(ctx)
	defer stopWaits()
	if err := r.adopt(ctx, s); err != nil {
		return err
	}
	tick := time.NewTicker(rereadEvery)
	defer tick.Stop()
	for {
		if !time.Now().Before(r.heldUntil) {
			if err := r.fill(ctx); err != nil {
				return err
			}
		}
		// The sweep as in memory, with the changes of other wicks (a cancel) read
		// from its journal.
		waiting := 0
		if err := q.Store.view(q.ID, func(s *Sweep) { waiting = s.Waiting() }); err != nil {
			return err
		}
		// Nothing left to launch: the queue's work is done, unless it watches the
		// running apps for a NaN until they end.
		if waiting == 0 && (!r.stopOnNaN || len(r.running) == 0) {
			r.logf("nothing left to launch")
			return nil
		}
		select {
		case end := <-r.ends:
			r.devs.Free(r.running[end.handle])
			delete(r.running, end.handle)
			r.logf("%s ended %s", end.handle, end.state)
			r.heldUntil = time.Time{} // a slot freed: a refused app may fit now
			r.retryOutside()
		case <-tick.C:
			if !time.Now().Before(r.outsideUntil) {
				r.retryOutside()
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// own makes this process the sweep's queue, unless another live one is.
func (r *run) own() (*Sweep, error) {
	self, err := logs.Self()
	if err != nil {
		return nil, err
	}
	r.self = self
	err = r.q.Store.Update(r.q.ID, func(s *Sweep) error {
		if s.Queue != self && s.Queue.Alive() {
			return fmt.Errorf("%w (pid %d)", ErrQueueRunning, s.Queue.PID)
		}
		s.Queue = self
		// An app a dead queue was launching when it died: its scheduler may have it
		// (adopted) or not (launched again).
		for i := range s.Entries {
			if e := &s.Entries[i]; e.State == Launching {
				e.State = Launched
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r.q.Store.Load(r.q.ID)
}

// disown says the queue has stopped.
func (r *run) disown() {
	_ = r.q.Store.Update(r.q.ID, func(s *Sweep) error {
		if s.Queue == r.self {
			s.Queue = logs.Proc{}
		}
		return nil
	})
}

// watch waits for the app's end, and reports it on ends. Only its scheduler's word
// ends it: the app is terminal, or its scheduler no longer has it. A wait that fails
// otherwise (the Engine restarting, an inotify limit, a Slurm controller that does
// not answer) is tried again with back-off; until then the app keeps its slot and its
// devices.
func (r *run) watch(h spec.Handle) {
	go func() {
		if mr, ok := r.q.Launcher.(MetricsReader); ok && r.stopOnNaN {
			ctx, stop := context.WithCancel(r.wctx)
			defer stop() // once the app has ended
			go r.watchNaN(ctx, mr, h)
		}
		state, ok := r.waitEnd(h)
		if !ok {
			return
		}
		r.ends <- ended{h.String(), state}
	}()
}

// Back-off of a failed wait for an app's end.
const (
	waitRetryFirst = 500 * time.Millisecond
	waitRetryMax   = 30 * time.Second
)

// waitEnd waits until the app's scheduler says it is terminal (its state) or gone
// (UnknownState); ok is false when the queue stops first.
func (r *run) waitEnd(h spec.Handle) (state spec.AppState, ok bool) {
	backoff := waitRetryFirst
	for {
		st, err := r.q.Launcher.Wait(r.wctx, h, waitPoll)
		switch {
		case r.wctx.Err() != nil:
			return 0, false
		case err == nil && st != nil && st.State.Terminal():
			return st.State, true
		case errors.Is(err, sched.ErrNotFound):
			r.logf("%s: its scheduler no longer has it", h)
			return spec.UnknownState, true
		case err == nil:
			err = errors.New("the wait returned before the app ended")
		}
		r.logf("wait for %s: %v (its slot stays taken; trying again in %s)", h, err, backoff)
		t := time.NewTimer(backoff)
		select {
		case <-r.wctx.Done():
			t.Stop()
			return 0, false
		case <-t.C:
		}
		backoff = min(2*backoff, waitRetryMax)
	}
}

// adopt waits for the apps an earlier queue launched that still run (their devices
// stay theirs), and queues again those whose launch never reached their scheduler.
func (r *run) adopt(ctx context.Context, s *Sweep) error {
	var relaunch []string
	for _, e := range s.Entries {
		if e.State != Launched {
			continue
		}
		h, err := spec.ParseHandle(e.Handle)
		if err != nil {
			continue
		}
		sch, err := r.q.Launcher.Scheduler(h.Scheduler)
		if err != nil {
			continue
		}
		d, err := sch.Describe(ctx, h.AppID)
		switch {
		case errors.Is(err, sched.ErrNotFound) && e.Launched.IsZero():
			relaunch = append(relaunch, e.Handle)
		case err == nil && e.Launched.IsZero() && d.Status.State.Terminal() && neverStarted(&d.Status):
			switch r.cutShort(ctx, sch, h, d) {
			case cutRelaunch:
				relaunch = append(relaunch, e.Handle)
			case cutRunning:
				r.running[e.Handle] = e.Devices
				r.devs.Hold(e.Devices)
				r.watch(h)
			}
		case err == nil && !d.Status.State.Terminal(),
			err != nil && !errors.Is(err, sched.ErrNotFound):
			// Running, or not known to be ended (its scheduler did not answer): it
			// keeps its slot and devices until watch hears of its end.
			if err != nil {
				r.logf("describe %s: %v (counted as running until its scheduler says it ended)", e.Handle, err)
			}
			r.running[e.Handle] = e.Devices
			r.devs.Hold(e.Devices)
			r.watch(h)
		}
	}
	if len(relaunch) == 0 {
		return nil
	}
	return r.q.Store.Update(r.q.ID, func(s *Sweep) error {
		for _, h := range relaunch {
			if e := s.Entry(h); e != nil && e.State == Launched {
				e.State = Queued
			}
		}
		return nil
	})
}

// cutShortGrace is how long the queue gives the app process of an app whose launch
// a dead queue began to take the app over before judging its launch cut short.
const cutShortGrace = 5 * time.Second

type cutVerdict int

const (
	cutGone     cutVerdict = iota // nothing to do: it ended, or cannot be deleted
	cutRunning                    // its app process took it over late: watch it
	cutRelaunch                   // deleted: launch it again
)

// cutShort deals with an app an earlier queue was launching when it died and that its
// scheduler says ended without any replica having started: its launcher (that queue)
// died before the app's own process (a local app's supervisor) took it over. That
// process may still come, late on a busy machine: it is given cutShortGrace to do so.
// If it does not, nothing of the app ran; it is deleted and launched again.
func (r *run) cutShort(ctx context.Context, sch sched.Scheduler, h spec.Handle, d *sched.Description) cutVerdict {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	deadline := time.Now().Add(cutShortGrace)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return cutGone
		case <-t.C:
		}
		cur, err := sch.Describe(ctx, h.AppID)
		if err != nil {
			return cutGone
		}
		if !cur.Status.State.Terminal() || !neverStarted(&cur.Status) {
			r.logf("%s: taken over late by its own process", h)
			if cur.Status.State.Terminal() {
				return cutGone
			}
			return cutRunning
		}
	}
	if err := sch.Delete(ctx, h.AppID, true); err != nil {
		r.logf("%s: its launch was cut short; deleting it: %v", h, err)
		return cutGone
	}
	r.logf("%s: its launch was cut short (%s): launching it again", h, oneLine(d.Status.Msg))
	return cutRelaunch
}

// neverStarted says that no replica of the app ever started.
func neverStarted(st *spec.AppStatus) bool {
	for _, r := range st.Roles {
		for _, rep := range r.Replicas {
			if !rep.Started.IsZero() || rep.PID != 0 || rep.ContainerID != "" || len(rep.Attempts) > 0 || rep.ExitCode != nil {
				return false
			}
		}
	}
	return true
}

// fill launches queued apps, in queue order, while there are free slots and devices.
func (r *run) fill(ctx context.Context) error {
	for {
		e, plan, err := r.q.next(len(r.running), r.devs, r.plans)
		if err != nil || e == nil {
			return err // no slot, no devices, or nothing queued
		}
		h, lerr := r.q.launch(ctx, plan, e.Devices)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if why, ok := LimitRefusal(lerr); ok {
			return r.refused(e, why)
		}
		var busy *gpus.BusyError
		if errors.As(lerr, &busy) {
			if err := r.busyElsewhere(e, busy); err != nil {
				return err
			}
			continue // other devices of the pool may be free
		}
		r.held = 0
		cancelIt, err := r.launched(e, h, lerr)
		if err != nil {
			return err
		}
		if lerr != nil {
			r.logf("launch %s: %v", e.Handle, lerr)
			r.devs.Free(e.Devices)
			continue
		}
		r.logf("launched %s", h)
		r.running[h.String()] = e.Devices
		r.watch(h)
		if cancelIt {
			if err := r.q.Launcher.Cancel(ctx, h); err != nil {
				r.logf("cancel %s: %v", h, err)
			}
		}
	}
}

// Back-off of the retries of an app its scheduler refused for a limit: an app's end
// retries at once.
const (
	heldFirst = 5 * time.Second
	heldMax   = 2 * time.Minute
)

// refused puts e back in the queue, first in line, after its scheduler refused it for
// a limit (why): nothing more is launched until an app ends or the back-off passes.
func (r *run) refused(e *Entry, why string) error {
	r.devs.Free(e.Devices)
	r.held = min(max(2*r.held, heldFirst), heldMax)
	r.heldUntil = time.Now().Add(r.held)
	wait := fmt.Sprintf("refused by its scheduler (%s): tried again when an app of the sweep ends, or in %s", why, r.held)
	r.logf("launch %s: %s", e.Handle, wait)
	return r.q.Store.Change(r.q.ID, func(s *Sweep, edit func(int) *Entry) error {
		if i := s.index(e.Handle); i >= 0 {
			cur := edit(i)
			if cur.State == Launching {
				cur.State, cur.Devices, cur.LaunchStarted, cur.Wait = Queued, nil, time.Time{}, wait
			}
		}
		return nil
	})
}

// waitBusy starts the note of an app that waits for GPUs apps outside the sweep hold.
const waitBusy = "waiting for GPUs: "

// outsideWait is how long devices that apps outside the sweep hold are kept from its
// apps before they are tried again (an app of the sweep ending tries them at once).
const outsideWait = 5 * time.Second

// busyElsewhere puts e back in the queue, first in line, after its launch found some
// of its devices leased to an app outside the sweep (a plain wick run): those devices
// are kept from the sweep's apps for a while, and e is launched on others, or waits.
func (r *run) busyElsewhere(e *Entry, busy *gpus.BusyError) error {
	r.devs.Free(e.Devices)
	r.devs.Hold(busy.Devices)
	r.outside = append(r.outside, busy.Devices...)
	r.outsideUntil = time.Now().Add(outsideWait)
	wait := waitBusy + oneLine(busy.Error())
	r.logf("launch %s: %s", e.Handle, wait)
	return r.q.Store.Change(r.q.ID, func(s *Sweep, edit func(int) *Entry) error {
		if i := s.index(e.Handle); i >= 0 {
			cur := edit(i)
			if cur.State == Launching {
				cur.State, cur.Devices, cur.LaunchStarted, cur.Wait = Queued, nil, time.Time{}, wait
			}
		}
		return nil
	})
}

// retryOutside gives the devices held outside the sweep back to the pool, to be tried
// again.
func (r *run) retryOutside() {
	r.devs.Free(r.outside)
	r.outside = nil
}

// launched records how the launch of e went (h: the handle its scheduler gave it);
// cancelIt is a cancel that came while it was launched.
func (r *run) launched(e *Entry, h spec.Handle, lerr error) (cancelIt bool, err error) {
	err = r.q.Store.Change(r.q.ID, func(s *Sweep, edit func(int) *Entry) error {
		i := s.index(e.Handle)
		if i < 0 {
			return nil
		}
		cur := edit(i)
		if lerr != nil {
			cur.State, cur.Error, cur.Ended, cur.Wait = NotLaunched, oneLine(lerr.Error()), time.Now(), ""
			return nil
		}
		cur.State, cur.Launched, cur.Wait = Launched, time.Now(), ""
		// Slurm names the app after its job, known once submitted.
		cur.Handle = h.String()
		cancelIt = cur.CancelRequested
		return nil
	})
	return cancelIt, err
}

// next takes the first queued entry that can start now (a free slot, free devices)
// and marks it launching, under the sweep's lock. It returns nil when none can.
func (q *Queue) next(nrunning int, devs *Devices, plans map[int]*Plan) (*Entry, *Plan, error) {
	var picked Entry
	found := false
	err := q.Store.Change(q.ID, func(s *Sweep, edit func(int) *Entry) error {
		if s.MaxParallel > 0 && nrunning >= s.MaxParallel {
			return nil
		}
		for i := range s.Entries {
			if s.Entries[i].State != Queued {
				continue
			}
			c := &s.Entries[i]
			if plans[c.Index] == nil {
				c = edit(i)
				c.State, c.Error, c.Ended = NotLaunched, "no plan for it in the sweep (plans.jsonl)", time.Now()
				continue
			}
			need := c.GPUs
			if devs.Len() > 0 && need > devs.Len() {
				c = edit(i)
				c.State, c.Ended = NotLaunched, time.Now()
				c.Error = fmt.Sprintf("it needs %d GPUs; this machine has %d", need, devs.Len())
				continue
			}
			var got []string
			if devs.Len() > 0 {
				var ok bool
				if got, ok = devs.Take(need); !ok {
					// The first in line waits for devices (no overtaking): its row
					// says so, unless it says which app outside holds them.
					why := fmt.Sprintf("waiting for %s: %d of the pool's %d free", spec.Count(need, "GPU"), devs.NumFree(), devs.Len())
					if c.Wait != why && !strings.HasPrefix(c.Wait, waitBusy) {
						edit(i).Wait = why
					}
					return nil
				}
			}
			c = edit(i)
			c.State, c.LaunchStarted, c.Devices = Launching, time.Now(), got
			picked, found = *c, true
			return nil
		}
		return nil
	})
	if err != nil || !found {
		return nil, nil, err
	}
	return &picked, plans[picked.Index], nil
}

// launch plans the app again on its scheduler, with its devices as the pool its
// scheduler hands out to its replicas, and launches it, with the app id the sweep
// gave it.
func (q *Queue) launch(ctx context.Context, p *Plan, devices []string) (spec.Handle, error) {
	s, err := q.Launcher.Scheduler(p.Scheduler)
	if err != nil {
		return spec.Handle{}, err
	}
	cfg := s.RunOpts().CfgValues(p.Cfg)
	sub := sched.Submission{AppID: p.AppID, Session: p.Session, App: p.App.Clone(), Cfg: cfg, Workspace: p.Workspace, Devices: devices}
	req, err := s.DryRun(ctx, sub)
	if err != nil {
		return spec.Handle{}, err
	}
	info := &sched.DryRunInfo{Scheduler: p.Scheduler, Submission: sub, Request: req, Call: p.Call}
	return q.Launcher.Schedule(ctx, info, nil)
}

// GPUsOf is how many devices an app needs on a machine with GPUs: every replica its
// own, max(resource.gpu, 1) each (a replica that asks for none would otherwise see
// every GPU and use the first), as the schedulers hand out a pool
// (sched.Submission.Devices).
func GPUsOf(app *spec.AppDef) int {
	n := 0
	for _, r := range app.Roles {
		n += max(r.Resource.GPU, 1) * r.NumReplicas
	}
	return n
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
