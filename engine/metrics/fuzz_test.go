package metrics

import (
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/wick-dev/wick/engine/sched"
)

// FuzzExtract feeds arbitrary lines to the extractor and a store: no panic, bounded
// values per line, names that are valid and bounded, steps that are whole and not
// negative, and no Inf from a number too large for a float64.
func FuzzExtract(f *testing.F) {
	for _, s := range []string{
		"[rank 1] epoch 0 step 120 loss 2.3412 lr 3.0e-04 grad_norm 1.23 tok/s 48213",
		`{"step": 20, "loss": 2.84, "lr": NaN}`,
		"\rEpoch 0: 100%|██████████| 200/200 [00:10<00:00, 20.00it/s, loss=1.70]",
		"[3]:iter=5 loss=-inf",
		"loss " + strings.Repeat("9", 400),
		"pid 123 port 29500 train loss: 1e-4",
		"[default12]: step 3/10 | eval loss: 2.1% ",
		"loss 1e999 lr 0x1p-2 x=1e-999 tps: 1,234,567,890,123,456,789,012,345,678,901,234",
		"\x1b[31mstep:  1  \x1b[32mloss: 12.25360  \x1b[38;2;54;234;195mmemory: 25.10GiB(31.70%)\x1b[39m",
		"\x1b]0;title\x07loss=1 \x1b[", "\xff\xfeloss \xc3 2.5 \xe2\x94", "[ 50/1251 (  4%)]  Loss: 6.91 (6.93)",
		"      Epoch    GPU_mem   box_loss   cls_loss", "      1/100      3.21G      1.198      2.301",
		"1|5|Loss: 2.345:  10%|█| 5/50", "{'loss': '2.753', 'lr': '-nan', 'x': '+Inf'}",
		strings.Repeat("\rEpoch 0:  10%|█| 20/200 [00:01<00:09, 19.97it/s, loss=2.9]", 400),
		"accuracy: 9800/10000 (98%) lm loss: 1.06E+01 | grad norm: 2.3 |",
		"Train: 2147483647 [ 9999999999999999/9999999999999999]  Loss: 1", "Epoch(train) [1][ 50/500]  loss: 2",
		" *   Acc@1 76.130 Acc@5 92.862",
	} {
		f.Add(s)
	}
	cfg := DefaultConfig()
	p, err := NewPattern("acc", `acc (\S+)`)
	if err != nil {
		f.Fatal(err)
	}
	cfg.Patterns = []Pattern{p}
	e := NewExtractor(cfg)
	f.Fuzz(func(t *testing.T, text string) {
		var p Parsed
		e.Extract(text, &p)
		if len(p.Samples) > MaxValuesPerLine+len(cfg.Patterns) {
			t.Fatalf("%d values", len(p.Samples))
		}
		if p.HasStep && p.Step < 0 && p.Step != NoStep {
			t.Fatalf("step %d", p.Step)
		}
		if p.EpochSteps < 0 || p.EpochSteps >= maxEpochCount || p.Epoch >= maxEpochCount {
			t.Fatalf("epoch %d of %d steps", p.Epoch, p.EpochSteps)
		}
		for _, s := range p.Samples {
			if s.Name == "" || len(s.Name) > MaxNameLen+17 || !utf8.ValidString(s.Name) && utf8.ValidString(text) {
				t.Fatalf("name %q", s.Name)
			}
			if len(s.Unit) > maxUnitLen {
				t.Fatalf("unit %q", s.Unit)
			}
			if math.IsInf(s.Value, 0) && !strings.Contains(strings.ToLower(text), "inf") {
				t.Fatalf("%s=%v from %q: a large number is not Inf", s.Name, s.Value, text)
			}
		}
		// Bounded memory: what a Parsed keeps does not grow with the line.
		if cap(p.clean) > 2*MaxLineBytes+64 || len(p.header) > maxColumns {
			t.Fatalf("a Parsed keeps %d bytes of clean text, %d columns", cap(p.clean), len(p.header))
		}
		st := NewStore(DefaultConfig())
		st.Add(sched.Line{Text: text, Role: "r"})
		st.Add(sched.Line{Text: text, Role: "r", Replica: 1})
		// Past MaxPoints the points are averaged: the line's values, many times over
		// (extracted once).
		for i := range 3 * MaxPoints / 2 {
			st.AddParsed(Rank{Role: "r", Replica: i % 2, Local: -1}, time.Unix(int64(i), 0), &p)
		}
		_ = st.Summaries()
		// Downsampled points are averages of what was read: finite from finite.
		for _, name := range st.AllNames() {
			for _, ser := range st.Series(name) {
				finite := ser.finite == ser.Count
				for _, pt := range ser.Points() {
					if finite && (math.IsInf(pt.Value, 0) || math.IsNaN(pt.Value)) {
						t.Fatalf("%s: point %v from finite values", name, pt.Value)
					}
					if pt.Step < -1 {
						t.Fatalf("%s: step %d (a step counted over epochs overflowed?)", name, pt.Step)
					}
				}
			}
		}
	})
}
