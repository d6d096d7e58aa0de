package cli

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/render"
)

// metricsRedraw is how often a followed table is redrawn on a terminal: often enough
// to watch a loss fall, rarely enough not to flicker.
const metricsRedraw = time.Second

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
