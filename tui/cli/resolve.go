package cli

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
)

const (
	// maxAppIDPrefix bounds an app id given alone: longer than any id wick makes.
	maxAppIDPrefix = 128
	// ambiguousShown is how many candidates an ambiguous prefix lists.
	ambiguousShown = 5
	// completeTimeout bounds the listing behind a shell completion: a <TAB> must not
	// hang on a Docker Engine or a Slurm controller that does not answer.
	completeTimeout = 2 * time.Second
)

// resolveHandle reads a handle argument: a full handle (SCHEDULER://SESSION/APP_ID),
// or an app id or a unique prefix of one, looked up among the apps wick lists.
func (a *app) resolveHandle(s string) (spec.Handle, error) {
	s = trimSlash(s)
	if strings.Contains(s, "://") {
		return parseHandle(s)
	}
	return a.lookupAppID(s)
}

// resolveLogID reads a log identifier: HANDLE[/ROLE[/IDS]], where HANDLE may also be an
// app id or a unique prefix of one (demo-train-q5n/trainer/0).
func (a *app) resolveLogID(s string) (spec.LogID, error) {
	s = trimSlash(s)
	if strings.Contains(s, "://") {
		return parseLogID(s)
	}
	id, rest, _ := strings.Cut(s, "/")
	h, err := a.lookupAppID(id)
	if err != nil {
		return spec.LogID{}, err
	}
	full := h.String()
	if rest != "" {
		full += "/" + rest
	}
	return parseLogID(full)
}

// trimSlash drops the trailing slashes a shell's completion of a path-like handle
// leaves (local_cwd://wick/echo-abc/): they name nothing more.
func trimSlash(s string) string {
	if t := strings.TrimRight(s, "/"); !strings.HasSuffix(t, ":") {
		return t
	}
	return s
}

// parseLogID reads a log identifier, as a usage error when malformed.
func parseLogID(s string) (spec.LogID, error) {
	id, err := spec.ParseLogID(s)
	if err != nil {
		return id, usageError{err}
	}
	return id, nil
}

// lookupAppID finds the one app whose id is id, or starts with it.
func (a *app) lookupAppID(id string) (spec.Handle, error) {
	if id == "" || len(id) > maxAppIDPrefix || strings.ContainsAny(id, " \t\n:") {
		return spec.Handle{}, usagef("%q is neither a handle (SCHEDULER://SESSION/APP_ID) nor an app id", truncate(id, 40))
	}
	apps, _ := a.runner().List(a.ctx, "")
	var exact, prefixed []spec.Handle
	for _, st := range apps {
		h, err := spec.ParseHandle(st.Handle)
		if err != nil {
			continue
		}
		switch {
		case h.AppID == id:
			exact = append(exact, h)
		case strings.HasPrefix(h.AppID, id):
			prefixed = append(prefixed, h)
		}
	}
	matches := exact
	if len(matches) == 0 {
		matches = prefixed
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return spec.Handle{}, fmt.Errorf("%w: no app id starts with %q (wick list shows them)", sched.ErrNotFound, id)
	}
	names := make([]string, 0, ambiguousShown)
	for i, h := range matches {
		if i == ambiguousShown {
			names = append(names, fmt.Sprintf("and %d more", len(matches)-ambiguousShown))
			break
		}
		names = append(names, h.String())
	}
	return spec.Handle{}, usagef("%q names %d apps: %s; give more of the id", id, len(matches), strings.Join(names, ", "))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// completeHandles completes the first argument with the handles of existing apps, and
// their app ids (which every verb also accepts).
func (a *app) completeHandles(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	out := a.handleCandidates(toComplete, nil)
	sort.Strings(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeHandlesOrSweeps completes each argument of cancel and delete (HANDLE... or
// SWEEP_ID...) with the apps' handles and app ids, and the sweeps' ids; what is given
// already is not offered again.
func (a *app) completeHandlesOrSweeps(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	out := append(a.handleCandidates(toComplete, nil), a.sweepCandidates(toComplete)...)
	out = slices.DeleteFunc(out, func(c string) bool {
		v, _, _ := strings.Cut(c, "\t")
		return slices.Contains(args, v)
	})
	sort.Strings(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeQueued completes wick sweep move's argument with the apps queued in a sweep.
func (a *app) completeQueued(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	out := a.handleCandidates(toComplete, func(st *spec.AppStatus) bool { return st.State == spec.Queued })
	sort.Strings(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeSweepArg completes the first argument with the sweeps' ids (wick sweep
// resume).
func (a *app) completeSweepArg(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.completeSweepFlag(nil, nil, toComplete)
}

// completeSweepFlag completes a --sweep flag (wick list, wick metrics) with the
// sweeps' ids.
func (a *app) completeSweepFlag(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	out := a.sweepCandidates(toComplete)
	sort.Strings(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

// handleCandidates are the handles and app ids of this home's apps (those keep takes,
// all when nil) that start with toComplete, each with its state as description.
func (a *app) handleCandidates(toComplete string, keep func(*spec.AppStatus) bool) []string {
	ctx, cancel := context.WithTimeout(a.ctx, completeTimeout)
	defer cancel()
	apps, _ := a.runner().List(ctx, "")
	var out []string
	for i := range apps {
		st := &apps[i]
		h, err := spec.ParseHandle(st.Handle)
		if err != nil || st.Foreign || keep != nil && !keep(st) {
			continue // other homes' apps: wick list hides them too
		}
		desc := st.State.String()
		for _, c := range []string{h.String(), h.AppID} {
			if strings.HasPrefix(c, toComplete) {
				out = append(out, c+"\t"+desc)
			}
		}
	}
	return out
}

// sweepCandidates are the ids of this home's sweeps that start with toComplete, each
// described by its component and how many apps it has.
func (a *app) sweepCandidates(toComplete string) []string {
	store := a.runner().Sweeps()
	if store == nil || !strings.HasPrefix(sweep.IDPrefix, toComplete) && !strings.HasPrefix(toComplete, sweep.IDPrefix) {
		return nil // what is typed is no sweep id's start: no sweep.json is read
	}
	all, _ := store.All()
	var out []string
	for _, sw := range all {
		if strings.HasPrefix(sw.ID, toComplete) {
			out = append(out, fmt.Sprintf("%s\tsweep of %s: %s", sw.ID, spec.Count(len(sw.Entries), "app"), sw.Component))
		}
	}
	return out
}

// completeComponents completes wick run's component: builtins and user components on
// the search path, or a component file (./comp<TAB>: ./component.py:trainer).
func (a *app) completeComponents(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		if strings.HasPrefix(toComplete, "-") && !slices.Contains(args[1:], "--") {
			return a.completeParams(args[0], toComplete), cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveDefault
	}
	if isFileRef(toComplete) {
		return a.completeFileRef(toComplete)
	}
	all, _ := components.All(a.findOptions())
	var out []string
	for _, c := range all {
		if strings.HasPrefix(c.Name, toComplete) {
			out = append(out, c.Name+"\t"+c.Summary)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeParams completes a flag after the component with the component's own
// parameters (wick run dist.ddp --rd<TAB>). Only wick's builtins and component files
// are read: a <TAB> does not start Python to ask TorchX.
func (a *app) completeParams(name, toComplete string) []string {
	if components.IsPythonFile(name) {
		// A .py file's function: its parameters read from its signature, as text.
		file, fn, _ := strings.Cut(name, ":")
		var out []string
		for _, p := range a.pyParams(file, fn) {
			if f := "--" + p; strings.HasPrefix(f, toComplete) {
				out = append(out, f)
			}
		}
		return out
	}
	opts := a.findOptions()
	opts.External = nil
	c, err := components.Find(name, opts)
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range c.Params {
		if f := "--" + p.Name; strings.HasPrefix(f, toComplete) {
			help, _, _ := strings.Cut(p.Help, "\n")
			out = append(out, f+"\t"+help)
		}
	}
	return out
}

// completeSchedulers completes -s with the registered schedulers.
func (a *app) completeSchedulers(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return a.runner().SchedulerBackends(), cobra.ShellCompDirectiveNoFileComp
}

// completeCfg completes -cfg with the run options of the scheduler named by -s (or the
// default), after the last comma of what is typed.
func (a *app) completeCfg(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	name, _ := cmd.Flags().GetString("scheduler")
	if name == "" {
		name = DefaultScheduler
	}
	opts, err := a.runner().SchedulerRunOpts(name)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	done, typed := "", toComplete
	if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
		done, typed = toComplete[:i+1], toComplete[i+1:]
	}
	var out []string
	for _, o := range opts {
		if strings.HasPrefix(o.Name, typed) {
			out = append(out, done+o.Name+"=\t"+o.Help)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}
