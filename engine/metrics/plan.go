package metrics

import (
	"math"
	"strings"
)

// Plans: the lines of a run repeat a few shapes (`epoch 3 step 120 loss 2.34 lr 3e-4`
// and the next one differ in their numbers only), and the full reading of a line (the
// scan of its words, names looked up, values, steps, tables) works out the same things
// for every line of a shape. A plan is what it worked out for one line, in terms of the
// line's number tokens: which token gives each value and each counter of LineInfo, and
// that the other tokens and the text between tokens are as they were. A later line of
// the same shape is read by the plan: its tokens parsed where the plan says, nothing
// else. Any difference (another text between the numbers, a number the plan reads none
// of written otherwise, two tokens that were equal and are no longer) falls back to the
// full reading, which then makes the plan over.
//
// A plan is trusted on a line other than its own only once the full reading of such
// lines gave what the plan says (confirmed, trustAfter times): a number the full
// reading used in a way the plan cannot tell (a sum, a choice by size) shows there, and
// no plan is kept for it.

// maxPlanTokens bounds the number tokens of a line read by a plan (a mask of them is
// one word); planSlots is how many shapes a Parsed remembers: more than the shapes of
// most runs (a handful per framework), few enough to cost little.
const (
	maxPlanTokens = 64
	planSetBits   = 8
	// minPlanSetBits is the log2 of the sets a Parsed's table of shapes starts with.
	minPlanSetBits = 2
	planWays       = 4
	planSlots      = planWays << planSetBits
	// maxPlanMakes is how many plans a shape is given before it is given one only every
	// planRetryEvery-th line of it that no plan reads (a shape whose lines differ in a
	// number no plan reads, a count or a name's, is read in full): making a plan costs
	// a third of a reading.
	maxPlanMakes   = 8
	maxPlanMisses  = 16
	planRetryEvery = 64
)

// ptok is a number token of a line: s[start:end], start at its sign when it has one.
type ptok struct{ start, end int32 }

// planField is what a plan's output is: a sample's value, or a counter of LineInfo.
type planField uint8

const (
	fSample planField = iota
	fStep
	fEpoch
	fEpochSteps
	fBar
	fBarTotal
	fCounter
	fBarEpoch
)

// planOut is an output of a plan: the token that gives it, and which it is (the k-th
// sample's value, or a counter).
type planOut struct {
	tok   uint8
	field planField
	k     uint16
}

// plan is how a line of one shape is read (see above).
type plan struct {
	line      []byte // the line it was made from
	toks      []ptok // its number tokens
	local     int    // p.Local, p.group and the header it was made under
	group     string
	headerGen uint32
	// needGroup and needHeader are whether its reading depended on p.group (a row of a
	// table of key | value, a record's head) and on the header of columns (a row).
	needGroup, needHeader bool
	// free has a bit per token the outputs read; the others must be written alike
	// (sameForm).
	free uint64
	outs []planOut
	// eqs are pairs of tokens that had the value of one output: their text must stay
	// equal, or which of them the output is read from could matter.
	eqs [][2]uint8
	// rel is, for each token that is an integer and the next one too, how the two
	// compare (-1, 0, 1; noRel for other pairs): the full reading decides by it
	// (MXNet's [a-b] is a range when a < b, a step n/total within its total).
	rel     []int8
	samples []Sample
	info    LineInfo
	// confirmed counts the lines other than its own whose full reading it said.
	confirmed int
}

// trustAfter is how many lines a plan must have said (see confirmed) before it reads
// lines other than its own.
const trustAfter = 2

// planSlot is a shape remembered: its signature, its plans (nil while there is none;
// eight, the one used last first: the lines of a shape may alternate between texts,
// as Darknet's layers `Region 82 ...` and `Region 94 ...`, and the shape key reads no
// digit, so that lines whose names or heads differ in digits only share it), and the fails in a row of
// plans made for it, and the lines since that no plan read.
type planSlot struct {
	sig   uint64
	used  uint64 // when it was used last (planCache.clock)
	makes uint32
	tries uint32
	// misses counts the lines in a row no plan read: past maxPlanMisses, plans are
	// tried on one line in planRetryEvery only (a shape whose lines differ in what
	// no plan reads costs its tokens only).
	misses uint32
	pls    [8]*plan
}

// planCache holds the plans of one Parsed, for one extractor.
type planCache struct {
	e *Extractor
	// slots are 1<<bits sets of planWays slots: a few at first, doubled (up to
	// planSetBits) rather than a slot given up while they are fewer, so that a Parsed
	// that sees a few shapes (a wall's reader of one replica: 1,024 of them kept 79 MB
	// of slots) holds a few KB, and one that sees many remembers what the full table
	// would: a set of the smaller table holds the slots of the sets it splits into.
	slots []planSlot
	bits  uint
	clock uint64
	spare []*plan // plans dropped, whose room a new one takes
	// The tokens of the line being read, and scratch room for a prediction.
	toks    [maxPlanTokens]ptok
	n       int
	vals    [maxPlanTokens]float64
	samples []Sample
	// Counts, for tests and benchmarks: lines read by a plan, by the full reading.
	hits, full int64
}

// usePlans reports whether p's line may be read by a plan: no user pattern (their
// time is accounted line by line) and plans not turned off.
func (e *Extractor) usePlans(p *Parsed) bool {
	return !p.fullOnly && len(e.cfg.Patterns) == 0
}

// planCacheOf returns p's plans for e, made on first use.
func (p *Parsed) planCacheOf(e *Extractor) *planCache {
	c := p.plans
	if c == nil || c.e != e {
		c = &planCache{e: e}
		p.plans = c
	}
	return c
}

// tokenize finds the number tokens of s into c.toks and returns the signature of s's
// shape (the text between the tokens, cheaply), and false when s has too many tokens.
// A token starts at a digit that follows no letter, digit, _, @ or . (the 5 of .5R,
// the 1 of top1 and Acc@1 are the text of a name), with the - before it when that
// follows no letter or digit, and ends where readNumber ends it.
func (c *planCache) tokenize(s string) (uint64, bool) {
	n, last := 0, 0
	h := uint64(len(s))
	for i := 0; i < len(s); {
		if s[i]-'0' > 9 {
			i++
			for i+8 <= len(s) && !hasDigit(load64(s, i)) {
				i += 8 // eight bytes at a time over the text between numbers
			}
			continue
		}
		if i > 0 && glue[s[i-1]] {
			for i < len(s) && s[i]-'0' <= 9 {
				i++ // a name's digits
			}
			continue
		}
		if n == maxPlanTokens {
			return 0, false
		}
		start := i
		if i > 0 && s[i-1] == '-' && (i == 1 || class[s[i-2]]&(cLetter|cDigit) == 0 && s[i-2] != '_') {
			start = i - 1
		}
		end := numberEnd(s, i)
		c.toks[n] = ptok{int32(start), int32(end)}
		n++
		h = (h ^ uint64(start-last)<<8 ^ uint64(s[max(start, 1)-1])) * 0x9e3779b97f4a7c15
		last, i = end, end
	}
	h = (h ^ uint64(len(s)-last)<<32 ^ gapHead(s, last, len(s)) ^ gapHead(s, 0, min(len(s), 8))<<1) * 0x9e3779b97f4a7c15
	c.n = n
	return h ^ uint64(n), true
}

// hasDigit reports whether one of the eight bytes of x is an ASCII digit: for each byte
// b below 128, 0xB9-b has its top bit set when b <= '9' and b+0x50 when b >= '0', with no
// borrow or carry between bytes; a byte from 128 up is none (~x clears its top bit).
func hasDigit(x uint64) bool {
	const lo, hi, low7 = 0x0101010101010101, 0x8080808080808080, 0x7f7f7f7f7f7f7f7f
	y := x & low7
	return (lo*0xB9-y)&^x&(y+lo*0x50)&hi != 0
}

// numberEnd returns where the number token at i ends, as readNumber ends it: digits
// and dots, then an exponent when a digit follows its e and sign.
func numberEnd(s string, i int) int {
	for i < len(s) && (s[i]-'0' <= 9 || s[i] == '.') {
		i++
	}
	if i < len(s) && s[i]|0x20 == 'e' {
		k := i + 1
		if k < len(s) && (s[k] == '-' || s[k] == '+') {
			k++
		}
		if k < len(s) && s[k]-'0' <= 9 {
			for i = k; i < len(s) && s[i]-'0' <= 9; i++ {
			}
		}
	}
	return i
}

// glue is whether a digit after a byte is part of a word, not a number of its own: a
// letter, a digit, _ @ or . before it.
var glue = func() (t [256]bool) {
	for c := range 256 {
		t[c] = class[c]&(cLetter|cDigit) != 0 || c == '_' || c == '@' || c == '.'
	}
	return t
}()

// gapHead returns up to eight bytes of s[i:j] as a number, each digit as 0: the digits
// of a name (top1) or the head of a token (a timestamp's year) change from line to line
// of a shape, and the shape must not (predict compares the text).
func gapHead(s string, i, j int) uint64 {
	var h uint64
	for k := i; k < min(j, i+8); k++ {
		h = h<<8 | uint64(noDigit[s[k]])
	}
	return h
}

// noDigit maps a byte to itself, a digit to 0.
var noDigit = func() (t [256]byte) {
	for c := range 256 {
		t[c] = byte(c)
		if c >= '1' && c <= '9' {
			t[c] = '0'
		}
	}
	return t
}()

// value returns the value of token k of s (tokenized in c), as the full reading reads
// a number.
func (c *planCache) value(s string, k int) (float64, bool) {
	t := c.toks[k]
	i, neg := int(t.start), s[t.start] == '-'
	if neg {
		i++
	}
	return parseNumber(s[t.start:t.end], readNumber(s, i), neg)
}

// readByPlan reads s into p (reset, Local set) by a plan of its shape, and reports
// whether it did; when not, the caller reads s in full and calls learn with the slot
// of s's shape (nil when s has no shape a plan can read).
func (e *Extractor) readByPlan(s string, p *Parsed) (*planSlot, bool) {
	c := p.planCacheOf(e)
	sig, ok := c.tokenize(s)
	if !ok {
		return nil, false
	}
	sig ^= uint64(p.Local+1) * 0xc2b2ae3d27d4eb4f // the ranks of one stream apart
	sl, seen := c.slot(sig)
	if !seen {
		return sl, false // seen once: a plan is made the next time
	}
	if sl.misses >= maxPlanMisses {
		if sl.misses++; sl.misses%planRetryEvery != 0 {
			return nil, false
		}
	}
	for i, pl := range sl.pls {
		if pl == nil || !pl.fits(p.Local, p.group, p.headerGen) {
			continue
		}
		if s == string(pl.line) {
			p.Samples = append(p.Samples[:0], pl.samples...)
			p.LineInfo = pl.info
		} else if pl.confirmed >= trustAfter && c.predict(pl, s, &c.samples) {
			p.Samples = append(p.Samples[:0], c.samples...)
			p.LineInfo = pl.info
			c.setInfo(pl, &p.LineInfo)
		} else {
			continue
		}
		copy(sl.pls[1:i+1], sl.pls[:i])
		sl.pls[0] = pl
		sl.misses = 0
		c.hits++
		return sl, true
	}
	sl.misses++
	return sl, false
}

// slot returns the slot of the shape sig, and whether it was there: else the least
// recently used of its set is given to it, its plans kept for the next.
func (c *planCache) slot(sig uint64) (*planSlot, bool) {
	c.clock++
	if c.slots == nil {
		c.bits = minPlanSetBits
		c.slots = make([]planSlot, planWays<<c.bits)
	}
	var old *planSlot
	for {
		set := c.slots[(sig>>(64-c.bits))*planWays:][:planWays]
		old = &set[0]
		for i := range set {
			if sl := &set[i]; sl.sig == sig && sl.used != 0 {
				sl.used = c.clock
				return sl, true
			} else if sl.used < old.used {
				old = sl
			}
		}
		if old.used == 0 || c.bits == planSetBits {
			break
		}
		c.grow() // the set is full: the full table would have room
	}
	for i, pl := range old.pls {
		if pl != nil {
			c.spare = append(c.spare, pl)
			old.pls[i] = nil
		}
	}
	*old = planSlot{sig: sig, used: c.clock, pls: old.pls}
	return old, false
}

// grow doubles the sets of slots, each slot going to the set of its signature's next
// bit: a set splits in two, so every slot finds room.
func (c *planCache) grow() {
	old := c.slots
	c.bits++
	c.slots = make([]planSlot, planWays<<c.bits)
	for i := range old {
		sl := &old[i]
		if sl.used == 0 {
			continue
		}
		set := c.slots[(sl.sig>>(64-c.bits))*planWays:][:planWays]
		for j := range set {
			if set[j].used == 0 {
				set[j] = *sl
				break
			}
		}
	}
}

// fits reports whether pl reads lines under the state local, group, gen of a Parsed.
func (pl *plan) fits(local int, group string, gen uint32) bool {
	return pl.local == local && (!pl.needGroup || pl.group == group) && (!pl.needHeader || pl.headerGen == gen)
}

// predict reads s (tokenized in c) by pl into samples and c.vals, and reports whether
// s fits pl: the same text between tokens, the same tokens where pl reads none, equal
// tokens still equal, and each token pl reads a number.
func (c *planCache) predict(pl *plan, s string, samples *[]Sample) bool {
	if c.n != len(pl.toks) {
		return false
	}
	prev, pprev := 0, 0
	for k := range c.n {
		a, b := c.toks[k], pl.toks[k]
		if s[prev:a.start] != string(pl.line[pprev:b.start]) {
			return false
		}
		if pl.free&(1<<k) == 0 && !sameForm(s[a.start:a.end], pl.line[b.start:b.end]) {
			return false
		}
		prev, pprev = int(a.end), int(b.end)
	}
	if s[prev:] != string(pl.line[pprev:]) {
		return false
	}
	if !c.sameOrder(pl, s) {
		return false
	}
	for _, q := range pl.eqs {
		a, b := c.toks[q[0]], c.toks[q[1]]
		if s[a.start:a.end] != s[b.start:b.end] {
			return false
		}
	}
	for k := range c.n {
		if pl.free&(1<<k) != 0 {
			a, b := c.toks[k], pl.toks[k]
			if !sameKind(s[a.start:a.end], pl.line[b.start:b.end]) {
				return false
			}
			v, ok := c.value(s, k)
			if !ok {
				return false
			}
			c.vals[k] = v
		}
	}
	*samples = append((*samples)[:0], pl.samples...)
	for _, o := range pl.outs {
		v := c.vals[o.tok]
		if o.field == fSample {
			(*samples)[o.k].Value = v
		} else if v != math.Trunc(v) || math.Abs(v) >= 1<<53 {
			return false
		}
	}
	return true
}

// setInfo sets the counters of info that pl reads from tokens (predict read them).
func (c *planCache) setInfo(pl *plan, info *LineInfo) {
	for _, o := range pl.outs {
		v := int64(c.vals[o.tok])
		switch o.field {
		case fStep:
			info.Step = v
		case fEpoch:
			info.Epoch = v
		case fEpochSteps:
			info.EpochSteps = v
		case fBar:
			info.Bar = v
		case fBarTotal:
			info.BarTotal = v
		case fCounter:
			info.Counter = v
		case fBarEpoch:
			info.barEpoch = v
		}
	}
}

// learn is called after the full reading of s into p, when readByPlan returned sl
// (the slot of s's shape) and did not read it: it confirms a plan of sl when it says
// what the full reading said, else makes a plan of s in sl (from its second line on:
// a line seen once may be the only one of its shape).
func (e *Extractor) learn(s string, p *Parsed, sl *planSlot, local int, group string, gen uint32) {
	c := p.plans
	c.full++
	if p.group != group || p.headerGen != gen || p.Local != local {
		return // the line changed what reads the lines after it: no plan of it
	}
	if sl.tries++; sl.tries == 1 {
		return // first seen now: wait for a second line of the shape
	}
	for _, pl := range sl.pls {
		if pl == nil || pl.confirmed >= trustAfter || !pl.fits(local, group, gen) || s == string(pl.line) {
			continue
		}
		if c.predict(pl, s, &c.samples) {
			info := pl.info
			c.setInfo(pl, &info)
			if info == p.LineInfo && sameSamples(c.samples, p.Samples) {
				pl.confirmed++
				return
			}
		}
	}
	if sl.makes >= maxPlanMakes && sl.tries%planRetryEvery != 0 {
		return
	}
	sl.makes++
	pl := c.makePlan(s, p, local, group, gen)
	if pl == nil {
		return
	}
	if last := sl.pls[len(sl.pls)-1]; last != nil {
		c.spare = append(c.spare, last)
	}
	copy(sl.pls[1:], sl.pls[:len(sl.pls)-1])
	sl.pls[0] = pl
}

// sameSamples reports whether a and b are the same samples, values to the bit.
func sameSamples(a, b []Sample) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Unit != b[i].Unit || math.Float64bits(a[i].Value) != math.Float64bits(b[i].Value) {
			return false
		}
	}
	return true
}

// makePlan makes the plan of s from what its full reading put in p (see plan), or
// returns nil when a value comes from no token of s (3.2K, 1,234: read in full).
func (c *planCache) makePlan(s string, p *Parsed, local int, group string, gen uint32) *plan {
	if len(p.Samples) > 1<<16 {
		return nil
	}
	for k := range c.n {
		v, ok := c.value(s, k)
		if !ok {
			v = math.NaN() // a token that is no number matches no value
		}
		c.vals[k] = v
	}
	pl := c.newPlan()
	pl.line = append(pl.line, s...)
	pl.toks = append(pl.toks, c.toks[:c.n]...)
	c.relations(pl, s)
	pl.samples = append(pl.samples, p.Samples...)
	pl.local, pl.group, pl.headerGen, pl.info = local, group, gen, p.LineInfo
	pl.needHeader = p.headerRead
	pl.needGroup = strings.IndexByte(s, '|') >= 0 || p.HasStep && p.Step >= 0 && len(p.Samples) == 0
	last := -1
	for k, smp := range p.Samples {
		v := smp.Value
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue // nan, inf: words, the same on every line of the shape
		}
		t := c.pick(pl, v, last, false)
		if t < 0 {
			c.spare = append(c.spare, pl)
			return nil
		}
		pl.outs = append(pl.outs, planOut{tok: uint8(t), field: fSample, k: uint16(k)})
		last = t
	}
	info := &p.LineInfo
	c.counter(pl, fStep, info.Step, info.Step > 0 || info.HasStep && info.Step == 0)
	c.counter(pl, fEpoch, info.Epoch, info.Epoch >= 0)
	c.counter(pl, fEpochSteps, info.EpochSteps, info.EpochSteps > 0)
	c.counter(pl, fBar, info.Bar, info.Bar >= 0)
	c.counter(pl, fBarTotal, info.BarTotal, info.BarTotal > 0)
	c.counter(pl, fCounter, info.Counter, info.Counter > 0 || info.HasCounter && info.Counter == 0)
	c.counter(pl, fBarEpoch, info.barEpoch, info.barEpoch >= 0)
	return pl
}

// newPlan returns an empty plan, in the room of one dropped when there is one.
func (c *planCache) newPlan() *plan {
	if n := len(c.spare); n > 0 {
		pl := c.spare[n-1]
		c.spare = c.spare[:n-1]
		*pl = plan{line: pl.line[:0], toks: pl.toks[:0], outs: pl.outs[:0], eqs: pl.eqs[:0], samples: pl.samples[:0], rel: pl.rel[:0]}
		return pl
	}
	return &plan{}
}

// counter makes the counter f of LineInfo, of value n when has, an output of pl when a
// token of the line holds it (else it is as the line's, confirmed or not by the next).
func (c *planCache) counter(pl *plan, f planField, n int64, has bool) {
	if !has {
		return
	}
	if t := c.pick(pl, float64(n), -1, true); t >= 0 {
		pl.outs = append(pl.outs, planOut{tok: uint8(t), field: f})
	}
}

// pick returns the token of value v that an output is read from: the first after
// token last, else the first; the others of that value must stay equal to it (pl.eqs).
// integer asks for a token written as an integer. It returns -1 when none has v.
func (c *planCache) pick(pl *plan, v float64, last int, integer bool) int {
	t, first := -1, -1
	bits := math.Float64bits(v)
	for k := range c.n {
		if math.Float64bits(c.vals[k]) != bits {
			continue
		}
		if integer && !plainInt(pl.line, c.toks[k]) {
			continue
		}
		if first < 0 {
			first = k
		}
		if t < 0 && k > last {
			t = k
		}
	}
	if t < 0 {
		t = first
	}
	if t < 0 {
		return -1
	}
	for k := range c.n {
		if k != t && math.Float64bits(c.vals[k]) == bits {
			pl.eqs = append(pl.eqs, [2]uint8{uint8(t), uint8(k)})
		}
	}
	pl.free |= 1 << t
	return t
}

// sameForm reports whether the tokens a and b are written alike: as many digits, the
// same bytes between them (a timestamp's, a count's of the same width), both zero or
// both not (the full reading tells 0 from other numbers: a total of 0 is none). A token no
// output reads may change so; its reading may not, which confirmation tells.
// Past maxFreeDigits digits a token must be the same text: the full reading bounds its
// counters from ten digits on (maxEpochCount); so must a token with an exponent, whose
// value may overflow (`loss 9e385`: no value, where `loss 1e085` is one).
func sameForm(a string, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	digits, same, za, zb, exp := 0, true, true, true, false
	for i := range len(a) {
		if a[i]-'0' <= 9 {
			digits++
			za = za && a[i] == '0'
			zb = zb && b[i] == '0'
		}
		exp = exp || a[i]|0x20 == 'e'
		if a[i] != b[i] {
			same = false
			if a[i]-'0' > 9 || b[i]-'0' > 9 {
				return false
			}
		}
	}
	return same || !exp && digits <= maxFreeDigits && za == zb
}

// noRel marks a pair of tokens of a plan that are not two integers.
const noRel = 2

// sameOrder reports whether the neighbouring integers of s compare as pl's did.
func (c *planCache) sameOrder(pl *plan, s string) bool {
	prev, prevOK := int64(0), false
	for k := range c.n {
		if pl.rel[k] == noRel && (k == 0 || pl.rel[k-1] == noRel) {
			prevOK = false
			continue
		}
		t := c.toks[k]
		n, ok := atoi(s[t.start:t.end])
		if !ok {
			return false
		}
		if k > 0 && pl.rel[k-1] != noRel && (!prevOK || cmpInt(prev, n) != pl.rel[k-1]) {
			return false
		}
		prev, prevOK = n, true
	}
	return true
}

// relations sets pl.rel from the tokens of s (see plan.rel).
func (c *planCache) relations(pl *plan, s string) {
	for k := range c.n {
		r := int8(noRel)
		if k+1 < c.n {
			a, b := c.toks[k], c.toks[k+1]
			x, ok1 := atoi(s[a.start:a.end])
			y, ok2 := atoi(s[b.start:b.end])
			if ok1 && ok2 {
				r = cmpInt(x, y)
			}
		}
		pl.rel = append(pl.rel, r)
	}
}

// cmpInt compares a and b: -1, 0 or 1.
func cmpInt(a, b int64) int8 {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// sameKind reports whether the tokens a and b, which outputs read, are numbers of one
// kind: written alike but for how many digits in a run (an integer, a decimal, an
// exponent), both zero or both not, and the same text where an integer is past
// maxFreeDigits digits. The full reading decides by these (a total of 0 is none, a
// count past maxEpochCount no step); by nothing else of a number's value.
func sameKind(a string, b []byte) bool {
	i, j, digits, za, zb := 0, 0, 0, true, true
	for i < len(a) && j < len(b) {
		da, db := a[i]-'0' <= 9, b[j]-'0' <= 9
		switch {
		case da != db:
			return false
		case da:
			for ; i < len(a) && a[i]-'0' <= 9; i++ {
				za = za && a[i] == '0'
				digits++
			}
			for ; j < len(b) && b[j]-'0' <= 9; j++ {
				zb = zb && b[j] == '0'
			}
		case a[i] != b[j]:
			return false
		default:
			i, j = i+1, j+1
		}
	}
	if i != len(a) || j != len(b) || za != zb {
		return false
	}
	return digits <= maxFreeDigits || a == string(b)
}

// maxFreeDigits bounds the digits of a token no output reads that may change.
const maxFreeDigits = 9

// plainInt reports whether token t of s is digits only.
func plainInt(s []byte, t ptok) bool {
	for i := t.start; i < t.end; i++ {
		if s[i]-'0' > 9 {
			return false
		}
	}
	return true
}
