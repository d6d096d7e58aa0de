package cli

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/tui/render"
)

// compared is one app of `wick metrics --sweep` or `wick metrics H1 H2 ...`.
type compared struct {
	handle spec.Handle
	ref    *spec.SweepRef
	state  spec.AppState
	run    *sweep.Run
}

// isCompare says whether `wick metrics` compares apps: --sweep, or several handles.
func isCompare(argv []string, sweepID string) bool { return sweepID != "" || len(argv) > 1 }

// runCompare prints one row per app: its swept values, its state, then each metric's
// last value, best value and the step of the best, sorted by the best of one metric;
// an app whose metric went NaN or is far above the sweep's median is marked.
func (a *app) runCompare(argv []string, sweepID, sortBy string, f metricsFlags) error {
	switch {
	case f.csv && f.json:
		return usagef("--csv and --json exclude each other")
	case f.follow:
		return usagef("-t follows one app; it does not go with --sweep or several apps")
	case sweepID != "" && len(argv) > 0:
		return usagef("--sweep %s takes no handle: it compares the apps of the sweep", sweepID)
	}
	cfg, err := a.metricsConfigOf(f.only)
	if err != nil {
		return err
	}
	apps, names, err := a.comparedApps(argv, sweepID)
	if err != nil {
		return err
	}
	hs := make([]spec.Handle, len(apps))
	read := make([]bool, len(apps))
	for i, c := range apps {
		hs[i], read[i] = c.handle, c.state != spec.Queued
	}
	runs := sweep.ReadRuns(a.ctx, a.runner(), hs, read, cfg, a.warn)
	for i, c := range apps {
		c.run = runs[i]
	}
	metricNames := sweep.Names(runs)
	if len(f.only) > 0 {
		metricNames = slices.DeleteFunc(metricNames, func(n string) bool { return !slices.Contains(cfg.Only, n) })
	}
	if sortBy == "" {
		sortBy = sweep.Headline(runs)
	} else if !slices.Contains(metricNames, sortBy) {
		return usagef("--sort %s: no app has that metric (%s)", truncate(sortBy, 40), orNone(metricNames))
	}
	if sortBy != "" {
		sweep.Sort(runs, sortBy)
		factor := cfg.Divergence
		if factor == 0 {
			factor = metrics.DefaultDivergence
		}
		sweep.MarkAlarms(runs, sortBy, factor)
	}
	byRun := make(map[*sweep.Run]*compared, len(apps))
	for _, c := range apps {
		byRun[c.run] = c
	}
	sorted := make([]*compared, len(runs))
	for i, r := range runs {
		sorted[i] = byRun[r]
	}
	switch {
	case f.json:
		return writeJSON(a.env.Stdout, compareJSON(sorted, metricNames))
	case f.csv:
		return writeCompareCSV(a.env.Stdout, sorted, names, metricNames)
	}
	if len(metricNames) == 0 {
		fmt.Fprintln(a.env.Stderr, "wick: no metrics found in the logs of these apps")
	}
	return a.writeCompareTable(a.env.Stdout, sorted, names, metricNames, sortBy)
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "no metrics found"
	}
	return "metrics: " + strings.Join(names, ", ")
}

// comparedApps lists the apps to compare and the swept names their values are of.
func (a *app) comparedApps(argv []string, sweepID string) ([]*compared, []string, error) {
	r := a.runner()
	var apps []*compared
	var names []string
	if sweepID != "" {
		store := r.Sweeps()
		if store == nil {
			return nil, nil, usagef("no such sweep: %s", sweepID)
		}
		sw, err := store.Load(sweepID)
		if err != nil {
			return nil, nil, usageError{err}
		}
		ahead := 0 // queued apps before e
		for i := range sw.Entries {
			e := &sw.Entries[i]
			if h, err := spec.ParseHandle(e.Handle); err == nil && e.State != sweep.Deleted {
				st := a.sweepAppStatus(sw, e, ahead)
				apps = append(apps, &compared{handle: h, ref: sw.Ref(e), state: st.State})
			}
			if e.State == sweep.Queued {
				ahead++
			}
		}
		return apps, sw.Names, nil
	}
	hs, err := a.resolveHandles(argv)
	if err != nil {
		return nil, nil, err
	}
	for _, h := range hs {
		st, err := r.Status(a.ctx, h)
		if err != nil {
			return nil, nil, err
		}
		c := &compared{handle: h, ref: st.Sweep, state: st.State}
		if st.Sweep != nil {
			for _, n := range st.Sweep.Names {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
		apps = append(apps, c)
	}
	return apps, names, nil
}

func (a *app) writeCompareTable(w io.Writer, apps []*compared, names, metricNames []string, sortBy string) error {
	rows := make([]render.CompareRow, len(apps))
	for i, c := range apps {
		rows[i] = render.CompareRow{AppID: c.handle.AppID, State: c.state, Run: c.run}
		if c.ref != nil {
			rows[i].Values = c.ref.Values
		}
	}
	return render.Compare(w, rows, names, metricNames, sortBy, a.out())
}

func writeCompareCSV(w io.Writer, apps []*compared, names, metricNames []string) error {
	cw := csv.NewWriter(w)
	head := append([]string{"app", "handle"}, names...)
	head = append(head, "state")
	for _, m := range metricNames {
		head = append(head, m+"_last", m+"_best", m+"_best_step")
	}
	head = append(head, "alarm")
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, c := range apps {
		row := []string{c.handle.AppID, c.handle.String()}
		for _, n := range names {
			v := ""
			if c.ref != nil {
				v = c.ref.Values[n]
			}
			row = append(row, v)
		}
		row = append(row, c.state.String())
		for _, m := range metricNames {
			s := c.run.Stats[m]
			if s == nil {
				row = append(row, "", "", "")
				continue
			}
			best, step := "", ""
			if !math.IsNaN(s.Best.Value) {
				best = metrics.FormatValue(s.Best.Value)
				if s.Best.Step >= 0 {
					step = strconv.FormatInt(s.Best.Step, 10)
				}
			}
			row = append(row, metrics.FormatValue(s.Last.Value), best, step)
		}
		if err := cw.Write(append(row, c.run.Alarm)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// jsonNumber writes a value as JSON: non-finite ones as the strings NaN, inf, -inf.
type jsonNumber float64

func (v jsonNumber) MarshalJSON() ([]byte, error) {
	return metrics.AppendJSONValue(nil, float64(v)), nil
}

func compareJSON(apps []*compared, metricNames []string) []map[string]any {
	out := make([]map[string]any, len(apps))
	for i, c := range apps {
		ms := map[string]any{}
		for _, m := range metricNames {
			s := c.run.Stats[m]
			if s == nil {
				continue
			}
			v := map[string]any{"count": s.Count, "last": jsonNumber(s.Last.Value), "value_of": s.Of}
			if s.Last.Step >= 0 {
				v["last_step"] = s.Last.Step
			}
			if !math.IsNaN(s.Best.Value) {
				v["best"] = jsonNumber(s.Best.Value)
				if s.Best.Step >= 0 {
					v["best_step"] = s.Best.Step
				}
			}
			ms[m] = v
		}
		o := map[string]any{"app": c.handle.AppID, "handle": c.handle.String(), "state": c.state.String(), "metrics": ms}
		if c.ref != nil {
			o["sweep"] = c.ref.ID
			o["values"] = c.ref.Values
		}
		if c.run.Alarm != "" {
			o["alarm"] = c.run.Alarm
		}
		out[i] = o
	}
	return out
}
