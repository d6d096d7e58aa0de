package wall_test

import (
	"context"
	"slices"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/wall"
)

// readBackLines is how many lines each of the 4 replicas of the read-back benchmark
// writes: with the default ring (100k lines), 900k of each are on disk only.
const readBackLines = 1_000_000

// BenchmarkReadBackPage is a page up read back from the logs of a finished app of 4
// replicas x 1M lines: the time from the key to the frame showing the page, in the
// merged view (4 panes) beside a zoomed pane (one). "deep" is a page half-way down
// the logs, past the rings' room: each pane read (those that bound the merged view's
// top) scans its logs from line 1 to there. "ring-top" is the page just before the
// rings, which have room for it: read by time from the end of the logs, no scan.
// "jump" is a move half-way down (to a match there): the merged view reads every
// pane's lines of that time.
func BenchmarkReadBackPage(b *testing.B) {
	r := benchRunner(b)
	h := rankLinesApp(b, r, "readback", readBackLines, 5*time.Minute)
	// The line half-way down replica 0's logs, and its time.
	const deep = readBackLines / 2
	at := lineTime(b, r, h, deep)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cctx := benchContext(ctx, r)
	w := wall.New(cctx, h, wall.Options{})
	defer w.Close()
	d := &syncDriver{w: w, msgs: make(chan tea.Msg, 64)}
	d.exec(w.Init())
	d.until(b, "reading the logs", w.AllEnded)
	w.Do(wall.ActSummary) // the summary off: the panes take the whole screen
	_ = w.View()

	// measure runs setup, then act, and returns the time from act to the frame after
	// the reads it started.
	measure := func(b *testing.B, setup, act func()) time.Duration {
		setup()
		d.until(b, "the setup's reads", func() bool { return !w.Reading() })
		before := w.View()
		start := time.Now()
		act()
		d.until(b, "the reads", func() bool { return !w.Reading() })
		if w.View() == before {
			b.Fatal("the view did not move")
		}
		return time.Since(start)
	}
	run := func(name string, merged bool, setup, act func()) {
		b.Run(name, func(b *testing.B) {
			if w.Merged() != merged {
				w.Do(wall.ActMerged)
			}
			if !merged && !w.Zoomed() {
				w.Do(wall.ActZoom)
			}
			var times []time.Duration
			for b.Loop() {
				times = append(times, measure(b, setup, act))
			}
			reportMedian(b, times)
		})
	}
	follow := func() { w.Do(common.ActBottom) }
	jump := func() { d.exec(w.ShowLine(0, deep, at)) }
	// The page up from the top of what the view holds.
	pageUp := func() {
		cmd, _ := w.Do(common.ActPageUp)
		d.exec(cmd)
	}
	atTop := func(setup func()) func() {
		return func() {
			setup()
			d.until(b, "the setup's reads", func() bool { return !w.Reading() })
			_ = w.View()
			w.ToHeldTop()
			_ = w.View()
		}
	}
	jumped := func() { follow(); jump() }
	run("deep/merged-4-panes", true, atTop(jumped), pageUp)
	run("deep/pane", false, atTop(jumped), pageUp)
	run("ring-top/merged-4-panes", true, atTop(follow), pageUp)
	run("ring-top/pane", false, atTop(follow), pageUp)
	// A jump half-way down (to a match there): every pane reads its lines of that
	// time, from line 1.
	run("jump/merged-4-panes", true, follow, jump)
	run("jump/pane", false, follow, jump)
}

// lineTime is the time line seq (from 0) of replica 0 of h was read.
func lineTime(b *testing.B, r *runner.Runner, h spec.Handle, seq int) time.Time {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	it, err := r.LogLines(ctx, h, "trainer", 0, sched.LogOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer it.Close()
	for i := 0; ; i++ {
		l, err := it.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if i == seq {
			return l.Time
		}
	}
}

// reportMedian reports the median of times in milliseconds.
func reportMedian(b *testing.B, times []time.Duration) {
	slices.Sort(times)
	if len(times) > 0 {
		b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms/page")
	}
}
