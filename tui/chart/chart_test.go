package chart

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/engine/metrics"
)

func falling(n int, scale float64) []metrics.Point {
	pts := make([]metrics.Point, n)
	for i := range pts {
		pts[i] = metrics.Point{Step: int64(i), Time: int64(i) * 1e9, Value: scale * (0.3 + 3*math.Exp(-float64(i)/30))}
	}
	return pts
}

func hasDots(s string) bool {
	for _, r := range s {
		if r > 0x2800 && r <= 0x28ff {
			return true
		}
	}
	return false
}

func checkSize(t *testing.T, out string, w, h int) []string {
	t.Helper()
	lines := strings.Split(out, "\n")
	if len(lines) != h {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), h, out)
	}
	for i, l := range lines {
		if ansi.StringWidth(l) != w {
			t.Fatalf("line %d is %d cells, want %d: %q", i, ansi.StringWidth(l), w, l)
		}
	}
	return lines
}

func TestRenderTwoRanks(t *testing.T) {
	out := Render([]Series{
		{Label: "trainer/0", Points: falling(200, 1)},
		{Label: "trainer/1", Points: falling(200, 1.1)},
	}, Options{Width: 60, Height: 14})
	lines := checkSize(t, out, 60, 14)
	// The top label is the highest value, the bottom one the lowest; the x axis goes
	// from step 0 to 199; the legend names both ranks with their last values.
	if !strings.HasPrefix(lines[0], "     3.63┤") {
		t.Errorf("top label: %q", lines[0])
	}
	if !strings.HasPrefix(lines[10], "   0.3039┤") {
		t.Errorf("bottom label: %q", lines[10])
	}
	if x := strings.Fields(lines[12]); len(x) != 3 || x[0] != "0" || x[1] != "step" || x[2] != "199" {
		t.Errorf("x axis: %q", lines[12])
	}
	if !strings.Contains(lines[13], "● trainer/0 0.3039") || !strings.Contains(lines[13], "● trainer/1 0.3343") {
		t.Errorf("legend: %q", lines[13])
	}
	// A falling curve: dots high on the left, low on the right.
	if !hasDots(string([]rune(lines[0])[10:14])) {
		t.Errorf("no dots at the top left:\n%s", out)
	}
	if hasDots(string([]rune(lines[0])[40:])) || !hasDots(string([]rune(lines[10])[50:])) {
		t.Errorf("dots at the top right, or none at the bottom right:\n%s", out)
	}
}

func TestRenderOptions(t *testing.T) {
	pts := falling(1000, 1)
	pts[500].Value = math.NaN() // skipped, not drawn
	s := []Series{{Label: "r0", Points: pts}}
	logOut := Render(s, Options{Width: 50, Height: 10, Log: true})
	checkSize(t, logOut, 50, 10)
	if !strings.HasPrefix(logOut, "      3.3┤") || !strings.Contains(logOut, "  0.995┤") {
		t.Errorf("log scale keeps the labels in values:\n%s", logOut)
	}
	last := Render(s, Options{Width: 50, Height: 10, LastN: 100})
	lines := checkSize(t, last, 50, 10)
	if x := strings.Fields(lines[8]); x[0] != "899" || x[2] != "999" {
		t.Errorf("LastN 100 shows steps %q", lines[8])
	}
	// Smoothing a noisy series narrows its range.
	noisy := make([]metrics.Point, 400)
	for i := range noisy {
		noisy[i] = metrics.Point{Step: int64(i), Value: 2 + float64(i%2)}
	}
	raw := Render([]Series{{Label: "n", Points: noisy}}, Options{Width: 40, Height: 8})
	smooth := Render([]Series{{Label: "n", Points: noisy}}, Options{Width: 40, Height: 8, Smooth: 0.9})
	if !strings.HasPrefix(raw, "        3┤") || strings.HasPrefix(smooth, "        3┤") {
		t.Errorf("smoothing did not narrow the range:\n%s\n%s", raw, smooth)
	}
	// Too small, or nothing to draw: a note, still the asked size.
	checkSize(t, Render(s, Options{Width: 10, Height: 3}), 10, 3)
	checkSize(t, Render(nil, Options{Width: 30, Height: 6}), 30, 6)
	// Points without a step: time on the x axis.
	timed := []metrics.Point{{Step: -1, Time: 1e18, Value: 1}, {Step: -1, Time: 1e18 + 6e10, Value: 2}}
	if out := Render([]Series{{Label: "t", Points: timed}}, Options{Width: 40, Height: 8}); !strings.Contains(out, "time") {
		t.Errorf("no time axis:\n%s", out)
	}
}

func TestSparkline(t *testing.T) {
	pts := falling(80, 1)
	if got := Sparkline(pts, 8); got != "█▆▄▃▂▂▁▁" {
		t.Errorf("sparkline %q", got)
	}
	pts[79].Value = math.Inf(1)
	if got := Sparkline(pts[:10], 20); got != "█▇▆▅▅▄▃▂▂▁" {
		t.Errorf("short sparkline %q", got)
	}
	if got := Sparkline(pts, 4); !strings.HasSuffix(got, "!") {
		t.Errorf("Inf not marked: %q", got)
	}
	if Sparkline(nil, 5) != "" || Sparkline(pts, 0) != "" {
		t.Error("empty sparkline")
	}
}

// Values near the float64 range: the sparkline and the chart scale them without
// overflow (no Inf from finite values, no bar out of range), from the lowest to the
// highest.
func TestHugeFiniteValues(t *testing.T) {
	pts := []metrics.Point{{Step: 0, Value: -1.7e308}, {Step: 1, Value: 1.7e308}, {Step: 2, Value: -1.7e308}, {Step: 3, Value: 1.7e308}}
	if got := Sparkline(pts, 4); got != "▁█▁█" {
		t.Errorf("sparkline %q", got)
	}
	if got := Sparkline(pts, 2); got != "▅▅" {
		t.Errorf("sparkline of means %q, want the middle: the means are 0", got)
	}
	same := []metrics.Point{{Value: 1.7e308}, {Value: 1.7e308}, {Value: 1e308}, {Value: 1e308}}
	if got := Sparkline(same, 2); got != "█▁" {
		t.Errorf("sparkline of means %q, want 1.7e308 then 1e308 (a sum would be Inf)", got)
	}
	out := Render([]Series{{Label: "big", Points: pts}}, Options{Width: 40, Height: 10})
	checkSize(t, out, 40, 10)
	if strings.Contains(out, "inf") || strings.Contains(out, "NaN") || !strings.Contains(out, "1.7e+308") || !strings.Contains(out, "-1.7e+308") {
		t.Errorf("chart of huge values:\n%s", out)
	}
}

// BenchmarkRender draws 8 ranks of 100k points each on a 160x40 chart (a wide
// terminal), all of them and as a metrics.Store keeps them, beside the floor of any
// chart of all the points: one pass reading every point's value.
func BenchmarkRender(b *testing.B) {
	series := make([]Series, 8)
	for r := range series {
		pts := make([]metrics.Point, 100_000)
		for i := range pts {
			pts[i] = metrics.Point{Step: int64(i), Time: int64(i) * 1e8, Value: 0.3 + 3*math.Exp(-float64(i)/20000) + 0.01*float64((i*7+r)%13)}
		}
		series[r] = Series{Label: "trainer/" + string(rune('0'+r)), Points: pts}
	}
	b.Run("chart", func(b *testing.B) {
		for b.Loop() {
			Render(series, Options{Width: 160, Height: 40, Smooth: 0.6})
		}
	})
	// What the wall draws: the same values kept by a metrics.Store, which holds at
	// most metrics.MaxPoints per series.
	st := metrics.NewStore(metrics.DefaultConfig())
	var p metrics.Parsed
	for i := range 100_000 {
		for r, s := range series {
			p.Reset()
			p.Step, p.HasStep = int64(i), true
			p.Samples = append(p.Samples, metrics.Sample{Name: "loss", Value: s.Points[i].Value})
			st.AddParsed(metrics.Rank{Role: "trainer", Replica: r, Local: -1}, time.Unix(0, s.Points[i].Time), &p)
		}
	}
	stored := make([]Series, 0, 8)
	for _, ser := range st.Series("loss") {
		stored = append(stored, Series{Label: ser.Rank.String(), Points: ser.Points()})
	}
	b.Run("chart-of-store", func(b *testing.B) {
		for b.Loop() {
			Render(stored, Options{Width: 160, Height: 40, Smooth: 0.6})
		}
	})
	b.Run("read-points", func(b *testing.B) {
		sum := 0.0
		for b.Loop() {
			for _, s := range series {
				for _, p := range s.Points {
					sum += p.Value
				}
			}
		}
		_ = sum
	})
}

// TestStepAxisLeavesOutValuesWithoutStep: a value read before a rank's first step
// (demo.train's progress bar on stderr, "loss=2.89", when its line comes before
// stdout's first step line) has no step. The chart stays on the steps of the others
// and leaves it out; it used to put the whole chart on a time axis.
func TestStepAxisLeavesOutValuesWithoutStep(t *testing.T) {
	pts := append([]metrics.Point{{Step: -1, Time: 0, Value: 9}}, falling(50, 1)...)
	lines := checkSize(t, Render([]Series{{Label: "rank 0", Points: pts}}, Options{Width: 40, Height: 10}), 40, 10)
	if x := strings.Fields(lines[8]); len(x) != 3 || x[0] != "0" || x[1] != "step" || x[2] != "49" {
		t.Errorf("x axis: %q, want 0 step 49", lines[8])
	}
	if !strings.HasPrefix(lines[0], "      3.3┤") {
		t.Errorf("top label %q: the value without a step (9) is drawn", lines[0])
	}
}
