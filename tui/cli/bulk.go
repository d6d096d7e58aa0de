package cli

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/tui/render"
)

// resolveHandles reads every handle argument before any app is touched, so that a
// typo in the third stops nothing; the same app named twice is acted on once.
func (a *app) resolveHandles(argv []string) ([]spec.Handle, error) {
	seen := map[string]bool{}
	var hs []spec.Handle
	for _, s := range argv {
		h, err := a.resolveHandle(s)
		if err != nil {
			return nil, err
		}
		if !seen[h.String()] {
			seen[h.String()] = true
			hs = append(hs, h)
		}
	}
	return hs, nil
}

// checkArgs reads every argument of cancel or delete (done: "cancelled", "deleted")
// before any is acted on: the sweep ids (whose queues those verbs empty at once) and
// the handles. Every argument that names nothing is in the one-line error, which says
// that nothing was done: a typo among several apps, or after a sweep id, stops them all
// (a sweep's queue was emptied before the typo was read).
func (a *app) checkArgs(argv []string, done string) error {
	store := a.runner().Sweeps()
	var first error
	var more []string
	for _, s := range argv {
		var err error
		if id := trimSlash(s); store != nil && sweep.IsID(id) {
			if _, lerr := store.Load(id); lerr != nil {
				err = usageError{lerr}
			}
		} else {
			_, err = a.resolveHandle(s)
		}
		switch {
		case err == nil:
		case first == nil:
			first = err
		default:
			more = append(more, oneLine(err.Error()))
		}
	}
	if first == nil || len(argv) == 1 {
		return first
	}
	rest := ""
	if len(more) > 0 {
		rest = "; " + strings.Join(more, "; ")
	}
	return fmt.Errorf("%w%s; nothing %s: every argument is read before any app is touched", first, rest, done)
}

// finishedApps lists the apps of this WICK_HOME that have ended, oldest first, and
// the sweeps that may be left with no app once they are deleted: those of whom the
// listing holds no app that goes on (sweeps emptied before are among them).
func (a *app) finishedApps() ([]spec.Handle, []string, error) {
	apps, errs := a.runner().List(a.ctx, "")
	for _, err := range errs {
		a.warn(err.Error())
	}
	sort.SliceStable(apps, func(i, j int) bool { return apps[i].Created.Before(apps[j].Created) })
	var hs []spec.Handle
	kept := map[string]bool{} // sweeps with an app that is not deleted
	for _, st := range apps {
		if st.Sweep != nil && (st.Foreign || !st.State.Terminal()) {
			kept[st.Sweep.ID] = true
		}
		if st.Foreign || !st.State.Terminal() {
			continue
		}
		h, err := spec.ParseHandle(st.Handle)
		if err != nil {
			continue
		}
		hs = append(hs, h)
	}
	var empty []string
	if store := a.runner().Sweeps(); store != nil && len(errs) == 0 {
		all, _ := store.All()
		for _, sw := range all {
			if !kept[sw.ID] && sw.Waiting() == 0 && !sw.QueueRunning() {
				empty = append(empty, sw.ID)
			}
		}
	}
	return hs, empty, nil
}

// forgetEmptySweeps forgets the sweeps of ids left with no app (after delete
// --all-finished), saying so: their rows stayed in wick sweep list, "2 apps" and none.
func (a *app) forgetEmptySweeps(ids []string, asJSON bool) {
	a.forgetSweeps(ids)
	for _, id := range ids {
		if _, err := a.runner().Sweeps().Load(id); errors.Is(err, sweep.ErrNoSweep) && !asJSON {
			fmt.Fprintf(a.env.Stderr, "forgot sweep %s: no app left\n", id)
		}
	}
}

// bulkResult prints what a cancel or delete did: for one app as before (its JSON
// object, or its error); for several, each failure as a line on stderr and, with
// --json, a list with an object per app (an "error" for those that failed). Any
// failure exits non-zero: the code of the failures when they all have one (every app
// not found: 2), else 1.
func (a *app) bulkResult(verb string, hs []spec.Handle, outs []map[string]any, errs []error, asJSON bool) error {
	if len(hs) == 1 {
		if errs[0] != nil {
			return errs[0]
		}
		if asJSON {
			return writeJSON(a.env.Stdout, outs[0])
		}
		return nil
	}
	failed, code := 0, 0
	list := make([]map[string]any, 0, len(hs))
	for i, err := range errs {
		if err == nil {
			list = append(list, outs[i])
			continue
		}
		failed++
		if c := exitCodeOf(err); code == 0 || code == c {
			code = c
		} else {
			code = ExitFailure
		}
		list = append(list, map[string]any{"handle": hs[i].String(), "error": oneLine(err.Error())})
		fmt.Fprintf(a.env.Stderr, "wick: %s\n", render.Escape(oneLine(err.Error())))
	}
	if asJSON {
		if err := writeJSON(a.env.Stdout, list); err != nil {
			return err
		}
	}
	if failed == 0 {
		return nil
	}
	if !asJSON {
		fmt.Fprintf(a.env.Stderr, "wick: %s: %d of %d apps failed\n", verb, failed, len(hs))
	}
	return exitError{code: code}
}
