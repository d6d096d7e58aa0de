package metrics

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// otherDigits returns line with digits changed by k: every digit when every, else the last
// digit of each run of digits; the numbers of a line of the same shape.
func otherDigits(line string, k int, every bool) string {
	b := []byte(line)
	for i, c := range b {
		if !isDigit(c) {
			continue
		}
		if every || i+1 == len(b) || !isDigit(b[i+1]) {
			b[i] = '0' + byte((int(c-'0')+k)%10)
		}
	}
	return string(b)
}

// randomDigits returns line with each digit drawn at random.
func randomDigits(r *rand.Rand, line string) string {
	b := []byte(line)
	for i, c := range b {
		if isDigit(c) {
			b[i] = '0' + byte(r.IntN(10))
		}
	}
	return string(b)
}

// samePoints reports how a and b differ, "" when they are the same: values to the bit,
// LineInfo, earlier drawings.
func samePoints(a, b *Parsed) string {
	if !sameSamples(a.Samples, b.Samples) {
		return fmt.Sprintf("samples %v, full reading %v", a.Samples, b.Samples)
	}
	if a.LineInfo != b.LineInfo {
		return fmt.Sprintf("info %+v, full reading %+v", a.LineInfo, b.LineInfo)
	}
	if len(a.frames) != len(b.frames) {
		return fmt.Sprintf("%d drawings, full reading %d", len(a.frames), len(b.frames))
	}
	for i := range a.frames {
		x, y := a.frames[i], b.frames[i]
		if x.info != y.info || !sameSamples(a.frameSamples[x.lo:x.hi], b.frameSamples[y.lo:y.hi]) {
			return fmt.Sprintf("drawing %d differs", i)
		}
	}
	return ""
}

// TestPlanSameAsFull reads every line of the corpus and of the frameworks' formats, in
// their order, again, and with their numbers changed (the same shapes, other values),
// by plans and by the full reading: the points are the same, to the bit.
func TestPlanSameAsFull(t *testing.T) {
	e := NewExtractor(DefaultConfig())
	streams := map[string][]string{"corpus": readCorpus(t)}
	for _, ff := range readFormats(t) {
		for _, c := range ff.cases {
			streams[ff.name] = append(streams[ff.name], c.line)
		}
	}
	var hits, mutatedHits int64
	for name, lines := range streams {
		var seq []string
		seq = append(seq, lines...)
		seq = append(seq, lines...)
		plain := len(seq)
		for k := 1; k <= 4; k++ {
			for _, l := range lines {
				seq = append(seq, otherDigits(l, k, false), otherDigits(l, k, false), otherDigits(l, k+3, false))
			}
			for _, l := range lines {
				seq = append(seq, otherDigits(l, k, true), l)
			}
		}
		// Digits drawn at random, each line thrice in a row: plans trusted, then read
		// with numbers of every size.
		r := rand.New(rand.NewPCG(35, uint64(len(lines))))
		for range 4 {
			for _, l := range lines {
				for range 3 {
					seq = append(seq, randomDigits(r, l))
				}
			}
		}
		var a, b Parsed
		b.fullOnly = true
		for i, l := range seq {
			e.Extract(l, &a)
			e.Extract(l, &b)
			if d := samePoints(&a, &b); d != "" {
				t.Fatalf("%s: line %d %q: by plan: %s", name, i, l, d)
			}
			if i == plain-1 && a.plans != nil {
				mutatedHits -= a.plans.hits
			}
		}
		if a.plans != nil {
			hits += a.plans.hits
			mutatedHits += a.plans.hits
		}
	}
	if hits == 0 || mutatedHits == 0 {
		t.Fatalf("no line read by a plan (%d, %d on changed numbers)", hits, mutatedHits)
	}
	t.Logf("lines read by plans: %d, %d of them of changed numbers", hits, mutatedHits)
}

// TestPlanTokens: the numbers of a line a plan reads, and the digits that are a name's.
func TestPlanTokens(t *testing.T) {
	var c planCache
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"epoch 3 step 120 loss 2.3412 lr 3.0e-04", []string{"3", "120", "2.3412", "3.0e-04"}},
		{"Acc@1 76.1 top5 92.8 region_82 .5R: 0.25", []string{"76.1", "92.8", "0.25"}},
		{"loss=-0.5 2026-12-06 x-1", []string{"-0.5", "2026", "12", "06", "1"}},
	} {
		if _, ok := c.tokenize(tc.line); !ok {
			t.Fatal(tc.line)
		}
		var got []string
		for _, tk := range c.toks[:c.n] {
			got = append(got, tc.line[tk.start:tk.end])
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%q: tokens %q, want %q", tc.line, got, tc.want)
		}
		for k, tk := range c.toks[:c.n] {
			if v, ok := c.value(tc.line, k); !ok || math.IsNaN(v) {
				t.Errorf("%q: %q no number", tc.line, tc.line[tk.start:tk.end])
			}
		}
	}
}

// TestHasDigit checks the eight-byte digit test tokenize skips text with: every byte
// value at every position, among letters, spaces, punctuation and UTF-8's high bytes.
func TestHasDigit(t *testing.T) {
	for b := 0; b < 256; b++ {
		for pos := 0; pos < 8; pos++ {
			for _, fill := range []byte{'a', 0xff, ' ', 0x80, '/', ':', 0xb9} {
				var x uint64
				for k := 0; k < 8; k++ {
					c := uint64(fill)
					if k == pos {
						c = uint64(b)
					}
					x |= c << (8 * k)
				}
				if want := b >= '0' && b <= '9'; hasDigit(x) != want {
					t.Fatalf("byte %#x at %d among %#x: hasDigit %v", b, pos, fill, !want)
				}
			}
		}
	}
}

// A Parsed that sees a few shapes keeps a small table of them; one that sees many
// grows it to the full table, remembering the shapes the full table from the start
// remembers, each used last at the same line.
func TestPlanCacheGrows(t *testing.T) {
	ext := NewExtractor(DefaultConfig())
	var small, full Parsed
	full.plans = &planCache{e: ext, bits: planSetBits, slots: make([]planSlot, planSlots)}
	read := func(line string) {
		ext.Extract(line, &small)
		ext.Extract(line, &full)
	}
	for i := range 50 {
		read(fmt.Sprintf("step %d loss %.3f", i, 1/float64(i+1)))
		read(fmt.Sprintf("epoch %d val_acc %.2f", i, float64(i)/50))
	}
	if got := len(small.plans.slots); got != planWays<<minPlanSetBits {
		t.Fatalf("two shapes: %d slots, want %d", got, planWays<<minPlanSetBits)
	}
	name := func(i int) string { // letters only, first: a shape's signature reads no digit
		var b []byte
		for ; i > 0; i /= 26 {
			b = append(b, 'a'+byte(i%26))
		}
		return string(b) + "_m"
	}
	for i := range 3000 {
		read(fmt.Sprintf("%s %.3f step %d", name(i+1), 0.5, i))
	}
	if small.plans.bits != planSetBits || len(small.plans.slots) != planSlots {
		t.Fatalf("3,000 shapes: %d sets", len(small.plans.slots)/planWays)
	}
	remembered := func(c *planCache) map[uint64]uint64 {
		m := map[uint64]uint64{}
		for _, sl := range c.slots {
			if sl.used != 0 {
				m[sl.sig] = sl.used
			}
		}
		return m
	}
	a, b := remembered(small.plans), remembered(full.plans)
	if len(a) != len(b) {
		t.Fatalf("%d shapes remembered, the full table %d", len(a), len(b))
	}
	for sig, used := range b {
		if a[sig] != used {
			t.Fatalf("shape %x: used at %d, in the full table at %d", sig, a[sig], used)
		}
	}
}
