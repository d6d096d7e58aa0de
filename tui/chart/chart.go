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

// Render draws the series on one set of axes, x being the step when every point has
// one and the time otherwise, with a legend giving each series' last value. The
// result has exactly o.Height lines of o.Width cells.
func Render(series []Series, o Options) string {
	style, dim := o.Style, o.Dim
	if style == nil {
		style = func(_ int, s string) string { return s }
	}
	if dim == nil {
		dim = func(s string) string { return s }
	}
	if o.Width < MinWidth || o.Height < MinHeight {
		return fit("(chart needs "+strconv.Itoa(MinWidth)+"x"+strconv.Itoa(MinHeight)+")", o.Width, o.Height)
	}
	useStep := true
	for _, s := range series {
		for _, p := range s.Points {
			if p.Step < 0 {
				useStep = false
				break
			}
		}
	}
	xOf := func(p metrics.Point) float64 {
		if useStep {
			return float64(p.Step)
		}
		return float64(p.Time) / 1e9
	}
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		if n := len(s.Points); n > 0 {
			xmax = max(xmax, xOf(s.Points[n-1]))
		}
	}
	lo := math.Inf(-1)
	if o.LastN > 0 && !math.IsInf(xmax, 0) {
		lo = xmax - float64(o.LastN)
	}
	// each calls fn with the points of a series as drawn: finite, smoothed, in the
	// window, on the y scale. Two passes (ranges, then dots) copy nothing.
	each := func(s Series, fn func(x, y float64)) {
		ema, started := 0.0, false
		smooth := o.Smooth > 0 && o.Smooth < 1
		for _, p := range s.Points {
			v := p.Value
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			if smooth {
				if !started {
					ema, started = v, true
				} else {
					ema = o.Smooth*ema + (1-o.Smooth)*v
				}
				v = ema
			}
			x := xOf(p)
			if x < lo {
				continue
			}
			if o.Log {
				if v <= 0 {
					continue
				}
				v = math.Log10(v)
			}
			fn(x, v)
		}
	}
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		each(s, func(x, y float64) {
			xmin, xmax = min(xmin, x), max(xmax, x)
			ymin, ymax = min(ymin, y), max(ymax, y)
		})
	}
	legendLines := legendHeight(series, o.Width)
	plotH := o.Height - 2 - legendLines // x axis and its labels
	plotW := o.Width - yLabelWidth - 1
	if plotH < 2 {
		legendLines = 0
		plotH = o.Height - 2
	}
	if math.IsInf(ymin, 0) {
		return fit("no values to draw", o.Width, o.Height)
	}
	if ymax == ymin {
		ymin, ymax = ymin-0.5, ymax+0.5
		if o.Log {
			ymin, ymax = ymin+0.4, ymax-0.4
		}
	}
	if xmax == xmin {
		xmax = xmin + 1
	}
	dotsW, dotsH := plotW*2, plotH*4
	cells := make([]uint8, plotW*plotH) // braille bits
	owner := make([]int8, plotW*plotH)  // the series drawn last in a cell, +1
	set := func(dx, dy, i int) {
		if dx < 0 || dx >= dotsW || dy < 0 || dy >= dotsH {
			return
		}
		dy = dotsH - 1 - dy // dot rows count down from the top
		c := dy/4*plotW + dx/2
		cells[c] |= brailleBit[dx%2][dy%4]
		owner[c] = int8(i%127 + 1)
	}
	// Spans as halves: ymax-ymin overflows to Inf for values near the float64 range.
	yspan := ymax/2 - ymin/2
	colY := func(y float64) int {
		return int(math.Round(min(1, max(0, (y/2-ymin/2)/yspan)) * float64(dotsH-1)))
	}
	xscale := float64(dotsW-1) / (xmax - xmin)
	for i, s := range series {
		// Bucket into dot columns, keeping each column's first, min, max and last
		// value; a column draws the span from its min to its max, and a line joins it
		// to the previous column's last value.
		col := -1
		var cfirst, cmin, cmax, clast float64
		prevCol, prevY := -1, 0
		flush := func() {
			if col < 0 {
				return
			}
			if prevCol >= 0 {
				line(prevCol, prevY, col, colY(cfirst), func(x, y int) { set(x, y, i) })
			}
			for y := colY(cmin); y <= colY(cmax); y++ {
				set(col, y, i)
			}
			prevCol, prevY = col, colY(clast)
		}
		each(s, func(x, y float64) {
			if c := int((x - xmin) * xscale); c != col {
				flush()
				col, cfirst, cmin, cmax = c, y, y, y
			}
			cmin, cmax, clast = min(cmin, y), max(cmax, y), y
		})
		flush()
	}
	var b strings.Builder
	yLabel := func(row int) string {
		switch row {
		case 0:
			return axisValue(ymax, o.Log)
		case plotH - 1:
			return axisValue(ymin, o.Log)
		case (plotH - 1) / 2:
			if plotH >= 5 {
				f := float64(plotH-1-row) / float64(plotH-1)
				return axisValue(ymin*(1-f)+ymax*f, o.Log)
			}
		}
		return ""
	}
	for row := range plotH {
		lbl := yLabel(row)
		tick := "│"
		if lbl != "" {
			tick = "┤"
		}
		b.WriteString(dim(padLeft(lbl, yLabelWidth) + tick))
		for c := range plotW {
			k := row*plotW + c
			if cells[k] == 0 {
				b.WriteByte(' ')
				continue
			}
			b.WriteString(style(int(owner[k]-1), string(rune(0x2800+int(cells[k])))))
		}
		b.WriteByte('\n')
	}
	b.WriteString(dim(strings.Repeat(" ", yLabelWidth) + "└" + strings.Repeat("─", plotW)))
	b.WriteByte('\n')
	left, right := xLabels(xmin, xmax, useStep)
	axis := "step"
	if !useStep {
		axis = "time"
	}
	gap := plotW - len(left) - len(right)
	xl := strings.Repeat(" ", yLabelWidth+1) + left
	if gap >= len(axis)+2 {
		pad := (gap - len(axis)) / 2
		xl += strings.Repeat(" ", pad) + axis + strings.Repeat(" ", gap-pad-len(axis)) + right
	} else if gap >= 1 {
		xl += strings.Repeat(" ", gap) + right
	}
	b.WriteString(dim(xl))
	if legendLines > 0 {
		b.WriteByte('\n')
		b.WriteString(legend(series, o.Width, legendLines, style))
	}
	return fit(b.String(), o.Width, o.Height)
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
