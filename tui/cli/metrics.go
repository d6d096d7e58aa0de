package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
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

// metricsRedraw is how often a followed table is redrawn on a terminal: often enough
// to watch a loss fall, rarely enough not to flicker.
const metricsRedraw = time.Second

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
	err = a.streamMetrics(ctx, id.Handle, refs, opts, out.store.Extractor(), out.emit, out.idle)
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

// metricsPrinter is what `wick metrics` of one app writes as its lines come: every
// point (--csv, --json), or the table of its metrics, redrawn while it follows the logs
// on a terminal, and printed at the end.
type metricsPrinter struct {
	a      *app
	w      *bufio.Writer
	store  *metrics.Store
	names  *metrics.Namer
	pw     *pointWriter
	points bool      // --csv or --json: every point, no table
	live   bool      // the table is redrawn while the logs are followed
	drawn  int       // lines of the last live table, to redraw over
	last   time.Time // when it was drawn
	// fresh hands newer descriptions of the app while it is followed (refreshRanks).
	fresh <-chan *sched.Description
}

// refresh takes a newer description of the app, if one came: the ranks it names.
func (m *metricsPrinter) refresh() {
	select {
	case d, ok := <-m.fresh:
		if !ok {
			m.fresh = nil
			return
		}
		m.names.Update(d)
	default:
	}
}

// newMetricsPrinter returns the printer of the metrics read with cfg from the logs of
// the app d describes, as the flags f ask, writing to w (the CSV header at once).
func (a *app) newMetricsPrinter(w *bufio.Writer, cfg metrics.Config, d *sched.Description, f metricsFlags) *metricsPrinter {
	names := metrics.NewNamerOf(d)
	m := &metricsPrinter{
		a:      a,
		w:      w,
		store:  metrics.NewStore(cfg),
		names:  names,
		pw:     &pointWriter{w: w, csv: f.csv, name: names.Name},
		points: f.csv || f.json,
		live:   f.follow && !f.csv && !f.json && a.env.StdoutTTY,
	}
	if f.csv {
		w.WriteString("rank,step,time,name,value\n")
	}
	return m
}

// emit takes a line with its values extracted: what Store.Add does (see
// streamMetrics), and the line's points when they are printed.
// A progress bar's earlier drawings come first, each a point of its own, with drawing
// set: the line itself is observed once, with its last drawing.
func (m *metricsPrinter) emit(l sched.Line, p *metrics.Parsed, drawing bool) {
	if !drawing {
		m.refresh()
		m.names.Observe(l)
	}
	if l.Pending || !p.Telling() {
		return
	}
	rank := metrics.Rank{Role: l.Role, Replica: l.Replica, Local: p.Local}
	m.store.AddLine(rank, l.Time, p)
	if len(p.Samples) == 0 || !m.points {
		return
	}
	m.pw.write(rank, m.store.StepOf(rank, p), l.Time, p.Samples)
}

// idle is called when the lines pause: a live table is redrawn (at most every
// metricsRedraw), and what is written is flushed.
func (m *metricsPrinter) idle() error {
	m.refresh()
	if m.live && time.Since(m.last) >= metricsRedraw {
		m.last = time.Now()
		m.erase()
		m.drawn = m.a.writeMetricsTable(m.w, m.store, m.names)
	}
	return m.w.Flush()
}

// erase moves up over the last live table and clears it.
func (m *metricsPrinter) erase() {
	if m.drawn > 0 {
		fmt.Fprintf(m.w, "\r\x1b[%dA\x1b[J", m.drawn)
	}
}

// finish writes what comes after the last line of the app h: the table (over the
// live one), or a notice on stderr when no metric was found.
func (m *metricsPrinter) finish(h spec.Handle, only []string) error {
	if m.points {
		if err := m.w.Flush(); err != nil {
			return err
		}
		return m.unmatched(h, only)
	}
	m.erase()
	if len(m.store.AllNames()) == 0 {
		if len(only) > 0 {
			return m.unmatched(h, only)
		}
		fmt.Fprintf(m.a.env.Stderr, "wick: no metrics found in the logs of %s\n", h)
		return nil
	}
	m.a.writeMetricsTable(m.w, m.store, m.names)
	if err := m.w.Flush(); err != nil {
		return err
	}
	return m.unmatched(h, only)
}

// unmatched says which metrics -m named that no line had (a typo: -m lss): an error
// when none of them was found, which printed nothing and exited 0 before, else a
// warning beside the others' table.
func (m *metricsPrinter) unmatched(h spec.Handle, only []string) error {
	found := map[string]bool{}
	for _, n := range m.store.AllNames() {
		found[n] = true
	}
	var missing []string
	for _, n := range only {
		if n = strings.TrimSpace(n); !found[metrics.CanonicalName(n)] && !found[n] {
			missing = append(missing, render.Escape(n))
		}
	}
	switch {
	case len(missing) == 0:
		return nil
	case len(missing) == len(only):
		return fmt.Errorf("-m %s matched no metric in the logs of %s (without -m, wick metrics lists the metrics found)", strings.Join(missing, ","), h)
	}
	fmt.Fprintf(m.a.env.Stderr, "wick: warning: -m %s matched no metric in the logs of %s\n", strings.Join(missing, ","), h)
	return nil
}

// extractBatch is how many lines streamMetrics extracts before handing them over at
// once: a channel send per line would cost about as much as extracting it.
const extractBatch = 256

// streamMetrics is streamLogs for `wick metrics`, in two goroutines: one reads the
// merged lines and extracts their values with ext, the other (the caller's) gets each
// line with its values, in order, by emit, and calls idle where streamLogs would. The
// calls are the ones streamLogs with Store.Add would make, in the same order; only
// the extraction, which needs no state, runs beside them, on another core: with two
// cores, `wick metrics --csv` of 1M lines takes 40% less time (BenchmarkMetricsCSV).
func (a *app) streamMetrics(ctx context.Context, h spec.Handle, refs []replicaRef, opts sched.LogOptions,
	ext *metrics.Extractor, emit func(l sched.Line, p *metrics.Parsed, drawing bool), idle func() error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	full := make(chan *extracted, 1)
	free := make(chan *extracted, 2)
	var readErr error
	var notices []string // what the extraction gave up on (a slow pattern)
	go func() {
		defer close(full)
		var p metrics.Parsed
		defer func() { notices = p.Notices() }()
		b := &extracted{}
		hand := func(idle bool) {
			b.idle = idle
			full <- b // the caller takes every batch until full is closed
			select {
			case b = <-free:
				b.reset()
			default:
				b = &extracted{}
			}
		}
		readErr = a.streamLogs(ctx, h, refs, opts, func(l sched.Line) error {
			b.add(ext, l, &p)
			if len(b.lines) == extractBatch {
				hand(false)
			}
			return nil
		}, func() error {
			hand(true)
			return nil
		})
		if len(b.lines) > 0 {
			hand(false)
		}
	}()
	var p metrics.Parsed
	for b := range full {
		for i, l := range b.lines {
			v := &b.values[i]
			for _, d := range b.draws[v.draws:v.drawsEnd] { // a bar's earlier drawings: points of their own
				p.Samples, p.LineInfo = b.samples[d.lo:d.hi:d.hi], d.info
				emit(l, &p, true)
			}
			p.Samples, p.LineInfo = b.samples[v.lo:v.hi:v.hi], v.info
			emit(l, &p, false)
		}
		if b.idle {
			if err := idle(); err != nil {
				cancel()
				for range full { // until the reader has stopped
				}
				return err
			}
		}
		select {
		case free <- b:
		default:
		}
	}
	for _, n := range notices {
		fmt.Fprintf(a.env.Stderr, "wick: metrics: %s\n", n)
	}
	return readErr
}

// extracted are lines and the values extracted from them.
type extracted struct {
	lines   []sched.Line
	values  []lineValues
	draws   []lineValues
	samples []metrics.Sample
	// idle is whether the merged logs had no line ready after the last line.
	idle bool
}

// lineValues is a line's metrics.Parsed, its samples a range of extracted.samples.
type lineValues struct {
	lo, hi int
	info   metrics.LineInfo
	// draws and drawsEnd are the line's earlier drawings with values (a progress
	// bar's, see metrics.Parsed.Drawings), extracted.draws[draws:drawsEnd].
	draws, drawsEnd int
}

// add extracts the values of l with p and keeps both. Pending lines have none, as in
// Store.Add.
func (b *extracted) add(ext *metrics.Extractor, l sched.Line, p *metrics.Parsed) {
	if l.Pending {
		p.Reset()
	} else {
		ext.Extract(l.Text, p)
	}
	d := len(b.draws)
	p.Drawings(func(info metrics.LineInfo, samples []metrics.Sample) {
		lo := len(b.samples)
		b.samples = append(b.samples, samples...)
		b.draws = append(b.draws, lineValues{lo: lo, hi: len(b.samples), info: info})
	})
	lo := len(b.samples)
	b.samples = append(b.samples, p.Samples...)
	b.lines = append(b.lines, l)
	b.values = append(b.values, lineValues{lo, len(b.samples), p.LineInfo, d, len(b.draws)})
}

// reset empties b for reuse, keeping no line's text.
func (b *extracted) reset() {
	clear(b.lines)
	b.lines, b.values, b.samples, b.draws, b.idle = b.lines[:0], b.values[:0], b.samples[:0], b.draws[:0], false
}

// metricsHeaders are the columns of the table of `wick metrics`.
var metricsHeaders = []string{"NAME", "RANKS", "COUNT", "FIRST", "LAST", "MIN", "MAX"}

// writeMetricsTable writes the table of metrics, the settings apart (a value that
// stayed the same on every line: a batch size, v_num) and the alarms, and returns the
// number of lines written.
func (a *app) writeMetricsTable(w io.Writer, s *metrics.Store, names *metrics.Namer) int {
	var rows, settings [][]string
	units := false
	sums := s.Summaries()
	for _, m := range sums {
		units = units || m.Unit != "" && !m.Setting
	}
	headers := metricsHeaders
	if units {
		headers = append(append([]string(nil), metricsHeaders[:1]...), append([]string{"UNIT"}, metricsHeaders[1:]...)...)
	}
	for _, m := range sums {
		if m.Setting {
			settings = append(settings, []string{m.Name, fmtValue(m.Last.Value)})
			continue
		}
		row := []string{m.Name}
		if units {
			row = append(row, m.Unit)
		}
		// RANKS counts torch's global ranks (see Namer.Ranks), not the series.
		rows = append(rows, append(row, strconv.Itoa(names.Ranks(s.Series(m.Name))), strconv.FormatInt(m.Count, 10),
			fmtValue(m.First.Value), fmtValue(m.Last.Value), fmtValue(m.Min), fmtValue(m.Max)))
	}
	st := a.out()
	n := 0
	if len(rows) > 0 {
		table := render.Table(headers, rows, st)
		io.WriteString(w, table)
		n += strings.Count(table, "\n")
	}
	if len(settings) > 0 {
		if n > 0 {
			io.WriteString(w, "\n")
			n++
		}
		table := render.Table([]string{"SETTING", "VALUE"}, settings, st)
		io.WriteString(w, table)
		n += strings.Count(table, "\n")
	}
	return n + writeAlarms(w, s.Alarms(), names.Name, st)
}

// writeAlarms lists metric alarms under a header, as `wick metrics` and `wick
// describe` show them, and returns the number of lines written.
func writeAlarms(w io.Writer, alarms []metrics.Alarm, name func(metrics.Rank) string, st render.Styler) int {
	if len(alarms) == 0 {
		return 0
	}
	fmt.Fprintf(w, "\n%s\n", st.Header("ALARMS"))
	for _, al := range alarms {
		fmt.Fprintf(w, "  %s %s\n", st.Error("!"), al.DescribeWith(name))
	}
	return len(alarms) + 2
}

// fmtValue writes a table cell: at most 6 significant digits.
func fmtValue(v float64) string {
	s := strconv.FormatFloat(v, 'g', 6, 64)
	if t := metrics.FormatValue(v); len(t) <= len(s) {
		return t
	}
	return s
}

// pointWriter writes metric points as CSV or JSON lines.
type pointWriter struct {
	w   *bufio.Writer
	csv bool
	buf []byte
	// What every point of a line shares, formatted once: rank, step and time (CSV),
	// or the JSON up to the name.
	head []byte
	name func(metrics.Rank) string
}

// write writes the points of one line.
func (p *pointWriter) write(r metrics.Rank, step int64, t time.Time, samples []metrics.Sample) {
	rank := p.name(r)
	h := p.head[:0]
	if p.csv {
		h = append(h, rank...)
		h = append(h, ',')
		if step >= 0 {
			h = strconv.AppendInt(h, step, 10)
		}
		h = append(h, ',')
		h = t.UTC().AppendFormat(h, time.RFC3339Nano)
		h = append(h, ',')
	} else {
		h = append(h, `{"rank":`...)
		h = metrics.AppendJSONString(h, rank)
		h = append(h, `,"step":`...)
		if step >= 0 {
			h = strconv.AppendInt(h, step, 10)
		} else {
			h = append(h, "null"...)
		}
		h = append(h, `,"time":"`...)
		h = t.UTC().AppendFormat(h, time.RFC3339Nano)
		h = append(h, `","name":`...)
	}
	p.head = h
	b := p.buf[:0]
	for _, s := range samples {
		b = append(b, h...)
		if p.csv {
			b = appendCSV(b, s.Name)
			b = append(b, ',')
			b = metrics.AppendValue(b, s.Value)
		} else {
			b = metrics.AppendJSONString(b, s.Name)
			b = append(b, `,"value":`...)
			b = metrics.AppendJSONValue(b, s.Value)
			b = append(b, '}')
		}
		b = append(b, '\n')
	}
	p.buf = b
	p.w.Write(b)
}

// appendCSV appends a CSV field, quoted when it needs to be.
func appendCSV(b []byte, s string) []byte {
	if !strings.ContainsAny(s, ",\"\r\n") {
		return append(b, s...)
	}
	return append(append(b, '"'), strings.ReplaceAll(s, `"`, `""`)+`"`...)
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
