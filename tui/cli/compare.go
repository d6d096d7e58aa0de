package cli

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/tui/render"
)

// compareParallel is how many apps' logs `wick metrics --sweep` reads at once: the
// reading is mostly the disk and one core's parsing.
const compareParallel = 4

// compared is one app of `wick metrics --sweep` or `wick metrics H1 H2 ...`.
type compared struct {
	handle spec.Handle
	ref    *spec.SweepRef
	state  spec.AppState
	run    *sweep.Run
	store  *metrics.Store
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
	cfg, err := a.metricsConfig()
	if err != nil {
		return err
	}
	for _, m := range f.only {
		if m = strings.TrimSpace(m); m == "" || len(m) > metrics.MaxNameLen {
			return usagef("--metric: %q is not a metric name", m)
		}
		cfg.Only = append(cfg.Only, m)
	}
	apps, names, err := a.comparedApps(argv, sweepID)
	if err != nil {
		return err
	}
	a.readCompared(apps, cfg)
	runs := make([]*sweep.Run, len(apps))
	for i, c := range apps {
		runs[i] = c.run
	}
	metricNames := sweep.Names(runs, func(r *sweep.Run) []string {
		for _, c := range apps {
			if c.run == r && c.store != nil {
				return c.store.Names()
			}
		}
		return nil
	})
	if len(f.only) > 0 {
		metricNames = slices.DeleteFunc(metricNames, func(n string) bool { return !slices.Contains(cfg.Only, n) })
	}
	if sortBy == "" {
		for _, c := range apps {
			if c.store != nil && len(c.store.Names()) > 0 {
				sortBy = metrics.Headline(c.store)
				break
			}
		}
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
		for i := range sw.Entries {
			e := &sw.Entries[i]
			if e.State == sweep.Deleted {
				continue
			}
			h, err := spec.ParseHandle(e.Handle)
			if err != nil {
				continue
			}
			st := a.sweepAppStatus(sw, e)
			apps = append(apps, &compared{handle: h, ref: sw.Ref(e), state: st.State})
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

// readCompared reads the metrics of every app that has run, a few at once. An app
// whose logs cannot be read is compared without metrics.
func (a *app) readCompared(apps []*compared, cfg metrics.Config) {
	r := a.runner()
	sem := make(chan struct{}, compareParallel)
	var wg sync.WaitGroup
	for _, c := range apps {
		c.run = &sweep.Run{Handle: c.handle.String(), Stats: map[string]*sweep.Stat{}}
		if c.state == spec.Queued {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			d, err := r.Describe(a.ctx, c.handle)
			if err != nil || len(d.Status.Roles) == 0 {
				return // never launched
			}
			store := metrics.NewStore(cfg)
			if _, err := metrics.Read(a.ctx, r, c.handle, d, time.Time{}, store, metrics.NewNamerOf(d)); err != nil {
				a.warn(fmt.Sprintf("metrics of %s: %v", c.handle, err))
			}
			c.store = store
			c.run = sweep.RunOf(c.handle.String(), store)
		})
	}
	wg.Wait()
}

// compareColumns are the columns of each metric in the table.
func compareColumns(m string) []string {
	return []string{"LAST " + strings.ToUpper(render.Escape(m)), "BEST", "@STEP"}
}

func statCells(st *sweep.Stat) []string {
	if st == nil {
		return []string{"-", "-", "-"}
	}
	step := "-"
	if st.Best.Step >= 0 && !math.IsNaN(st.Best.Value) {
		step = strconv.FormatInt(st.Best.Step, 10)
	}
	best := "-"
	if !math.IsNaN(st.Best.Value) {
		best = fmtValue(st.Best.Value)
	}
	return []string{fmtValue(st.Last.Value), best, step}
}

func (a *app) writeCompareTable(w io.Writer, apps []*compared, names, metricNames []string, sortBy string) error {
	st := a.out()
	heads := append([]string{"APP"}, upperAll(names)...)
	heads = append(heads, "STATE")
	for _, m := range metricNames {
		heads = append(heads, compareColumns(m)...)
	}
	heads = append(heads, "ALARM")
	rows := make([][]string, len(apps))
	for i, c := range apps {
		row := []string{render.Escape(c.handle.AppID)}
		for _, n := range names {
			v := "-"
			if c.ref != nil {
				if x, ok := c.ref.Values[n]; ok {
					v = render.Escape(x)
				}
			}
			row = append(row, v)
		}
		row = append(row, st.State(c.state, c.state.String()))
		for _, m := range metricNames {
			row = append(row, statCells(c.run.Stats[m])...)
		}
		alarm := ""
		if c.run.Alarm != "" {
			alarm = st.Error("! " + render.Escape(c.run.Alarm))
		}
		rows[i] = append(row, alarm)
	}
	if sortBy != "" {
		what := "lowest"
		if !metrics.LowerIsBetter(sortBy) {
			what = "highest"
		}
		fmt.Fprintf(w, "%s · sorted by the %s best %s\n", spec.Count(len(apps), "app"), what, render.Escape(sortBy))
	}
	_, err := io.WriteString(w, render.Table(heads, rows, st))
	return err
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
			v := map[string]any{"count": s.Count, "last": jsonNumber(s.Last.Value)}
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
