package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/tui"
	"github.com/wick-dev/wick/tui/render"
)

// sweepOf reads s as a sweep id, for the verbs that take one app (status, log, ui
// --logs): the sweep and its apps in queue order, or ok false when s names no sweep
// (an app id that merely looks like one is then read as an app id, as before).
func (a *app) sweepOf(s string) (sw *sweep.Sweep, apps []spec.AppStatus, ok bool, err error) {
	id := trimSlash(s)
	store := a.runner().Sweeps()
	if store == nil || !sweep.IsID(id) {
		return nil, nil, false, nil
	}
	if _, err := store.Load(id); err != nil {
		return nil, nil, false, nil
	}
	all, errs := a.runner().List(a.ctx, "")
	for _, err := range errs {
		fmt.Fprintf(a.env.Stderr, "wick: warning: %s\n", render.Escape(oneLine(err.Error())))
	}
	apps, sw, err = a.filterSweep(all, id)
	return sw, apps, err == nil, err
}

// sweepStatus is `wick status SWEEP`: the sweep's apps, one row each, as
// `wick list --sweep SWEEP` prints them (--json: the same list).
func (a *app) sweepStatus(sw *sweep.Sweep, apps []spec.AppStatus, asJSON bool) error {
	if asJSON {
		if apps == nil {
			apps = []spec.AppStatus{}
		}
		return writeJSON(a.env.Stdout, apps)
	}
	return sweepList(a.env.Stdout, sw, apps, time.Now(), a.out())
}

// sweepLog is `wick log SWEEP`: each app's logs in queue order, under a "==> HANDLE <=="
// line as tail prints several files. An app that never ran (queued, cancelled in the
// queue) is named on stderr and skipped. Following several apps at once is not done:
// -f names them to pick from; nor --json, whose lines do not name their app.
func (a *app) sweepLog(sw *sweep.Sweep, apps []spec.AppStatus, f logFlags) error {
	if f.asJSON {
		// Its lines say role and replica, not app: the apps' lines would be one list.
		return usagef("%s is a sweep: --json prints one app's lines, wick log --json APP for each (wick list --sweep %s --json lists them)", sw.ID, sw.ID)
	}
	if f.follow {
		names := make([]string, 0, len(apps))
		for _, st := range apps {
			names = append(names, appID(st.Handle))
		}
		return usagef("%s is a sweep of %d apps; -f follows one app: wick log -f APP with APP one of %s (or wick ui --logs %s)",
			sw.ID, len(apps), strings.Join(names, ", "), sw.ID)
	}
	first := true
	for _, st := range apps {
		h, err := spec.ParseHandle(st.Handle)
		if err != nil {
			continue
		}
		if st.State == spec.Queued {
			fmt.Fprintf(a.env.Stderr, "wick: %s is queued: no logs yet\n", st.Handle)
			continue
		}
		if err := errNeverRan(h, st); err != nil {
			fmt.Fprintf(a.env.Stderr, "wick: %s\n", render.Escape(oneLine(err.Error())))
			continue
		}
		sep := "\n"
		if first {
			sep = ""
		}
		first = false
		if _, err := fmt.Fprintf(a.env.Stdout, "%s==> %s <==\n", sep, st.Handle); err != nil {
			return err
		}
		if err := a.runLog(st.Handle, f); err != nil {
			return err
		}
	}
	return nil
}

// appID is the app id of handle h (its last part), or h itself when it is no handle.
func appID(h string) string {
	if p, err := spec.ParseHandle(h); err == nil {
		return p.AppID
	}
	return h
}

// withAlerts is cfg with config.toml's [alerts] on_end and on_alarm as the defaults
// of the scheduler's run options of those names. A config.toml that does not load is
// the UI's to report: here it is a warning, and the run goes on.
func (a *app) withAlerts(r *runner.Runner, scheduler string, cfg spec.Cfg) spec.Cfg {
	s, err := r.Scheduler(scheduler)
	if err != nil {
		return cfg
	}
	settings, err := tui.LoadSettings(tui.DefaultSettingsPath(a.env.Getenv))
	if err != nil {
		a.warn(oneLine(err.Error()))
		return cfg
	}
	return tui.WithAlerts(cfg, s.RunOpts(), settings.Alerts)
}
