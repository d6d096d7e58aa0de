package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/render"
)

type metricsFlags struct {
	csv, json bool
	follow    bool
	only      []string
	// sweep and sort are for comparing apps (compare.go).
	sweep, sort string
}

func (a *app) metricsCmd() *cobra.Command {
	var f metricsFlags
	cmd := &cobra.Command{
		Use:               "metrics IDENTIFIER | --sweep ID | HANDLE HANDLE...",
		ValidArgsFunction: a.completeHandles,
		Short:             "Print the training metrics found in an app's logs (loss, lr, ...), or export every point",
		Long: `Read the numbers training scripts print (loss 2.84, lr=6e-05, {"loss": 2.84},
tqdm's loss=1.70, torchrun's [N]: prefixes) from the logs of an app's replicas and print
a table per metric: ranks, count, first, last, min, max; then any alarm (a NaN or Inf
value, a rank departing from the others).

--csv and --json write every point instead (rank, step, time, name, value), for a
notebook: pandas.read_csv or read_json(lines=True). Non-finite values are NaN, inf,
-inf (quoted in JSON). With -t the logs are followed until the app ends (Ctrl-C
stops and prints the table).

IDENTIFIER is SCHEDULER://SESSION/APP_ID[/ROLE[/IDS]], as for wick log. Which names
are metrics, the x axis and the alarms are set in a [wick:metrics] section of
.torchxconfig (metrics, ignore, watch, divergence, step, pattern.NAME).

With --sweep ID, or several handles, it compares apps instead: one row per app, with
its swept values, its state, then each metric's last value, its best (the lowest for
a loss, the highest otherwise, over every rank) and the step of the best; sorted by the
best of --sort METRIC (default: the loss). An app whose metric went NaN or Inf, or
whose value at the furthest step every app has reached is more than the divergence
factor (default 3) times the sweep's median there, is marked in the ALARM column.
--csv and --json write the same rows, with an app column.`,
		Args: args(func(cmd *cobra.Command, argv []string) error {
			if isCompare(argv, f.sweep) {
				return nil
			}
			if f.sort != "" {
				return fmt.Errorf("--sort compares apps: give --sweep ID or several handles")
			}
			return cobra.ExactArgs(1)(cmd, argv)
		}),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if isCompare(argv, f.sweep) {
				return a.runCompare(argv, f.sweep, f.sort, f)
			}
			return a.runMetrics(argv[0], f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.csv, "csv", false, "write every point as CSV: rank,step,time,name,value")
	fl.BoolVar(&f.json, "json", false, "write every point as one JSON object per line")
	fl.BoolVarP(&f.follow, "tail", "t", false, "follow the logs until the app ends")
	fl.StringSliceVarP(&f.only, "metric", "m", nil, "only these metrics (comma-separated)")
	fl.StringVar(&f.sweep, "sweep", "", "compare the apps of this sweep, one row per app")
	fl.StringVar(&f.sort, "sort", "", "comparing apps: sort by the best value of this metric (default: the loss)")
	_ = cmd.RegisterFlagCompletionFunc("sweep", a.completeSweepFlag)
	return cmd
}

// metricsConfig reads [wick:metrics] from .torchxconfig.
func (a *app) metricsConfig() (metrics.Config, error) {
	c, err := a.loadConfig()
	if err != nil {
		return metrics.Config{}, err
	}
	mc, err := metrics.ParseConfig(c.Wick("metrics"))
	if err != nil {
		return metrics.Config{}, fmt.Errorf("%s: %w", strings.Join(c.Files(), ", "), err)
	}
	return mc, nil
}

// metricsConfigOf is metricsConfig with the metrics --metric names (only) added to
// its Only.
func (a *app) metricsConfigOf(only []string) (metrics.Config, error) {
	cfg, err := a.metricsConfig()
	if err != nil {
		return metrics.Config{}, err
	}
	for _, m := range only {
		if m = strings.TrimSpace(m); m == "" || len(m) > metrics.MaxNameLen {
			return metrics.Config{}, usagef("--metric: %q is not a metric name", m)
		}
		cfg.Only = append(cfg.Only, m)
	}
	return cfg, nil
}

func (a *app) runMetrics(ident string, f metricsFlags) error {
	if f.csv && f.json {
		return usagef("--csv and --json exclude each other")
	}
	id, err := a.resolveLogID(ident)
	if err != nil {
		return err
	}
	cfg, err := a.metricsConfigOf(f.only)
	if err != nil {
		return err
	}
	r := a.runner()
	d, err := r.Describe(a.ctx, id.Handle)
	if err != nil {
		return err
	}
	if err := errNeverRan(id.Handle, d.Status); err != nil {
		return err
	}
	refs, err := selectReplicas(id, &d.Status, d.App)
	if err != nil {
		return err
	}
	ctx := a.ctx
	if f.follow && !f.csv && !f.json {
		// Ctrl-C ends the following, not the command: the table is still printed.
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	w := bufio.NewWriterSize(a.env.Stdout, 64<<10)
	defer w.Flush()
	out := a.newMetricsPrinter(w, cfg, d, f)
	// A node's group rank learned while the lines are followed names its ranks from
	// then on (the table is drawn with the names known when it is drawn).
	rctx, cancel := context.WithCancel(a.ctx)
	defer cancel()
	if f.follow {
		out.fresh = refreshRanks(rctx, r, id.Handle, d)
	}
	opts := sched.LogOptions{Follow: f.follow, Streams: sched.Combined}
	err = a.streamMetrics(ctx, id.Handle, refs, opts, out.store.Extractor(), ranks.NewTracker(d), out.emit, out.idle)
	if err != nil && !(errors.Is(err, context.Canceled) && a.ctx.Err() == nil) {
		return err
	}
	if !d.Status.State.Terminal() && !ranks.NewTracker(d).StatusKnows() {
		// The app ran while it was read: its latest status may know more ranks.
		if nd, err := r.Describe(a.ctx, id.Handle); err == nil {
			out.names.Update(nd)
		}
	}
	return out.finish(id.Handle, f.only)
}

// metricAlarms reads an app's logs for metric alarms, for describe, with the notices of
// what the reading gave up on (a user pattern too slow). A failure is a
// warning: describe still shows everything else.
func (a *app) metricAlarms(h spec.Handle, d *sched.Description) ([]metrics.Alarm, []string, *metrics.Namer) {
	namer := metrics.NewNamerOf(d)
	cfg, err := a.metricsConfig()
	if err != nil {
		fmt.Fprintf(a.env.Stderr, "wick: metrics: %s\n", render.Escape(oneLine(err.Error())))
		return nil, nil, namer
	}
	store := metrics.NewAlarmStore(cfg)
	if neverStarted(d.Status) {
		// No replica ran (queued in a sweep, a launch rolled back): no log holds a
		// line, and a warning that its files are missing says nothing the status
		// does not.
		return nil, nil, namer
	}
	if _, err := metrics.Read(a.ctx, a.runner(), h, d, time.Time{}, store, namer); err != nil {
		fmt.Fprintf(a.env.Stderr, "wick: metrics: reading the logs: %s\n", render.Escape(oneLine(err.Error())))
	}
	return store.Alarms(), store.Notices(), namer
}

// neverStarted tells an app none of whose replicas ever started: queued in its sweep,
// or ended before its first replica started (a launch interrupted and rolled back).
func neverStarted(st spec.AppStatus) bool {
	if st.State == spec.Queued {
		return true
	}
	if !st.State.Terminal() {
		return false
	}
	n := 0
	for _, role := range st.Roles {
		for _, r := range role.Replicas {
			if !r.Started.IsZero() || r.PID != 0 || r.ContainerID != "" || len(r.Attempts) > 0 {
				return false
			}
			n++
		}
	}
	// A sweep's app cancelled in its queue has no replica at all.
	return n > 0 || st.Sweep != nil
}

// errNeverRan is the error of the logs (or metrics) of an app that ended before any
// of its replicas started, nil for any other: its log files were never made, and the
// scheduler's "no such app" or "open .../lines.idx" said less than its status does.
func errNeverRan(h spec.Handle, st spec.AppStatus) error {
	if st.State == spec.Queued || !neverStarted(st) {
		return nil
	}
	why := st.Msg
	if why == "" {
		why = st.StructuredError
	}
	if why != "" {
		why = " (" + oneLine(why) + ")"
	}
	return fmt.Errorf("%s is %s and none of its replicas ever started%s: it has no logs", h, st.State, why)
}
