package metrics

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
)

var t0 = time.Date(2026, 11, 23, 13, 0, 0, 0, time.UTC)

func line(rank, i int, text string) sched.Line {
	return sched.Line{Time: t0.Add(time.Duration(i) * time.Second), Role: "trainer", Replica: rank, Text: text}
}

func alarms(s *Store) string {
	var out []string
	for _, a := range s.Alarms() {
		out = append(out, a.String())
	}
	return strings.Join(out, "\n")
}

func TestStoreNaNAlarmAndSummary(t *testing.T) {
	s := NewStore(DefaultConfig())
	for step := range 10 {
		for r := range 2 {
			loss := fmt.Sprintf("%.2f", 3-0.1*float64(step))
			if r == 1 && step == 7 {
				loss = "nan"
			}
			s.Add(line(r, step, fmt.Sprintf("[rank %d] step %d loss %s lr 1e-4", r, step, loss)))
		}
	}
	s.Add(line(0, 10, "[rank 0] epoch 0 done: train loss 2.1, eval loss 2.25, 3.1s elapsed"))
	if got, want := alarms(s), "loss on trainer/1 is NaN at step 7"; got != want {
		t.Fatalf("alarms:\n%s\nwant\n%s", got, want)
	}
	sums := s.Summaries()
	var names []string
	for _, m := range sums {
		names = append(names, m.Name)
	}
	if got := strings.Join(names, " "); got != "loss lr train/loss eval/loss" {
		t.Fatalf("names %q", got)
	}
	loss := sums[0]
	if loss.Ranks != 2 || loss.Count != 20 || loss.First.Value != 3 || loss.Last.Value != 2.1 || loss.Min != 2.1 || loss.Max != 3 {
		t.Fatalf("loss summary %+v", loss)
	}
	// The eval loss names no step: it is at the last step its rank named.
	if ev := s.Series("eval/loss")[0]; ev.Last.Step != 9 || ev.Last.Value != 2.25 {
		t.Fatalf("eval_loss %+v", ev.Last)
	}
	if b := s.Series("loss")[1].Best; b.Value != 2.1 || b.Step != 9 {
		t.Fatalf("best of rank 1: %+v", b)
	}
}

func TestStoreDivergence(t *testing.T) {
	s := NewStore(DefaultConfig())
	for step := range 50 {
		for r := range 4 {
			loss := 2.0 + 0.01*float64(r)
			if r == 2 && step >= 30 {
				loss = 9.5 // rank 2 blew up
			}
			// pids and ports differ wildly between ranks: not metrics, no alarm.
			s.Add(line(r, step, fmt.Sprintf("step=%d loss=%.3f pid=%d port=%d", step, loss, 1000+r*7919, 29500+r)))
		}
	}
	want := "loss on trainer/2 is 9.5, the other ranks' 2.01 (4.73x) at step 30"
	if got := alarms(s); got != want {
		t.Fatalf("alarms:\n%s\nwant\n%s", got, want)
	}
	if n := s.Names(); len(n) != 1 {
		t.Fatalf("names %v: pid or port taken as a metric", n)
	}
	if a := s.AlarmsOf("trainer", 2); len(a) != 1 || len(s.AlarmsOf("trainer", 0)) != 0 {
		t.Fatalf("AlarmsOf: %v", a)
	}
}

func TestStoreNoAlarmFromNoisyOrLaggingRanks(t *testing.T) {
	s := NewStore(DefaultConfig())
	// Rank 3 lags 300 steps behind; the loss falls fast, so comparing latest values
	// would see a factor of 5. Values at the same step agree.
	for i := range 400 {
		for r := range 4 {
			step := i
			if r == 3 {
				step = i - 300
				if step < 0 {
					continue
				}
			}
			loss := 0.3 + 3*math.Exp(-float64(step)/50) + 0.05*float64((i*7+r*3)%5)
			s.Add(line(r, i, fmt.Sprintf("step %d loss %.4f", step, loss)))
		}
	}
	if got := alarms(s); got != "" {
		t.Fatalf("false alarms:\n%s", got)
	}
}

func TestStoreBoundedMemory(t *testing.T) {
	s := NewStore(DefaultConfig())
	const n = 100_000
	for i := range n {
		s.Add(line(0, i, fmt.Sprintf("step %d loss %d", i, i)))
	}
	ser := s.Series("loss")[0]
	pts := ser.Points()
	if len(pts) > MaxPoints+1 || len(pts) < MaxPoints/2 {
		t.Fatalf("%d points kept of %d, bound %d", len(pts), n, MaxPoints)
	}
	if ser.Count != n || ser.Min != 0 || ser.Max != n-1 || pts[len(pts)-1].Value != n-1 || pts[len(pts)-1].Step != n-1 {
		t.Fatalf("stats count %d min %v max %v last %+v", ser.Count, ser.Min, ser.Max, pts[len(pts)-1])
	}
	for i := 1; i < len(pts); i++ {
		if pts[i].Step <= pts[i-1].Step {
			t.Fatalf("points out of order at %d: %v %v", i, pts[i-1], pts[i])
		}
	}
	// A flood of distinct names stops at MaxSeries.
	for i := range MaxSeries + 100 {
		s.Add(line(1, i, fmt.Sprintf("m%d=1 n%d=2", i, i)))
	}
	if s.nseries != MaxSeries || s.Dropped() == 0 {
		t.Fatalf("%d series, %d dropped", s.nseries, s.Dropped())
	}
}

func TestStoreTorchrunRanksAndFlippingValues(t *testing.T) {
	s := NewStore(DefaultConfig())
	s.Add(line(0, 0, "[0]:step 1 loss 2.5"))
	s.Add(line(0, 1, "[1]:step 1 loss 2.6"))
	s.Add(line(0, 2, "[1]:step 2 loss N/A lr 0.1"))
	s.Add(line(0, 3, "[1]:step 3 loss 2.4 lr warmup"))
	s.Add(sched.Line{Time: t0, Role: "trainer", Text: "step 4 loss=1", Pending: true})
	var ranks []string
	for _, ser := range s.Series("loss") {
		ranks = append(ranks, fmt.Sprintf("%s:%d", ser.Rank, ser.Count))
	}
	if got := strings.Join(ranks, " "); got != "trainer/0:0:1 trainer/0:1:2" {
		t.Fatalf("loss series %q", got)
	}
	if got := s.Series("lr")[0].Count; got != 1 {
		t.Fatalf("lr count %d", got)
	}
}

// An alarm store raises the same alarms and keeps the same statistics as a full
// store, without the points.
func TestAlarmStoreKeepsNoPoints(t *testing.T) {
	full, lean := NewStore(DefaultConfig()), NewAlarmStore(DefaultConfig())
	for step := range 10_000 {
		for r := range 4 {
			loss := 3 - 0.0001*float64(step)
			switch {
			case r == 1 && step == 7:
				loss = math.NaN()
			case r == 3 && step > 5000:
				loss *= 10 // departs from the others
			}
			l := line(r, step, fmt.Sprintf("step %d loss %g lr 1e-4", step, loss))
			full.Add(l)
			lean.Add(l)
		}
	}
	if got, want := alarms(lean), alarms(full); got != want || !strings.Contains(got, "NaN") || !strings.Contains(got, "other ranks'") {
		t.Fatalf("alarm store:\n%s\nfull store:\n%s", got, want)
	}
	for i, s := range lean.Series("loss") {
		f := full.Series("loss")[i]
		if len(s.Points()) != 0 || s.Count != f.Count || s.Min != f.Min || s.Max != f.Max || s.Last != f.Last {
			t.Errorf("%v: %d points, count %d min %v max %v; full store: count %d min %v max %v", s.Rank, len(s.Points()), s.Count, s.Min, s.Max, f.Count, f.Min, f.Max)
		}
	}
}

// Like with like: a rank whose values have no step (DeepSpeed's example prints its loss
// with a counter of its own on every node) is never compared with another rank's last
// value, whatever they are; and a step carried from rank 0's own step lines is not put
// on its loss lines, which print their own counter.
func TestStoreNoDivergenceWithoutSteps(t *testing.T) {
	s := NewStore(DefaultConfig())
	for i := range 20 {
		s.Add(line(0, 2*i, fmt.Sprintf("[Rank 0] step=%d, skipped=0, lr=[0.001]", 10*(i+1))))
		s.Add(line(0, 2*i, fmt.Sprintf("[ 1, %5d] loss:  %.3f", 2000*(i+1), 2.0)))
		s.Add(line(1, 2*i+1, fmt.Sprintf("[ 1, %5d] loss:  %.3f", 2000*(i+1), 9.0)))
	}
	if got := alarms(s); got != "" {
		t.Fatalf("alarms comparing values without steps:\n%s", got)
	}
	for _, ser := range s.Series("loss") {
		if ser.Last.Step != -1 {
			t.Errorf("%v: loss at step %d, want none (its lines print their own counter)", ser.Rank, ser.Last.Step)
		}
	}
}

// Two ranks: no majority says which is off, but the one that left its own history
// (rank 1's loss x4.5 while rank 0's held) is the one named, once.
func TestStoreTwoRanksDeparted(t *testing.T) {
	s := NewStore(DefaultConfig())
	for step := range 40 {
		s.Add(line(0, step, fmt.Sprintf("step %d loss 2.0", step)))
		loss := 2.1
		if step >= 30 {
			loss = 9.5
		}
		s.Add(line(1, step, fmt.Sprintf("step %d loss %g", step, loss)))
	}
	want := "loss on trainer/1 is 9.5, 4.52x its own last value, while trainer/0's is 2 at step 30"
	if got := alarms(s); got != want {
		t.Fatalf("alarms:\n%s\nwant\n%s", got, want)
	}
}

// Two ranks that part from the start, neither leaving a history of its own: both
// are named.
func TestStoreTwoRanksDisagree(t *testing.T) {
	s := NewStore(DefaultConfig())
	for step := range 10 {
		s.Add(line(0, step, fmt.Sprintf("step %d loss 2.0", step)))
		s.Add(line(1, step, fmt.Sprintf("step %d loss 9.5", step)))
	}
	want := "loss on trainer/0 and trainer/1 disagree: 2 and 9.5 (4.75x) at step 1"
	if got := alarms(s); got != want {
		t.Fatalf("alarms:\n%s\nwant\n%s", got, want)
	}
}

// A metric where higher is better is reported on the rank that fell behind, never on a
// rank doing better than the others.
func TestStoreDivergenceHigherIsBetter(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Watch = []string{"loss", "accuracy"}
	s := NewStore(cfg)
	for step := range 20 {
		for r := range 4 {
			acc := 0.2
			switch {
			case r == 1:
				acc = 0.9 // far better than the others: not an alarm
			case r == 3 && step >= 10:
				acc = 0.01
			}
			s.Add(line(r, step, fmt.Sprintf("step %d accuracy %g", step, acc)))
		}
	}
	want := "accuracy on trainer/3 is 0.01, the other ranks' 0.2 (20x) at step 10"
	if got := alarms(s); got != want {
		t.Fatalf("alarms:\n%s\nwant\n%s", got, want)
	}
}

// Under a point budget, the series share it: each keeps a power-of-two fraction of
// MaxPoints, still from the run's first step to its last, each point an average of
// the values since the point before it; the statistics see every value.
func TestStorePointBudget(t *testing.T) {
	s := NewStore(DefaultConfig())
	const budget = 64 * MinSeriesPoints
	s.SetPointBudget(budget)
	steps := func(r, n int) {
		for i := range n {
			s.Add(line(r, i, fmt.Sprintf("step %d loss %d", i, i)))
		}
	}
	for r := range 8 {
		steps(r, 5001+r) // odd and even counts of points when the budget halves them
	}
	if got := len(s.Series("loss")[0].Points()); got > MaxPoints+1 || got < MaxPoints/2 {
		t.Fatalf("8 series: %d points in one, want up to MaxPoints", got)
	}
	for r := 8; r < 64; r++ {
		steps(r, 700)
	}
	total := 0
	for _, ser := range s.Series("loss") {
		n := int(ser.Count)
		pts := ser.Points()
		total += len(pts)
		if len(pts) > MinSeriesPoints+1 || len(pts) < MinSeriesPoints/4 {
			t.Fatalf("%s: %d points, bound %d", ser.Rank, len(pts), MinSeriesPoints)
		}
		if ser.Min != 0 || ser.Max != float64(n-1) || pts[len(pts)-1].Step != int64(n-1) {
			t.Fatalf("%s: min %v max %v last %+v of %d values", ser.Rank, ser.Min, ser.Max, pts[len(pts)-1], n)
		}
		prev := int64(-1)
		for _, p := range pts {
			// Values are their steps: a point averaging steps prev+1..Step is between them.
			if p.Step <= prev || p.Value < float64(prev+1)-1e-9 || p.Value > float64(p.Step)+1e-9 {
				t.Fatalf("%s: point %+v after step %d: not a mean of the steps since", ser.Rank, p, prev)
			}
			prev = p.Step
		}
	}
	if total > budget+64 {
		t.Fatalf("%d points kept, budget %d", total, budget)
	}
}

// Downsampling averages values: finite values near the float64 range never average to
// Inf.
func TestStoreCompactionKeepsFinite(t *testing.T) {
	s := NewStore(DefaultConfig())
	for i := range 3 * MaxPoints {
		v := 1.7e308
		if i%3 == 1 {
			v = -1.7e308
		}
		s.Add(line(0, i, fmt.Sprintf("step %d loss %g", i, v)))
	}
	pts := s.Series("loss")[0].Points()
	if len(pts) > MaxPoints+1 {
		t.Fatalf("%d points", len(pts))
	}
	for _, p := range pts {
		if math.IsInf(p.Value, 0) || math.IsNaN(p.Value) {
			t.Fatalf("point %+v from finite values", p)
		}
	}
}

// A value that is the same on every line is a setting: listed apart, never the chart's
// first metric; a loss never is one.
func TestStoreSettings(t *testing.T) {
	s := NewStore(DefaultConfig())
	for step := range 5 {
		s.Add(line(0, step, fmt.Sprintf("step %d lr 0.001 loss 0.5 acc %g", step, 0.1*float64(step))))
	}
	if got := strings.Join(s.Names(), " "); got != "loss acc" {
		t.Errorf("names %q, want loss acc", got)
	}
	if got := strings.Join(s.Settings(), " "); got != "lr" {
		t.Errorf("settings %q, want lr", got)
	}
	if got := Headline(s); got != "loss" {
		t.Errorf("headline %q", got)
	}
}

// slowPattern is a user pattern that takes tens of milliseconds on a 4 KiB line (RE2 is
// linear, but with a large factor for many groups).
const slowPattern = `(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)Z`

// A slow user pattern is given up after it overruns its budget on a line, with a
// notice; the other values are still read.
func TestStoreSlowPatternSkipped(t *testing.T) {
	cfg, err := ParseConfig(map[string]string{"pattern.slow": slowPattern})
	if err != nil {
		t.Fatal(err)
	}
	s := NewStore(cfg)
	// The budget of a line is made tiny: how long the pattern takes here does not
	// decide the test.
	s.ext.lineBudget = time.Nanosecond
	pad := strings.Repeat("a", MaxLineBytes-40)
	start := time.Now()
	for step := range 50 {
		s.Add(line(0, step, fmt.Sprintf("step %d loss %g %s", step, 2-0.01*float64(step), pad)))
	}
	n := s.Notices()
	if len(n) != 1 || !strings.HasPrefix(n[0], "pattern.slow is too slow (") || !strings.HasSuffix(n[0], "skipped from then on") {
		t.Fatalf("notices %q", n)
	}
	if c := s.Series("loss")[0].Count; c != 50 {
		t.Errorf("loss read %d times, want 50", c)
	}
	t.Logf("50 lines with the pattern given up: %v (%s)", time.Since(start), n[0])
}

// A summary line (` * Acc@1 ...`) names no context: its values are in the context of
// the last line with values of its own rank's stream, not of another rank's, and a
// summary after training lines is training.
func TestStoreSummaryContext(t *testing.T) {
	s := NewStore(DefaultConfig())
	s.Add(line(0, 0, "Epoch: [0][   1/5005]\tLoss 6.9078e+00 (6.9078e+00)\tAcc@1   0.00 (  0.00)"))
	s.Add(line(0, 1, "Test: [  1/196]\tLoss 6.8125e+00 (6.8125e+00)\tAcc@1   0.39 (  0.39)"))
	s.Add(line(1, 2, "Epoch: [0][   1/5005]\tLoss 6.9 (6.9)\tAcc@1   0.10 (  0.10)"))
	s.Add(line(1, 3, " *   Acc@1 1.000 Acc@5 2.000")) // rank 1 trained last
	s.Add(line(0, 4, " *   Acc@1 76.130 Acc@5 92.862"))
	for _, c := range []struct {
		name string
		rank int
		last float64
	}{{"test/acc@1", 0, 76.13}, {"test/acc@5", 0, 92.862}, {"acc@1", 1, 1}, {"acc@5", 1, 2}, {"acc@1", 0, 0}} {
		var got []string
		found := false
		for _, ser := range s.Series(c.name) {
			got = append(got, fmt.Sprintf("%s=%g", ser.Rank, ser.Last.Value))
			if ser.Rank.Replica == c.rank && ser.Last.Value == c.last {
				found = true
			}
		}
		if !found {
			t.Errorf("%s on %d: %v, want last %g", c.name, c.rank, got, c.last)
		}
	}
}

// A step within an epoch (`[ 50/1251]`) is counted over epochs, per rank, from the first
// epoch (0, or 1 when a stream numbers them from 1); a count too large to multiply is
// left as the line's step.
func TestStoreStepOverEpochs(t *testing.T) {
	s := NewStore(DefaultConfig())
	for _, l := range []sched.Line{
		line(0, 0, "Train: 0 [  50/1000 (  5%)]  Loss: 6.91 (6.93)"),
		line(1, 1, "Epoch(train)  [1][ 50/500]  loss: 2.3"),
		line(0, 2, "Train: 2 [  50/1000 (  5%)]  Loss: 6.01 (6.03)"),
		line(1, 3, "Epoch(train)  [3][ 50/500]  loss: 2.1"),
		line(2, 4, "Train: 3000000000 [  50/1000]  Loss: 1.5"),
	} {
		s.Add(l)
	}
	want := map[int][]int64{0: {50, 2050}, 1: {50, 1050}, 2: {50}}
	for _, ser := range s.Series("loss") {
		var got []int64
		for _, p := range ser.Points() {
			got = append(got, p.Step)
		}
		if !slices.Equal(got, want[ser.Rank.Replica]) {
			t.Errorf("rank %d: x %v, want %v", ser.Rank.Replica, got, want[ser.Rank.Replica])
		}
	}
}

// TestStoreCounterRisesIsStep: a number in brackets before a line's values is its step
// while it rises line after line (XGBoost's `[0]`, CLU's `[100]`), and no step once it
// does not.
func TestStoreCounterRisesIsStep(t *testing.T) {
	s := NewStore(DefaultConfig())
	var got []string
	for i, l := range []string{"[0]\ttrain-logloss:0.54", "[1]\ttrain-logloss:0.44", "I1206 10:00:41.512345 139871 logging_writer.py:49] [5] loss=0.4", "[3] loss=0.41"} {
		p := s.Add(line(0, i, l))
		got = append(got, fmt.Sprint(p.Step))
	}
	if g := strings.Join(got, " "); g != fmt.Sprintf("0 1 5 %d", NoStep) {
		t.Fatalf("steps %s", g)
	}
}

// TestStoreEvalCounterNoStep: an evaluation's line that counts its batches within the
// epoch it names is at the training step that ends that epoch, once training named its
// steps per epoch; else at the last training step; before any, at none.
func TestStoreEvalCounterNoStep(t *testing.T) {
	for _, c := range []struct {
		lines []string
		want  string
	}{
		{[]string{"Epoch(train) [1][ 50/500]  loss: 2.3", "Epoch(val) [1][ 50/100]  time: 0.2"}, "50 500"},
		{[]string{"Epoch [0][10/20]  loss: 2.3", "Epoch [1][10/20]  loss: 2.1", "Epoch(val) [1][7]  acc: 0.5"}, "10 30 40"},
		{[]string{"step 120 loss 2.3", "Epoch(val) [3][7]  acc: 0.5"}, "120 120"},
		{[]string{"Epoch(val) [1][ 50/100]  time: 0.2"}, "none"},
	} {
		s := NewStore(DefaultConfig())
		var got []string
		for i, l := range c.lines {
			p := s.Add(line(0, i, l))
			if p.HasStep {
				got = append(got, fmt.Sprint(p.Step))
			} else {
				got = append(got, "none")
			}
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("%q: steps %s, want %s", c.lines, g, c.want)
		}
	}
}

// TestStoreTableStepRowLast: a table's record whose step row comes last (OpenAI
// Baselines' logger sorts its keys: misc/total_timesteps after eprewmean) puts every row
// at that step, not at the record's before; a record cut short keeps its rows.
func TestStoreTableStepRowLast(t *testing.T) {
	st := NewStore(DefaultConfig())
	i := 0
	add := func(lines ...string) {
		for _, l := range lines {
			st.Add(line(0, i, l))
			i++
		}
	}
	record := func(rew, steps string) {
		add("--------------------------------------",
			"| eprewmean               | "+rew+"     |",
			"| loss/value_loss         | 98.7     |",
			"| misc/total_timesteps    | "+steps+" |",
			"--------------------------------------")
	}
	record("21.4", "2.05e+03")
	record("27.9", "4.1e+03 ")
	add("--------------------------------------", "| eprewmean               | 30.2     |")
	if got := xsOf(st, "eprewmean", 0); !slices.Equal(got, []string{"2050", "4100"}) {
		t.Errorf("eprewmean at %v, want [2050 4100] (the third record is not closed yet)", got)
	}
	add("--------------------------------------")
	if got := xsOf(st, "eprewmean", 0); !slices.Equal(got, []string{"2050", "4100", "4100"}) {
		t.Errorf("eprewmean at %v, want [2050 4100 4100] (a record without its step row keeps the last step)", got)
	}
}
