// Package chart draws metric series as text: a line chart in braille dots with axes
// and a legend, and one-line sparklines. It draws engine/metrics points and knows
// nothing of the wall; colors come from the caller.
//
// A chart never draws more points than it has dots: each series is bucketed into the
// columns of the plot (two dots per cell) and each column draws the span between its
// lowest and highest value (joined to the previous column), so a spike is never lost
// and the work after one pass over the points depends only on the chart's size.
package chart

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/engine/metrics"
)

// Series is one line of a chart.
type Series struct {
	Label  string
	Points []metrics.Point
}

// Options shape a chart.
type Options struct {
	// Width and Height are the chart's size in cells, axes and legend included.
	Width, Height int
	// Log draws the y axis on a log scale (values at or below zero are left out).
	Log bool
	// Smooth is the EMA weight of the previous value, 0 (off) to below 1, as
	// TensorBoard's smoothing slider: 0.6 is a good start for a noisy loss.
	Smooth float64
	// LastN, when positive, shows only the last N steps (or, on a time axis, the last
	// N seconds).
	LastN int64
	// Style colors a series' dots and legend mark; i is the series' index. Nil draws
	// without color.
	Style func(i int, s string) string
	// Dim styles the axes and labels. Nil draws them plain.
	Dim func(s string) string
}

// Minimum size of a chart: below it Render draws only a note.
const (
	MinWidth  = 24
	MinHeight = 5
)

const yLabelWidth = 9 // "-1.23e-05" fits

// Render draws the series on one set of axes, x being the step when a point has one
// (points without one are then left out: values read before a rank's first step, as
// a progress bar's) and the time otherwise, with a legend giving each series' last value. The
// result has exactly o.Height lines of o.Width cells.
func Render(series []Series, o Options) string {
	if o.Style == nil {
		o.Style = func(_ int, s string) string { return s }
	}
	if o.Dim == nil {
		o.Dim = func(s string) string { return s }
	}
	if o.Width < MinWidth || o.Height < MinHeight {
		return fit("(chart needs "+strconv.Itoa(MinWidth)+"x"+strconv.Itoa(MinHeight)+")", o.Width, o.Height)
	}
	sc := newScale(series, o)
	if math.IsInf(sc.ymin, 0) {
		return fit("no values to draw", o.Width, o.Height)
	}
	legendLines := legendHeight(series, o.Width)
	plotH := o.Height - 2 - legendLines // x axis and its labels
	if plotH < 2 {
		legendLines = 0
		plotH = o.Height - 2
	}
	c := newCanvas(o.Width-yLabelWidth-1, plotH)
	for i, s := range series {
		c.plot(&sc, i, s)
	}
	var b strings.Builder
	c.write(&b, &sc)
	b.WriteString(o.Dim(strings.Repeat(" ", yLabelWidth) + "└" + strings.Repeat("─", c.w)))
	b.WriteByte('\n')
	b.WriteString(o.Dim(xAxisLabels(sc.xmin, sc.xmax, sc.useStep, c.w)))
	if legendLines > 0 {
		b.WriteByte('\n')
		b.WriteString(legend(series, o.Width, legendLines, o.Style))
	}
	return fit(b.String(), o.Width, o.Height)
}

// scale places the points of a chart: which points are drawn and where, on the x
// axis (step or time) and the y axis (linear or log), over the ranges of the points
// drawn.
type scale struct {
	o       Options
	useStep bool    // x is the step (a point has one), else the time in seconds
	lo      float64 // the first x shown (LastN), -Inf for all
	// The ranges of the points drawn, widened when they are a single value. ymin is
	// +Inf when there is none.
	xmin, xmax, ymin, ymax float64
}

func newScale(series []Series, o Options) scale {
	sc := scale{o: o, lo: math.Inf(-1)}
	for _, s := range series {
		for _, p := range s.Points {
			if p.Step >= 0 {
				sc.useStep = true
				break
			}
		}
	}
	sc.xmin, sc.xmax = math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for i := len(s.Points) - 1; i >= 0; i-- {
			if p := s.Points[i]; !sc.useStep || p.Step >= 0 {
				sc.xmax = max(sc.xmax, sc.x(p))
				break
			}
		}
	}
	if o.LastN > 0 && !math.IsInf(sc.xmax, 0) {
		sc.lo = sc.xmax - float64(o.LastN)
	}
	sc.ymin, sc.ymax = math.Inf(1), math.Inf(-1)
	var buf []xy
	for _, s := range series {
		buf = sc.fill(s, buf)
		// Comparisons, not min and max: those mind NaN, which fill leaves out, and
		// cost a 100 x 10k overlay a fifth of its time.
		for _, q := range buf {
			if q.x < sc.xmin {
				sc.xmin = q.x
			}
			if q.x > sc.xmax {
				sc.xmax = q.x
			}
			if q.y < sc.ymin {
				sc.ymin = q.y
			}
			if q.y > sc.ymax {
				sc.ymax = q.y
			}
		}
	}
	if sc.ymax == sc.ymin {
		sc.ymin, sc.ymax = sc.ymin-0.5, sc.ymax+0.5
		if o.Log {
			sc.ymin, sc.ymax = sc.ymin+0.4, sc.ymax-0.4
		}
	}
	if sc.xmax == sc.xmin {
		sc.xmax = sc.xmin + 1
	}
	return sc
}

// x is the x of point p: its step, or its time in seconds.
func (sc *scale) x(p metrics.Point) float64 {
	if sc.useStep {
		return float64(p.Step)
	}
	return float64(p.Time) / 1e9
}

// xy is a point as drawn: its x, and its y on the y scale.
type xy struct{ x, y float64 }

// fill returns the points of a series as drawn (finite, smoothed, in the window, on
// the y scale) in buf, reused. The ranges and the dots are two passes over them, each
// a loop of its own: a callback per point cost a 100 x 10k overlay a third of its time.
func (sc *scale) fill(s Series, buf []xy) []xy {
	buf = buf[:0]
	ema, started := 0.0, false
	smooth := sc.o.Smooth > 0 && sc.o.Smooth < 1
	for _, p := range s.Points {
		v := p.Value
		if v-v != 0 { // NaN or ±Inf, in one test
			continue
		}
		if smooth {
			if !started {
				ema, started = v, true
			} else {
				ema = sc.o.Smooth*ema + (1-sc.o.Smooth)*v
			}
			v = ema
		}
		if sc.useStep && p.Step < 0 {
			continue // read before the first step (a progress bar's value)
		}
		x := sc.x(p)
		if x < sc.lo {
			continue
		}
		if sc.o.Log {
			if v <= 0 {
				continue
			}
			v = math.Log10(v)
		}
		buf = append(buf, xy{x, v})
	}
	return buf
}

// canvas is the plot area: w x h braille cells, two dots wide and four high each.
type canvas struct {
	w, h  int
	cells []uint8 // braille bits
	owner []int8  // the series drawn last in a cell, +1
	buf   []xy    // the points of the series being drawn
}

func newCanvas(w, h int) *canvas {
	return &canvas{w: w, h: h, cells: make([]uint8, w*h), owner: make([]int8, w*h)}
}

// set sets the dot at (dx, dy), counted from the bottom left, for series i.
func (c *canvas) set(dx, dy, i int) {
	dotsW, dotsH := c.w*2, c.h*4
	if dx < 0 || dx >= dotsW || dy < 0 || dy >= dotsH {
		return
	}
	dy = dotsH - 1 - dy // dot rows count down from the top
	k := dy/4*c.w + dx/2
	c.cells[k] |= brailleBit[dx%2][dy%4]
	c.owner[k] = int8(i%127 + 1)
}

// plot draws series i. Its points are bucketed into dot columns, keeping each
// column's first, min, max and last value; a column draws the span from its min to
// its max, and a line joins it to the previous column's last value.
func (c *canvas) plot(sc *scale, i int, s Series) {
	dotsW, dotsH := c.w*2, c.h*4
	// Spans as halves: ymax-ymin overflows to Inf for values near the float64 range.
	yspan := sc.ymax/2 - sc.ymin/2
	colY := func(y float64) int {
		return int(math.Round(min(1, max(0, (y/2-sc.ymin/2)/yspan)) * float64(dotsH-1)))
	}
	xscale := float64(dotsW-1) / (sc.xmax - sc.xmin)
	col := -1
	var cfirst, cmin, cmax, clast float64
	prevCol, prevY := -1, 0
	flush := func() {
		if col < 0 {
			return
		}
		if prevCol >= 0 {
			line(prevCol, prevY, col, colY(cfirst), func(x, y int) { c.set(x, y, i) })
		}
		for y := colY(cmin); y <= colY(cmax); y++ {
			c.set(col, y, i)
		}
		prevCol, prevY = col, colY(clast)
	}
	c.buf = sc.fill(s, c.buf)
	for _, q := range c.buf {
		if k := int((q.x - sc.xmin) * xscale); k != col {
			flush()
			col, cfirst, cmin, cmax = k, q.y, q.y, q.y
		}
		if q.y < cmin {
			cmin = q.y
		}
		if q.y > cmax {
			cmax = q.y
		}
		clast = q.y
	}
	flush()
}

// write writes the plot's rows, each after its y label and tick: the top row is
// labeled with the highest value, the bottom one with the lowest, and the middle
// one (when there are 5 rows or more) with the value half-way.
func (c *canvas) write(b *strings.Builder, sc *scale) {
	o := &sc.o
	for row := range c.h {
		lbl := c.yLabel(row, sc)
		tick := "│"
		if lbl != "" {
			tick = "┤"
		}
		b.WriteString(o.Dim(padLeft(lbl, yLabelWidth) + tick))
		for col := range c.w {
			k := row*c.w + col
			if c.cells[k] == 0 {
				b.WriteByte(' ')
				continue
			}
			b.WriteString(o.Style(int(c.owner[k]-1), string(rune(0x2800+int(c.cells[k])))))
		}
		b.WriteByte('\n')
	}
}

// yLabel is the label of plot row row, "" for a row without one.
func (c *canvas) yLabel(row int, sc *scale) string {
	switch row {
	case 0:
		return axisValue(sc.ymax, sc.o.Log)
	case c.h - 1:
		return axisValue(sc.ymin, sc.o.Log)
	case (c.h - 1) / 2:
		if c.h >= 5 {
			f := float64(c.h-1-row) / float64(c.h-1)
			return axisValue(sc.ymin*(1-f)+sc.ymax*f, sc.o.Log)
		}
	}
	return ""
}

// xAxisLabels is the line under the x axis of a plot w cells wide: its two ends
// under its ends and the axis's name ("step" or "time") between them, when it fits.
func xAxisLabels(xmin, xmax float64, useStep bool, w int) string {
	left, right := xLabels(xmin, xmax, useStep)
	axis := "step"
	if !useStep {
		axis = "time"
	}
	gap := w - len(left) - len(right)
	xl := strings.Repeat(" ", yLabelWidth+1) + left
	if gap >= len(axis)+2 {
		pad := (gap - len(axis)) / 2
		xl += strings.Repeat(" ", pad) + axis + strings.Repeat(" ", gap-pad-len(axis)) + right
	} else if gap >= 1 {
		xl += strings.Repeat(" ", gap) + right
	}
	return xl
}

// line calls set for the dots of the segment from (x0, y0) to (x1, y1) (Bresenham).
func line(x0, y0, x1, y1 int, set func(x, y int)) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := 1, 1
	if x0 > x1 {
		sx = -1
	}
	if y0 > y1 {
		sy = -1
	}
	err := dx + dy
	for {
		set(x0, y0)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * err
		if e2 >= dy {
			err += dy
			x0 += sx
		}
		if e2 <= dx {
			err += dx
			y0 += sy
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// brailleBit[x][y] is the bit of the dot at column x (0, 1) and row y (0 top, 3) of a
// braille cell.
var brailleBit = [2][4]uint8{{0x01, 0x02, 0x04, 0x40}, {0x08, 0x10, 0x20, 0x80}}

// legendEntry is "● label last".
func legendEntry(s Series) string {
	e := s.Label
	if n := len(s.Points); n > 0 {
		e += " " + short(s.Points[n-1].Value)
	}
	return e
}

// legendHeight is the lines the legend takes at width w (at most 3; the rest is cut).
func legendHeight(series []Series, w int) int {
	if len(series) == 0 {
		return 0
	}
	lines, used := 1, 0
	for _, s := range series {
		n := 2 + ansi.StringWidth(legendEntry(s)) + 2
		if used > 0 && used+n > w {
			lines++
			used = 0
		}
		used += n
	}
	return min(lines, 3)
}

func legend(series []Series, w, maxLines int, style func(int, string) string) string {
	var lines []string
	var cur strings.Builder
	used := 0
	for i, s := range series {
		e := legendEntry(s)
		n := 2 + ansi.StringWidth(e) + 2
		if used > 0 && used+n > w {
			lines = append(lines, cur.String())
			cur.Reset()
			used = 0
			if len(lines) == maxLines {
				break
			}
		}
		cur.WriteString(style(i, "●") + " " + e + "  ")
		used += n
	}
	if len(lines) < maxLines && cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	return strings.Join(lines, "\n")
}

// fit makes s exactly h lines of w cells: cut or padded.
func fit(s string, w, h int) string {
	if w <= 0 || h <= 0 {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	for i, l := range lines {
		lw := ansi.StringWidth(l)
		if lw > w {
			l = ansi.Truncate(l, w, "")
			lw = ansi.StringWidth(l)
		}
		lines[i] = l + strings.Repeat(" ", w-lw)
	}
	return strings.Join(lines, "\n")
}

func padLeft(s string, w int) string {
	if len(s) >= w {
		return s[:w]
	}
	return strings.Repeat(" ", w-len(s)) + s
}

// axisValue labels a y value (undoing the log scale).
func axisValue(v float64, log bool) string {
	if log {
		v = math.Pow(10, v)
	}
	return short(v)
}

// short writes a value in at most 9 characters.
func short(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return metrics.FormatValue(v)
	}
	s := strconv.FormatFloat(v, 'g', 4, 64)
	if len(s) > yLabelWidth {
		s = strconv.FormatFloat(v, 'e', 2, 64)
	}
	return s
}

// xLabels are the x axis's two ends. On a time axis spanning less than a minute (a
// fast app), the right end is the time since the left one ("+850ms", "+12.3s"):
// two clock times to the second would read the same.
func xLabels(xmin, xmax float64, step bool) (left, right string) {
	left, right = xValue(xmin, step), xValue(xmax, step)
	if span := xmax - xmin; !step && span >= 0 && span < 60 {
		if span < 1 {
			right = fmt.Sprintf("+%dms", int(span*1000))
		} else {
			right = fmt.Sprintf("+%.1fs", span)
		}
	}
	return left, right
}

func xValue(x float64, step bool) string {
	if step {
		return strconv.FormatInt(int64(x), 10)
	}
	return time.Unix(0, int64(x*1e9)).Local().Format(time.TimeOnly)
}

// sparks are the eight heights of a sparkline.
var sparks = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws points as at most width cells, one bucket of consecutive points
// per cell (the mean of its finite values); a bucket holding a NaN or Inf is drawn as
// '!'. Fewer points than cells give a shorter line.
func Sparkline(points []metrics.Point, width int) string {
	if width <= 0 || len(points) == 0 {
		return ""
	}
	n := min(width, len(points))
	means := make([]float64, n)
	bad := make([]bool, n)
	lo, hi := math.Inf(1), math.Inf(-1)
	for c := range n {
		a, b := c*len(points)/n, (c+1)*len(points)/n
		mean, k := 0.0, 0
		for _, p := range points[a:b] {
			if math.IsNaN(p.Value) || math.IsInf(p.Value, 0) {
				bad[c] = true
				continue
			}
			k++
			// A running mean: a sum of large finite values would overflow to Inf.
			mean += p.Value/float64(k) - mean/float64(k)
		}
		if k == 0 {
			means[c] = math.NaN()
			continue
		}
		means[c] = mean
		lo, hi = min(lo, means[c]), max(hi, means[c])
	}
	var b strings.Builder
	for c, m := range means {
		switch {
		case bad[c]:
			b.WriteByte('!')
		case math.IsNaN(m):
			b.WriteByte(' ')
		case hi == lo:
			b.WriteRune(sparks[len(sparks)/2])
		default:
			// (m-lo)/(hi-lo) as m/span-lo/span: hi-lo overflows for values near the
			// float64 range.
			span := hi/2 - lo/2
			f := min(1, max(0, (m/2-lo/2)/span))
			b.WriteRune(sparks[int(f*float64(len(sparks)-1)+0.5)])
		}
	}
	return b.String()
}
