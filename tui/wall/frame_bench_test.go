package wall

import (
	"io"
	"testing"
	"time"

	uv "github.com/charmbracelet/ultraviolet"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/internal/testkit"
)

// BenchmarkFrame16 is one frame of the wall following 16 replicas at 20 lines/s each
// in a terminal of 200x60 at 20 frames a second (BenchmarkSoakBesideLnav's load,
// without its processes): each frame a line more in every pane, the wall's View, then
// what Bubble Tea's renderer does with it (its cursedRenderer.flush: the buffer
// cleared, the frame parsed into it, the diff against the last frame written out).
// view-ns and render-ns split the frame's time between the two.
func BenchmarkFrame16(b *testing.B) {
	const n, width, height = 16, 200, 60
	m := benchWall(b, n, 0)
	// The root model's title, status and help lines take 3 rows of the terminal.
	m.Ctx.Width, m.Ctx.Height = width, height-3
	fill(m, 200)
	buf := uv.NewScreenBuffer(width, height)
	scr := uv.NewTerminalRenderer(io.Discard, []string{"TERM=xterm-256color"})
	scr.SetFullscreen(true)
	scr.SetRelativeCursor(false)
	scr.SetScrollOptim(true)
	t0 := time.Now()
	from := 200
	var view, render time.Duration
	for b.Loop() {
		batch := batchMsg{gen: m.gen, lines: make([][]sched.Line, n)}
		for k := range n {
			batch.lines[k] = demoLines(k, from, 1, t0)
		}
		from++
		start := time.Now()
		m.ingest(batch)
		frame := m.View()
		mid := time.Now()
		buf.Clear()
		uv.NewStyledString(frame).Draw(buf, buf.Bounds())
		scr.Render(buf.RenderBuffer)
		_ = scr.Flush()
		view += mid.Sub(start)
		render += time.Since(mid)
	}
	b.ReportMetric(float64(view.Nanoseconds())/float64(b.N), "view-ns")
	b.ReportMetric(float64(render.Nanoseconds())/float64(b.N), "render-ns")
	b.ReportMetric(testkit.Load(), "load")
}
