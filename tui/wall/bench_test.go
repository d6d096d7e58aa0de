package wall

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/themes"
	"github.com/wick-dev/wick/tui/common"
)

// benchWall is a wall of n replicas laid out on a 160x48 screen, without a backend:
// the benchmarks hand it batches as the feed would.
func benchWall(b testing.TB, n, ringLines int) *Model {
	ctx := &common.Context{
		Ctx: context.Background(), Theme: themes.ForBackground(true), Actions: common.NewRegistry(Actions()),
		Width: 160, Height: 45, Now: time.Now,
	}
	m := New(ctx, spec.Handle{Scheduler: "local_cwd", Session: "wick", AppID: "bench"}, Options{RingLines: ringLines})
	rs := spec.RoleStatus{Role: "trainer"}
	for k := range n {
		rs.Replicas = append(rs.Replicas, spec.ReplicaStatus{ID: k, Role: "trainer", State: spec.Running})
	}
	m.layOut(&sched.Description{Status: spec.AppStatus{AppID: "bench", State: spec.Running, Roles: []spec.RoleStatus{rs}}})
	m.gen = 1
	return m
}

// demoLines makes count lines of replica k like demo.train's, as substrings of one
// block (as the log iterator hands them out), starting at step from.
func demoLines(k, from, count int, t0 time.Time) []sched.Line {
	var sb strings.Builder
	ends := make([]int, 0, count)
	for i := range count {
		s := from + i
		fmt.Fprintf(&sb, "[rank %d] epoch %d step %d loss %.4f lr 3.0e-04 grad_norm 1.55 tok/s %d", k, s/200, s, 2.5-float64(s%1000)/1000, 48000+s%300)
		ends = append(ends, sb.Len())
	}
	block := sb.String()
	lines := make([]sched.Line, count)
	start := 0
	for i, end := range ends {
		st := sched.Stdout
		if i%97 == 0 {
			st = sched.Stderr
		}
		lines[i] = sched.Line{Time: t0.Add(time.Duration(from+i) * 100 * time.Microsecond), Stream: st, Role: "trainer", Replica: k, Text: block[start:end]}
		start = end
	}
	return lines
}

// fill puts perReplica lines in each pane.
func fill(m *Model, perReplica int) {
	t0 := time.Now()
	const step = 16 << 10
	for from := 0; from < perReplica; from += step {
		b := batchMsg{gen: m.gen, lines: make([][]sched.Line, len(m.panes))}
		for k := range m.panes {
			b.lines[k] = demoLines(k, from, min(step, perReplica-from), t0)
		}
		m.ingest(b)
	}
}

// BenchmarkBatchToFrame is the time from a batch arriving to its frame drawn, under 8
// replicas at 10k lines/s each: one 16 ms batch is 160 lines a replica. It reports
// the p99 over the iterations. Aim: p99 ≤ 16 ms.
func BenchmarkBatchToFrame(b *testing.B) {
	m := benchWall(b, 8, DefaultRingLines)
	fill(m, 50_000)
	t0 := time.Now()
	from := 50_000
	var times []time.Duration
	for b.Loop() {
		batch := batchMsg{gen: m.gen, lines: make([][]sched.Line, 8)}
		for k := range 8 {
			batch.lines[k] = demoLines(k, from, 160, t0)
		}
		from += 160
		start := time.Now()
		m.Update(batch)
		_ = m.View()
		times = append(times, time.Since(start))
	}
	reportP99(b, times)
}

func reportP99(b *testing.B, times []time.Duration) {
	slices.Sort(times)
	if len(times) > 0 {
		b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
	}
}

// BenchmarkKeypress is a key answered with 1M lines held (8 x 125k): the key's action
// and the frame after it, alternating pause/scroll/search-next keys. Aim: ≤ 50 ms.
func BenchmarkKeypress(b *testing.B) {
	m := benchWall(b, 8, 125_000)
	fill(m, 125_000)
	m.find.query = "step 1234"
	mt, _ := newMatcher(m.find.query, false, false)
	m.find.match = mt
	for i := range m.panes {
		m.find.hits[i].scanned = 0
		m.matchNew(i, 0)
	}
	acts := []common.ActionName{ActFollow, common.ActPageUp, common.ActUp, ActNextMatch, ActReplica, ActMerged, common.ActPageUp, ActMerged, ActZoom, common.ActTop, ActZoom, common.ActBottom}
	var times []time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		m.Do(acts[i%len(acts)])
		_ = m.View()
		times = append(times, time.Since(start))
		i++
	}
	reportP99(b, times)
}

// BenchmarkRender1M draws a frame of the 8-pane wall, then of the merged view, with
// 1M lines held.
func BenchmarkRender1M(b *testing.B) {
	m := benchWall(b, 8, 125_000)
	fill(m, 125_000)
	for b.Loop() {
		m.merged = false
		_ = m.View()
		m.merged = true
		_ = m.View()
	}
}

// BenchmarkSearch1M searches 1M held lines (8 x 125k) for a literal, case-insensitive
// as the wall does by default, beside `grep -c -i` of the same lines in files.
func BenchmarkSearch1M(b *testing.B) {
	m := benchWall(b, 8, 125_000)
	fill(m, 125_000)
	mt, _ := newMatcher("STEP 12345", false, false)
	snaps := make([]snapshot, len(m.panes))
	for i, p := range m.panes {
		snaps[i] = p.ring.snapshot(p.ring.first)
	}
	b.Run("wall", func(b *testing.B) {
		for b.Loop() {
			if n := searchAll(mt, snaps); n == 0 {
				b.Fatal("no match")
			}
		}
	})
	b.Run("wall-regex", func(b *testing.B) {
		rx, _ := newMatcher(`step 1234\d loss`, true, true)
		for b.Loop() {
			searchAll(rx, snaps)
		}
	})
	dir := b.TempDir()
	var files []string
	for i, p := range m.panes {
		var sb strings.Builder
		for seq := p.ring.first; seq < p.ring.n; seq++ {
			sb.WriteString(p.ring.at(seq).text)
			sb.WriteByte('\n')
		}
		f := filepath.Join(dir, strconv.Itoa(i)+".log")
		if err := os.WriteFile(f, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		files = append(files, f)
	}
	b.Run("grep-c", func(b *testing.B) {
		if _, err := exec.LookPath("grep"); err != nil {
			b.Skip("no grep")
		}
		for b.Loop() {
			out, _ := exec.Command("grep", append([]string{"-c", "-i", "STEP 12345"}, files...)...).Output()
			if len(out) == 0 {
				b.Fatal("grep printed nothing")
			}
		}
	})
}

// BenchmarkMemory1M reports the heap held by a wall of 8 replicas with 1M lines held
// (and a second million pushed through, so that the rings have evicted).
func BenchmarkMemory1M(b *testing.B) {
	for b.Loop() {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		m := benchWall(b, 8, 125_000)
		fill(m, 250_000)
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		var held int64
		for _, p := range m.panes {
			held += p.ring.len()
		}
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/(1<<20), "heap-MB")
		b.ReportMetric(float64(held), "lines-held")
		runtime.KeepAlive(m)
	}
}

// searchAll counts the matches in snapshots in place, as the search of the rings
// does: what the benchmarks measure.
func searchAll(m *matcher, snaps []snapshot) int {
	n := 0
	for i := range snaps {
		s := &snaps[i]
		for seq := s.first; seq < s.last; seq++ {
			if e := s.at(seq); !e.divider() && m.match(e.text) {
				n++
			}
		}
	}
	return n
}
