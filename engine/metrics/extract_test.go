package metrics

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"
)

// got renders what a line gave as "step=S local=L name=v ..." for easy comparison.
func got(e *Extractor, line string) string {
	var p Parsed
	e.Extract(line, &p)
	var b strings.Builder
	if p.HasStep {
		fmt.Fprintf(&b, "step=%d ", p.Step)
	}
	if p.Local >= 0 {
		fmt.Fprintf(&b, "local=%d ", p.Local)
	}
	for _, s := range p.Samples {
		fmt.Fprintf(&b, "%s=%s ", s.Name, FormatValue(s.Value))
	}
	return strings.TrimSpace(b.String())
}

func TestExtractRealLines(t *testing.T) {
	e := NewExtractor(DefaultConfig())
	for _, c := range []struct{ line, want string }{
		// demo.train and most hand-written loops
		{"[rank 1] epoch 0 step 120 loss 2.3412 lr 3.0e-04 grad_norm 1.23 tok/s 48213",
			"step=120 loss=2.3412 lr=0.0003 grad_norm=1.23 tok/s=48213"},
		{"epoch 1 step 20 loss 2.84 lr 6.3e-05 grad_norm 1.27 tok/s 48160",
			"step=20 loss=2.84 lr=6.3e-05 grad_norm=1.27 tok/s=48160"},
		{"[rank 0] epoch 0 done: train loss 2.1234, eval loss 2.2083, 10.3s elapsed",
			"train/loss=2.1234 eval/loss=2.2083"},
		{"[rank 0] training done: 1200 steps in 3.0s, final loss 0.7052", "loss=0.7052"},
		// key=value and key: value
		{"step=20 loss=2.84 lr=1e-4", "step=20 loss=2.84 lr=0.0001"},
		{"Step 20/1000 | loss: 2.8400 | lr: 6.30e-05 | 1.2s/it", "step=20 loss=2.84 lr=6.3e-05 s/it=1.2"},
		{"iter 300: loss 1.9021, time 35.12ms, mfu 12.55%", "step=300 loss=1.9021 time=35.12 mfu=12.55"},
		// Keras
		{"1875/1875 [==============================] - 3s 2ms/step - loss: 0.2934 - accuracy: 0.9151",
			"step=1875 loss=0.2934 accuracy=0.9151"}, // the bar's position is the step
		// tqdm, committed after redraws
		{"\rEpoch 0:  10%|█         | 20/200 [00:01<00:09, 20.00it/s, loss=2.90]\rEpoch 0: 100%|██████████| 200/200 [00:10<00:00, 20.00it/s, loss=1.70]",
			"step=200 it/s=20 loss=1.7"},
		{"100%|██████████| 50/50 [00:25<00:00,  1.98s/it, loss=0.512, acc=91.2%]", "step=50 s/it=1.98 loss=0.512 acc=91.2"},
		// JSON lines and Python dicts (Hugging Face Trainer)
		{`{"step": 20, "loss": 2.84, "lr": 6.3e-05}`, "step=20 loss=2.84 lr=6.3e-05"},
		{`{"global_step": 7, "train/loss": NaN, "grad_norm": Infinity}`, "step=7 train/loss=NaN grad_norm=inf"},
		{`{'loss': 2.3012, 'learning_rate': 4.9e-05, 'epoch': 0.02}`, "loss=2.3012 learning_rate=4.9e-05"},
		// torchrun's prefix
		{"[3]:step 40 loss 2.5", "step=40 local=3 loss=2.5"},
		{"[trainer 12]: iter=5 loss=nan", "step=5 local=12 loss=NaN"},
		{"[default0]:step 1 loss -inf", "step=1 local=0 loss=-inf"},
		// numbers that are not metrics
		{"[rank 0] initializing process group: backend=gloo world_size=4 rank=0", ""},
		{"INFO: pid 12345 listening on port 29500, MASTER_PORT=29500 worker_pid=77", ""},
		{"  min_nodes        : 1", ""},
		{"  monitor_interval : 5", ""},
		{"INFO:torch.distributed.elastic.agent.server.api:[default] Done waiting for other agents. Elapsed: 0.0005257 seconds", ""},
		{"[rank 0] dataset: 1,000,000 samples, 200 steps per epoch, 4000 steps to run", ""},
		{"[rank 0] model: TinyTransformer, 124.4M parameters, dtype=bfloat16", ""},
		{"2026-11-23 13:05:00,123 INFO time: 12:00:00 rate 3x", ""},
		{"loss N/A lr none", ""},
		{"/opt/conda/lib/python3.11/site-packages/torch/utils/data/dataloader.py:557: UserWarning: This DataLoader will create 8 worker processes", ""},
		{"rendezvous at localhost:29500 ok", ""},
		{`{"step":3,"loss":1.5}`, "step=3 loss=1.5"},
		{"loss 1e400 lr 1" + strings.Repeat("0", 100), ""},
		{"loss nanny", ""},
		{"", ""},
	} {
		if g := got(e, c.line); g != c.want {
			t.Errorf("%q\n got  %q\n want %q", c.line, g, c.want)
		}
	}
}

func TestExtractConfig(t *testing.T) {
	cfg, err := ParseConfig(map[string]string{
		"metrics":     "loss, eval_loss",
		"step":        "batch",
		"pattern.acc": `top-1 acc (\S+)%`,
		"pattern.a+b": `a\+b=(\d+)`,
	})
	if err != nil {
		t.Fatal(err)
	}
	e := NewExtractor(cfg)
	e.lineBudget, e.meanBudget = time.Hour, time.Hour // however slow the machine
	for _, c := range []struct{ line, want string }{
		{"batch 7 loss 2.5 lr 0.1 top-1 acc 71.5%", "step=7 loss=2.5 acc=71.5"},
		{"step 9 eval loss 3 a+b=12", "eval/loss=3 a+b=12"},
	} {
		if g := got(e, c.line); g != c.want {
			t.Errorf("%q: got %q, want %q", c.line, g, c.want)
		}
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, c := range []struct {
		sec  map[string]string
		want string
	}{
		{map[string]string{"divergence": "x"}, `[wick:metrics] divergence: "x" is not a number`},
		{map[string]string{"divergence": "0.5"}, `[wick:metrics] divergence: must be 0 (off) or a factor above 1, not 0.5`},
		{map[string]string{"pattern.x": "a(b"}, "[wick:metrics] pattern.x: pattern x: error parsing regexp: missing closing ): `a(b`"},
		{map[string]string{"pattern.x": "loss"}, `[wick:metrics] pattern.x: pattern x: "loss" has no group: put the value in (...)`},
		{map[string]string{"pattern.": "(x)"}, `[wick:metrics] pattern.: pattern name "" must be 1 to 64 characters`},
		{map[string]string{"colour": "red"}, "[wick:metrics] colour: unknown key (want metrics, ignore, watch, divergence, step or pattern.NAME)"},
		{map[string]string{"metrics": strings.Repeat("x", 100)}, `[wick:metrics] metrics: name "xxxxxxxxxxxxxxxxxxxx"... is longer than 64 characters`},
	} {
		_, err := ParseConfig(c.sec)
		if err == nil || err.Error() != c.want {
			t.Errorf("%v: got %v, want %s", c.sec, err, c.want)
		}
	}
}

func TestExtractBoundedOnHugeLines(t *testing.T) {
	e := NewExtractor(DefaultConfig())
	var p Parsed
	// A printed tensor: thousands of numbers after names.
	line := strings.Repeat("w 0.5 ", 100_000)
	e.Extract(line, &p)
	if len(p.Samples) > MaxValuesPerLine {
		t.Fatalf("%d values from one line, want at most %d", len(p.Samples), MaxValuesPerLine)
	}
	// An absurdly long number is not a value (and no Inf).
	e.Extract("loss "+strings.Repeat("9", 10_000), &p)
	if len(p.Samples) != 0 {
		t.Fatalf("a 10000-digit number gave %v", p.Samples)
	}
	// Values past MaxLineBytes are not read.
	e.Extract(strings.Repeat(" ", MaxLineBytes)+"loss 1", &p)
	if len(p.Samples) != 0 {
		t.Fatalf("read past MaxLineBytes: %v", p.Samples)
	}
	if !math.IsNaN(func() float64 { e.Extract("loss=NaN", &p); return p.Samples[0].Value }()) {
		t.Fatal("NaN not read")
	}
}

func BenchmarkExtract(b *testing.B) {
	e := NewExtractor(DefaultConfig())
	for _, c := range []struct{ name, line string }{
		{"demo", "[rank 1] epoch 0 step 120 loss 2.3412 lr 3.0e-04 grad_norm 1.23 tok/s 48213"},
		{"json", `{"step": 20, "loss": 2.84, "lr": 6.3e-05, "grad_norm": 1.27, "tokens_per_sec": 48160}`},
		{"tqdm", "\rEpoch 0: 100%|██████████| 200/200 [00:10<00:00, 20.00it/s, loss=1.70]"},
		{"text", "/opt/conda/lib/python3.11/site-packages/torch/utils/data/dataloader.py:557: UserWarning: This DataLoader will create 8 worker processes in total."},
	} {
		b.Run(c.name, func(b *testing.B) {
			var p Parsed
			b.SetBytes(int64(len(c.line)))
			b.ReportAllocs()
			for b.Loop() {
				e.Extract(c.line, &p)
			}
		})
	}
}

// BenchmarkExtractCorpus extracts every line of the golden corpus (trainers' and
// launchers' lines, wick's own string literals) in turn, with one Parsed as a Store
// does: a varied mix rather than one line over and over.
func BenchmarkExtractCorpus(b *testing.B) {
	e := NewExtractor(DefaultConfig())
	lines := readCorpus(b)
	size := 0
	for _, l := range lines {
		size += len(l)
	}
	var p Parsed
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			e.Extract(l, &p)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(lines)), "ns/line")
}

// BenchmarkBaselineScan is the floor under BenchmarkExtract: one pass over the same
// demo line looking for a byte, as any reader of the line must do.
func BenchmarkBaselineScan(b *testing.B) {
	line := "[rank 1] epoch 0 step 120 loss 2.3412 lr 3.0e-04 grad_norm 1.23 tok/s 48213"
	b.SetBytes(int64(len(line)))
	n := 0
	for b.Loop() {
		n += strings.IndexByte(line, '\n')
	}
	_ = n
}

// A progress bar line of any length is read drawing by drawing, its own values its
// last drawing's (a drawing at the position of the one before it replaces it), and a
// line cut at MaxLineBytes is cut at a space, never inside a number.
func TestExtractAnyLength(t *testing.T) {
	e := NewExtractor(DefaultConfig())
	frame := "\rEpoch 0:  50%|█████     | 100/200 [00:05<00:05, 19.97it/s, v_num=0, train_loss=2.900]"
	for _, frames := range []int{1, 100, 20_000} { // up to 1.8 MB
		line := strings.Repeat(frame, frames) + "\rEpoch 0: 100%|██████████| 200/200 [00:10<00:00, 19.99it/s, v_num=0, train_loss=1.700]"
		if g := got(e, line); g != "step=200 it/s=19.99 train/loss=1.7" {
			t.Errorf("%d frames (%d bytes): %q", frames, len(line), g)
		}
		var p Parsed
		e.Extract(line, &p)
		n := 0
		p.Drawings(func(info LineInfo, samples []Sample) {
			n++
			if info.Step != 100 || len(samples) != 2 {
				t.Errorf("%d frames: earlier drawing at %d: %v", frames, info.Step, samples)
			}
		})
		if n != 1 {
			t.Errorf("%d frames: %d earlier drawings, want 1 (one position)", frames, n)
		}
	}
	// The limit falls inside 1.2345: the value is not read as 1.
	line := strings.Repeat("x", MaxLineBytes-10) + " loss 1.2345"
	if g := got(e, line); g != "" {
		t.Errorf("cut line: %q, want nothing", g)
	}
	// Escape sequences count for nothing against the limit.
	line = strings.Repeat("\x1b[32m\x1b[0m", 1000) + "loss: 2.5"
	if g := got(e, line); g != "loss=2.5" {
		t.Errorf("escapes: %q", g)
	}
}

// Numbers a float64 cannot hold, or that Go alone reads (hexadecimal), are no value:
// never an Inf from a finite number.
func TestExtractNoInfFromFinite(t *testing.T) {
	e := NewExtractor(DefaultConfig())
	for _, c := range []struct{ line, want string }{
		{"loss 1e999", ""},
		{"loss: 1e999 lr: 0x1p-2", ""},
		{"loss=-1e999, lr=1e-4", "lr=0.0001"},
		{"tps: 1,234,567,890,123,456,789,012,345,678,901,234,567,890", ""},
		{"loss 1.7976931348623157e308 lr 1", "loss=1.7976931348623157e+308 lr=1"},
		{"loss -nan lr +nan acc NaN z inf y -Infinity", "loss=NaN lr=NaN acc=NaN z=inf y=-inf"},
	} {
		if g := got(e, c.line); g != c.want {
			t.Errorf("%q: got %q, want %q", c.line, g, c.want)
		}
	}
}

// Lines of ever new names (a name with a counter in it): what a name means is
// remembered for at most maxPairCache names, and every value is still read right.
func TestPairCacheBounded(t *testing.T) {
	e := NewExtractor(DefaultConfig())
	var p Parsed
	for i := range 5000 {
		e.Extract(fmt.Sprintf("w%dx: %d.5", i, i), &p)
		if len(p.Samples) != 1 || p.Samples[0].Name != fmt.Sprintf("w%dx", i) || p.Samples[0].Value != float64(i)+0.5 {
			t.Fatalf("%d: %+v", i, p.Samples)
		}
		if p.pairs.n > maxPairCache || len(p.pairs.slots) > 2*maxPairCache {
			t.Fatalf("%d names in %d slots", p.pairs.n, len(p.pairs.slots))
		}
	}
}

// TestOnlyListsQualifiedSeries: `wick metrics -m` names series as the table shows them.
// Keras 3's verbose=2 epoch line (keras/src/utils/progbar.py:214-234, the case in
// testdata/formats/keras.txt) writes loss and val_loss; the series are loss and
// val/loss. Listing val/loss (or val_loss, as written) takes val_loss's value only,
// and listing loss the bare loss only: the word loss of a listed val/loss is not an
// ignored word (it was, and -m val/loss matched nothing).
func TestOnlyListsQualifiedSeries(t *testing.T) {
	line := "1875/1875 - 4s - 2ms/step - accuracy: 0.9601 - loss: 0.1350 - val_accuracy: 0.9688 - val_loss: 0.1050"
	for _, c := range []struct {
		only []string
		want string
	}{
		{[]string{"val/loss"}, "val/loss=0.105"},
		{[]string{"val_loss"}, "val/loss=0.105"},
		{[]string{"VAL_LOSS"}, "val/loss=0.105"},
		{[]string{"loss"}, "loss=0.135"},
		{[]string{"loss", "val/loss"}, "loss=0.135 val/loss=0.105"},
		{[]string{"val/accuracy", "loss"}, "loss=0.135 val/accuracy=0.9688"},
		{[]string{"test/loss"}, ""},
	} {
		e := NewExtractor(Config{Only: c.only})
		var p Parsed
		e.Extract(line, &p)
		var got []string
		for _, s := range p.Samples {
			got = append(got, fmt.Sprintf("%s=%g", s.Name, s.Value))
		}
		sort.Strings(got)
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("-m %v: %q, want %q", c.only, g, c.want)
		}
	}
}
