package sweep

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/wick-dev/wick/engine/spec"
)

// QueueRunning says whether the sweep's queue process is alive.
func (s *Sweep) QueueRunning() bool { return s.Queue.Alive() }

// Status is the status of an entry no scheduler has (not launched): QUEUED while it
// waits, FAILED when its launch failed (Msg says why), CANCELLED when it was cancelled
// while queued.
func (s *Sweep) Status(e *Entry) spec.AppStatus {
	ahead := 0
	for i := range s.Entries {
		if &s.Entries[i] == e {
			break
		}
		if s.Entries[i].State == Queued {
			ahead++
		}
	}
	return s.StatusAt(e, ahead)
}

// StatusAt is Status with the number of queued apps ahead of e counted by the caller:
// a listing counts them once for the whole sweep (Status counts them for each app,
// which at 10,000 apps is 50 million steps a listing).
func (s *Sweep) StatusAt(e *Entry, ahead int) spec.AppStatus {
	running := false
	if e.State == Queued || e.State == Launching {
		running = s.QueueRunning()
	}
	return s.statusAt(e, ahead, running)
}

// statusAt is StatusAt with whether the queue runs read by the caller, once for the
// whole sweep (it reads /proc).
func (s *Sweep) statusAt(e *Entry, ahead int, queueRunning bool) spec.AppStatus {
	h, _ := spec.ParseHandle(e.Handle)
	st := spec.AppStatus{Handle: e.Handle, AppID: h.AppID, Scheduler: h.Scheduler, Name: e.Name,
		Created: s.Created, Roles: []spec.RoleStatus{}, Sweep: s.Ref(e)}
	switch e.State {
	case Queued, Launching:
		st.State = spec.Queued
		pos := fmt.Sprintf("%d ahead of it", ahead)
		if e.State == Launching {
			pos = "being launched"
		}
		if e.Wait != "" {
			pos += "; " + e.Wait
		}
		st.Msg = fmt.Sprintf("queued, %s (sweep %s)", pos, s.ID)
		if !queueRunning {
			st.Msg = fmt.Sprintf("queued, but the queue is not running: wick sweep resume %s (sweep %s)", s.ID, s.ID)
		}
	case NotLaunched:
		st.State = spec.Failed
		st.Msg = "launch failed: " + e.Error
		st.StructuredError = st.Msg
		st.Ended = e.Ended
	default: // Removed, Deleted
		st.State = spec.Cancelled
		st.Msg = "cancelled before it was launched"
		st.Ended = e.Ended
	}
	return st
}

// Annotate ties the listed apps of a sweep to it (their Sweep) and adds a row for
// each app of a sweep that no scheduler has: queued, or never launched. sched, when
// not "", keeps the sweeps of that scheduler only.
func Annotate(apps []spec.AppStatus, sweeps []*Sweep, sched string) []spec.AppStatus {
	if len(sweeps) == 0 {
		return apps
	}
	type where struct {
		s *Sweep
		e *Entry
	}
	byHandle := map[string]where{}
	for _, s := range sweeps {
		for i := range s.Entries {
			byHandle[s.Entries[i].Handle] = where{s, &s.Entries[i]}
		}
	}
	listed := make(map[string]bool, len(apps))
	for i := range apps {
		if w, ok := byHandle[apps[i].Handle]; ok {
			apps[i].Sweep = w.s.Ref(w.e)
			listed[apps[i].Handle] = true
			if w.e.Stopped != "" && apps[i].State == spec.Cancelled {
				apps[i].Msg = StoppedMsg(w.e.Stopped)
			}
		}
	}
	for _, s := range sweeps {
		if sched != "" && s.Scheduler != sched {
			continue
		}
		ahead, running := 0, s.QueueRunning()
		for i := range s.Entries {
			e := &s.Entries[i]
			if e.State == Launched || e.State == Deleted || listed[e.Handle] {
				continue
			}
			apps = append(apps, s.statusAt(e, ahead, running))
			if e.State == Queued {
				ahead++
			}
		}
	}
	return apps
}

// RefOf reads the sweep an app belongs to from its AppDef's metadata, or nil.
func RefOf(app *spec.AppDef) *spec.SweepRef {
	if app == nil || app.Metadata[MetaSweep] == "" {
		return nil
	}
	var r spec.SweepRef
	if err := json.Unmarshal([]byte(app.Metadata[MetaValues]), &r); err != nil {
		return nil
	}
	r.ID = app.Metadata[MetaSweep]
	return &r
}

// SetRef records the sweep of an app in its AppDef's metadata.
func SetRef(app *spec.AppDef, r *spec.SweepRef) {
	if app.Metadata == nil {
		app.Metadata = map[string]string{}
	}
	b, _ := json.Marshal(spec.SweepRef{Names: r.Names, Values: r.Values})
	app.Metadata[MetaSweep] = r.ID
	app.Metadata[MetaValues] = string(b)
}

// CancelEntry takes the app of handle h out of its sweep's queue. It returns
// launching when the queue is launching it right now: the queue cancels it once it
// is launched, and the caller should cancel it through its scheduler too. found is
// false when no sweep holds h.
func (st *Store) CancelEntry(h string, del bool) (found, launching bool, err error) {
	s, ok := st.Find(h)
	if !ok {
		return false, false, nil
	}
	err = st.Change(s.ID, func(s *Sweep, edit func(int) *Entry) error {
		i := s.index(h)
		if i < 0 {
			return nil
		}
		e := edit(i)
		found = true
		switch e.State {
		case Queued:
			e.State, e.Ended = Removed, time.Now()
		case Launching:
			e.CancelRequested = true
			launching = true
		}
		if del && e.State != Launching && e.State != Launched {
			e.State = Deleted
		}
		return nil
	})
	return found, launching, err
}

// CancelQueued takes every queued app of sweep id out of the queue, so that cancelling
// the sweep's running apps starts none of them. It returns the handles of the apps
// that are (or are being) launched, and how many it took out.
func (st *Store) CancelQueued(id string) (launched []string, removed int, err error) {
	err = st.Update(id, func(s *Sweep) error {
		now := time.Now()
		for i := range s.Entries {
			e := &s.Entries[i]
			switch e.State {
			case Queued:
				e.State, e.Ended = Removed, now
				removed++
			case Launching:
				e.CancelRequested = true
				launched = append(launched, e.Handle)
			case Launched:
				launched = append(launched, e.Handle)
			}
		}
		return nil
	})
	return launched, removed, err
}

// Move puts the queued app of handle h at place `to` (1-based) among the sweep's
// queued apps.
func (s *Sweep) Move(h string, to int) error {
	from := -1
	var queued []int
	for i := range s.Entries {
		if s.Entries[i].State == Queued {
			queued = append(queued, i)
		}
		if s.Entries[i].Handle == h {
			from = i
		}
	}
	if from < 0 {
		return fmt.Errorf("%s is not an app of sweep %s", h, s.ID)
	}
	if s.Entries[from].State != Queued {
		return fmt.Errorf("%s is not queued (it is %s)", h, s.Entries[from].State)
	}
	to = min(to, len(queued))
	e := s.Entries[from]
	s.Entries = append(s.Entries[:from], s.Entries[from+1:]...)
	// The place of the to-th queued entry, once e is out.
	rest := 0
	at := len(s.Entries)
	for i := range s.Entries {
		if s.Entries[i].State == Queued {
			rest++
			if rest == to {
				at = i
				break
			}
		}
	}
	s.Entries = append(s.Entries[:at], append([]Entry{e}, s.Entries[at:]...)...)
	return nil
}

// StoppedMsg is the message of an app the queue cancelled (--stop-on-nan).
func StoppedMsg(why string) string { return "stopped by its sweep (--stop-on-nan): " + why }

// Forget marks every app of sweep id that never ran (cancelled while queued, or whose
// launch failed) deleted, and, with queued, the queued ones too: a delete of the
// whole sweep in one write. It returns how many it marked.
func (st *Store) Forget(id string, queued bool) (int, error) {
	n := 0
	err := st.Update(id, func(s *Sweep) error {
		now := time.Now()
		for i := range s.Entries {
			e := &s.Entries[i]
			switch {
			case e.State == Removed, e.State == NotLaunched, queued && e.State == Queued:
				if e.Ended.IsZero() {
					e.Ended = now
				}
				e.State = Deleted
				n++
			}
		}
		return nil
	})
	return n, err
}
