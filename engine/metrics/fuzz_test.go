package metrics

import (
	"math"
	"strings"
	"testing"
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
		if p.HasStep && p.Step < 0 {
			t.Fatalf("step %d", p.Step)
		}
		for _, s := range p.Samples {
			if s.Name == "" || len(s.Name) > MaxNameLen+17 || !utf8.ValidString(s.Name) && utf8.ValidString(text) {
				t.Fatalf("name %q", s.Name)
			}
			if math.IsInf(s.Value, 0) && !strings.Contains(strings.ToLower(text), "inf") {
				t.Fatalf("%s=%v from %q: a large number is not Inf", s.Name, s.Value, text)
			}
		}
		st := NewStore(DefaultConfig())
		st.Add(sched.Line{Text: text, Role: "r"})
		st.Add(sched.Line{Text: text, Role: "r", Replica: 1})
		_ = st.Summaries()
	})
}
