package wall_test

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
	"github.com/wick-dev/wick/themes"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/wall"
)

// pendingSamples is how many progress updates each run of the latency benchmark
// measures (one every 10 ms).
const pendingSamples = 300

// tickRe finds the write time a progress update carries.
var tickRe = regexp.MustCompile(`⋯tick (\d+)`)

// BenchmarkPendingToScreen measures the latency of a progress bar: a real replica
// redraws one line with \r every 10 ms, each update carrying the time it was written
// (date +%s%N); the time until the wall's frame shows it is one sample. Beside it,
// the log iterator alone: the time until Next yields the update. Reports p50 and p99.
// Aim: p99 ≤ 100 ms.
func BenchmarkPendingToScreen(b *testing.B) {
	r := benchRunner(b)
	launch := func() spec.Handle {
		role := spec.NewRole("trainer", spec.None, "sh", "-c", `echo start; while :; do printf '\rtick %s' "$(date +%s%N)"; sleep 0.01; done`)
		h, err := r.Run(context.Background(), &spec.AppDef{Name: "bar", Roles: []spec.Role{role}}, local.NameCwd, nil, "", nil)
		if err != nil {
			b.Fatal(err)
		}
		return h
	}
	sample := func(text string, seen map[string]bool, lat *[]time.Duration) {
		for _, m := range tickRe.FindAllStringSubmatch(text, -1) {
			if seen[m[1]] {
				continue
			}
			seen[m[1]] = true
			ns, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil {
				continue
			}
			*lat = append(*lat, time.Since(time.Unix(0, ns)))
		}
	}

	b.Run("wall", func(b *testing.B) {
		for b.Loop() {
			h := launch()
			ctx, cancel := context.WithCancel(context.Background())
			cctx := &common.Context{
				Ctx: ctx, Backend: r, Config: common.NoConfig{}, Theme: themes.ForBackground(true),
				Actions: common.NewRegistry(), Width: 120, Height: 30, Now: time.Now,
			}
			w := wall.New(cctx, h, wall.Options{})
			d := &syncDriver{w: w, msgs: make(chan tea.Msg, 64)}
			d.exec(w.Init())
			seen := map[string]bool{}
			var lat []time.Duration
			d.until(b, "the samples", func() bool {
				sample(ansi.Strip(w.View()), seen, &lat)
				return len(lat) >= pendingSamples
			})
			w.Close()
			cancel()
			_ = r.Cancel(context.Background(), h)
			reportLatency(b, lat)
		}
	})
	b.Run("iterator", func(b *testing.B) {
		for b.Loop() {
			h := launch()
			ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
			it, err := r.LogLines(ctx, h, "trainer", 0, sched.LogOptions{Follow: true, Pending: true})
			if err != nil {
				b.Fatal(err)
			}
			seen := map[string]bool{}
			var lat []time.Duration
			for len(lat) < pendingSamples {
				l, err := it.Next(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if l.Pending {
					sample("⋯"+l.Text, seen, &lat)
				}
			}
			it.Close()
			cancel()
			_ = r.Cancel(context.Background(), h)
			reportLatency(b, lat)
		}
	})
}

func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	if len(lat) == 0 {
		return
	}
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
