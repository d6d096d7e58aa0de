package render

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
)

// CompareRow is one app of a comparison of apps (`wick metrics --sweep`, the UI's
// compare view): its id, swept values, state and metrics.
type CompareRow struct {
	AppID  string
	Values map[string]string // nil: not of a sweep
	State  spec.AppState
	Run    *sweep.Run
}

// Compare writes the comparison of apps: a title saying the order, then one row per
// app: its swept values (names), its state, each metric's last value, best value and
// step of the best, and why it stands out (ALARM).
func Compare(w io.Writer, rows []CompareRow, names, metricNames []string, sortBy string, st Styler) error {
	heads := []string{"APP"}
	for _, n := range names {
		heads = append(heads, strings.ToUpper(Escape(n)))
	}
	heads = append(heads, "STATE")
	for _, m := range metricNames {
		heads = append(heads, "LAST "+strings.ToUpper(Escape(m)), "BEST", "@STEP")
	}
	heads = append(heads, "ALARM")
	cells := make([][]string, len(rows))
	for i, c := range rows {
		row := []string{Escape(c.AppID)}
		for _, n := range names {
			v := "-"
			if x, ok := c.Values[n]; ok {
				v = Escape(x)
			}
			row = append(row, v)
		}
		row = append(row, st.State(c.State, c.State.String()))
		for _, m := range metricNames {
			row = append(row, statCells(c.Run.Stats[m])...)
		}
		alarm := ""
		if c.Run.Alarm != "" {
			alarm = st.Error("! " + Escape(c.Run.Alarm))
		}
		cells[i] = append(row, alarm)
	}
	if sortBy != "" {
		what := "lowest"
		if !metrics.LowerIsBetter(sortBy) {
			what = "highest"
		}
		fmt.Fprintf(w, "%s · sorted by the %s best %s\n", spec.Count(len(rows), "app"), what, Escape(sortBy))
	}
	_, err := io.WriteString(w, Table(heads, cells, st))
	return err
}

func statCells(s *sweep.Stat) []string {
	if s == nil {
		return []string{"-", "-", "-"}
	}
	step, best := "-", "-"
	if !math.IsNaN(s.Best.Value) {
		best = MetricValue(s.Best.Value)
		if s.Best.Step >= 0 {
			step = strconv.FormatInt(s.Best.Step, 10)
		}
	}
	return []string{MetricValue(s.Last.Value), best, step}
}

// MetricValue prints a metric's value in its shortest exact-enough form (6
// significant digits, or metrics.FormatValue's when shorter).
func MetricValue(v float64) string {
	s := strconv.FormatFloat(v, 'g', 6, 64)
	if t := metrics.FormatValue(v); len(t) <= len(s) {
		return t
	}
	return s
}
