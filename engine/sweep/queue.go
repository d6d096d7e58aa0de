package sweep

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// QueueVerb is the hidden verb that runs a sweep's queue: `wick __sweep SWEEP_DIR`.
const QueueVerb = "__sweep"

// EnvCUDA is the variable that gives an app its GPUs.
const EnvCUDA = "CUDA_VISIBLE_DEVICES"

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

// Run launches the sweep's queued apps, at most MaxParallel at once and each with
// its own devices, starting the next as soon as one ends, until none is queued. The
// apps it launched keep running after it returns.
func (q *Queue) Run(ctx context.Context) error {
	logf := q.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	self, err := logs.Self()
	if err != nil {
		return err
	}
	s, err := q.Store.Update(q.ID, func(s *Sweep) error {
		if s.Queue != self && s.Queue.Alive() {
			return fmt.Errorf("%w (pid %d)", ErrQueueRunning, s.Queue.PID)
		}
		s.Queue = self
		// An app a dead queue was launching when it died: its scheduler may have it
		// (adopted below) or not (launched again).
		for i := range s.Entries {
			if e := &s.Entries[i]; e.State == Launching {
				e.State = Launched
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if q.Ready != nil {
		q.Ready()
	}
	plans, err := q.Store.Plans(q.ID)
	if err != nil {
		return err
	}
	byIndex := make(map[int]*Plan, len(plans))
	for i := range plans {
		byIndex[i] = &plans[i]
	}
	devs := NewDevices(s.Devices)
	ends := make(chan ended, len(s.Entries))
	wctx, stopWaits := context.WithCancel(ctx)
	defer stopWaits()
	running := map[string][]string{} // handle -> devices
	watch := func(h spec.Handle) {
		go func() {
			st, err := q.Launcher.Wait(wctx, h, waitPoll)
			if wctx.Err() != nil {
				return
			}
			state := spec.UnknownState
			if err == nil && st != nil {
				state = st.State
			} else if err != nil {
				logf("wait for %s: %v", h, err)
			}
			ends <- ended{h.String(), state}
		}()
	}
	// Adopt what an earlier queue launched and is still running.
	var relaunch []string
	for _, e := range s.Entries {
		if e.State != Launched {
			continue
		}
		h, err := spec.ParseHandle(e.Handle)
		if err != nil {
			continue
		}
		sch, err := q.Launcher.Scheduler(h.Scheduler)
		if err != nil {
			continue
		}
		d, err := sch.Describe(ctx, h.AppID)
		switch {
		case errors.Is(err, sched.ErrNotFound) && e.Launched.IsZero():
			relaunch = append(relaunch, e.Handle) // its launch never got to the scheduler
		case err == nil && !d.Status.State.Terminal():
			running[e.Handle] = e.Devices
			devs.Hold(e.Devices)
			watch(h)
		}
	}
	if len(relaunch) > 0 {
		if _, err := q.Store.Update(q.ID, func(s *Sweep) error {
			for _, h := range relaunch {
				if e := s.Entry(h); e != nil && e.State == Launched {
					e.State = Queued
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	tick := time.NewTicker(rereadEvery)
	defer tick.Stop()
	defer func() {
		_, _ = q.Store.Update(q.ID, func(s *Sweep) error {
			if s.Queue == self {
				s.Queue = logs.Proc{}
			}
			return nil
		})
	}()
	for {
		// Fill the free slots, in queue order.
		for {
			e, plan, err := q.next(len(running), devs, byIndex)
			if err != nil {
				return err
			}
			if e == nil {
				break // no slot, no devices, or nothing queued
			}
			h, lerr := q.launch(ctx, plan, e.Devices)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var cancelIt bool
			if _, err := q.Store.Update(q.ID, func(s *Sweep) error {
				cur := s.Entry(e.Handle)
				if cur == nil {
					return nil
				}
				if lerr != nil {
					cur.State, cur.Error, cur.Ended = NotLaunched, oneLine(lerr.Error()), time.Now()
					return nil
				}
				cur.State, cur.Launched = Launched, time.Now()
				cancelIt = cur.CancelRequested
				return nil
			}); err != nil {
				return err
			}
			if lerr != nil {
				logf("launch %s: %v", e.Handle, lerr)
				devs.Free(e.Devices)
				continue
			}
			logf("launched %s", h)
			running[e.Handle] = e.Devices
			watch(h)
			if cancelIt {
				if err := q.Launcher.Cancel(ctx, h); err != nil {
					logf("cancel %s: %v", h, err)
				}
			}
		}
		cur, err := q.Store.Load(q.ID)
		if err != nil {
			return err
		}
		if cur.Waiting() == 0 {
			logf("nothing left to launch")
			return nil
		}
		select {
		case end := <-ends:
			devs.Free(running[end.handle])
			delete(running, end.handle)
			logf("%s ended %s", end.handle, end.state)
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// next takes the first queued entry that can start now (a free slot, free devices)
// and marks it launching, under the sweep's lock. It returns nil when none can.
func (q *Queue) next(nrunning int, devs *Devices, plans map[int]*Plan) (*Entry, *Plan, error) {
	var picked Entry
	found := false
	_, err := q.Store.Update(q.ID, func(s *Sweep) error {
		if s.MaxParallel > 0 && nrunning >= s.MaxParallel {
			return nil
		}
		for i := range s.Entries {
			c := &s.Entries[i]
			if c.State != Queued {
				continue
			}
			if plans[c.Index] == nil {
				c.State, c.Error, c.Ended = NotLaunched, "no plan for it in the sweep (plans.json)", time.Now()
				continue
			}
			need := c.GPUs
			if devs.Len() > 0 && need > devs.Len() {
				c.State, c.Ended = NotLaunched, time.Now()
				c.Error = fmt.Sprintf("it needs %d GPUs; this machine has %d", need, devs.Len())
				continue
			}
			var got []string
			if devs.Len() > 0 {
				var ok bool
				if got, ok = devs.Take(need); !ok {
					return nil // the first in line waits for devices: no overtaking
				}
			}
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

// launch plans the app again on its scheduler (with its devices in its environment)
// and launches it, with the app id the sweep gave it.
func (q *Queue) launch(ctx context.Context, p *Plan, devices []string) (spec.Handle, error) {
	s, err := q.Launcher.Scheduler(p.Scheduler)
	if err != nil {
		return spec.Handle{}, err
	}
	cfg := spec.Cfg{}
	opts := s.RunOpts()
	for k, v := range p.Cfg {
		if val, err := opts.Cast(k, v); err == nil {
			cfg[k] = val
		} else {
			cfg[k] = v
		}
	}
	app := p.App.Clone()
	if len(devices) > 0 {
		for i := range app.Roles {
			if app.Roles[i].Env == nil {
				app.Roles[i].Env = map[string]string{}
			}
			app.Roles[i].Env[EnvCUDA] = strings.Join(devices, ",")
		}
	}
	sub := sched.Submission{AppID: p.AppID, Session: p.Session, App: app, Cfg: cfg, Workspace: p.Workspace}
	req, err := s.DryRun(ctx, sub)
	if err != nil {
		return spec.Handle{}, err
	}
	info := &sched.DryRunInfo{Scheduler: p.Scheduler, Submission: sub, Request: req, Call: p.Call}
	return q.Launcher.Schedule(ctx, info, nil)
}

// GPUsOf is how many devices an app needs on a machine with GPUs: what its roles ask
// for (gpu x replicas), and at least one, so that no two apps share a device.
func GPUsOf(app *spec.AppDef) int {
	n := 0
	for _, r := range app.Roles {
		n += r.Resource.GPU * r.NumReplicas
	}
	return max(n, 1)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
