// Package metrics turns the numbers in training logs into series: it extracts named
// values (loss, lr, grad_norm, tok/s) from the lines training scripts print, keeps them
// per rank in bounded memory, and raises alarms when a value is NaN or Inf or when one
// rank departs from the others. It needs no terminal: the CLI and the log wall both
// feed it sched.Line values and draw what it holds.
//
// # Stages
//
// A line is read in stages (see DESIGN.md):
//
//  1. Clean: torchrun's `[N]:` prefix gives the local rank; a line redrawn with `\r`
//     (a progress bar) is read from its last drawing, whatever its length; ANSI
//     escape sequences are removed; then at most MaxLineBytes are read, cut at a space
//     so that no number is cut.
//  2. Tokenize and pair: a value is a number written after a name: `loss 2.84`,
//     `loss=2.84`, `loss: 2.84`, `loss:2.84` (a fraction: `file.py:42` and `host:29500`
//     are not values), `'loss': 2.84` and `'loss': '2.84'` (Python dicts, quoted
//     strings too), `"loss": 2.84` (JSON), `lr=[0.001]` (a one-element list). Numbers
//     are decimal with an optional sign, fraction and exponent (`1.06E+01`), thousands
//     separators (`1,234`), or nan, inf, infinity in any case and with any sign. A
//     unit written against the number stays with the value (`30.12ms`, `25.1GiB`, `98%`),
//     as does a unit in parentheses before the separator (`time (ms): 12.5`); a
//     parenthesis right after the value (`25.1GiB(31.7%)`) is a remark, not a value.
//     `9800/10000` after a metric's name is the fraction 0.98; after a step name, the
//     step 9800. Several words before a `:` or `=` in one field are one name
//     (`| lm loss: 1.06E+01 |` is lm_loss, `grad norm: 1.2` grad_norm). A tqdm rate
//     (`20.00it/s`, `1.98s/it`, `48213 tok/s`) is a metric named by its unit.
//  3. Context: train, val, test or eval, from the name (`val_loss`, `eval_loss`,
//     `valid loss`), or from the line (`Test set:`, `| valid |`, `Epoch(val)`,
//     `validate step:`): validation values are the series val/NAME (test/NAME,
//     eval/NAME), never merged into the training ones. A name qualified by train in its
//     own words is train/NAME (nanoGPT's estimate `train loss` beside its `loss`).
//     A summary line (` * Acc@1 76.130`) takes the context of the last line with
//     values of its rank's stream (Parsed.Summary, given by the Store).
//  4. Step: the value of a step name (step, global_step, iter, it, iteration,
//     num_updates), else a counter in brackets before the values (`[ 50/1251]` is step
//     50), else torchtune's `1|50|`. A counter in brackets with the epoch on its line
//     (`Train: 1 [ 100/1251]`) is a step within that epoch (Parsed.EpochSteps): the
//     Store counts it over epochs. A line with a counter of its own that is not a
//     step (`[ 1,  2000] loss: 2.2`) has NoStep: it takes no step from other lines.
//
// The stages live in clean.go, value.go (a number and what follows it), names.go
// (names, contexts, settings), steps.go and table.go (header lines and rows); this
// file walks a line through them.
//
// Names are lowercased. Names that are never metrics are dropped: ids and ports (pid,
// port, rank, names ending in _pid, _port, _rank, _id) and settings and counters
// (names whose last word is size, epochs, steps, parameters, examples, samples,
// workers..., or whose first word is num or number: batch_size, num_examples,
// consumed samples). A value that stays the same all along a run is a setting too: the
// Store lists it apart (see Store.Settings).
//
// # Bounds
//
// At most MaxLineBytes of a line's last drawing are read, at most MaxValuesPerLine
// values are taken from it, and a number longer than maxNumberLen characters (or one
// that overflows a float64) is not a value. User patterns are RE2 expressions, linear
// in the line's length. Work per line is therefore bounded whatever the line holds.
package metrics

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Limits on the work done per line.
const (
	// MaxLineBytes is how much of a line's last drawing is read: training lines are a
	// few hundred bytes; a JSON line of a few dozen metrics fits in 4 KiB.
	MaxLineBytes = 4 << 10
	// MaxValuesPerLine bounds the values taken from one line: a line with thousands of
	// numbers (a printed tensor) is data dumped, not metrics.
	MaxValuesPerLine = 64
	// maxNumberLen is the longest number token read: a float64 needs at most 24
	// characters; anything longer is an id, a hash or garbage.
	maxNumberLen = 40
	// MaxNameLen is the longest metric name.
	MaxNameLen = 64
	// maxNameWords is how many words one name may have (`number of nan iterations`).
	maxNameWords = 5
	// maxUnitLen is the longest unit in parentheses (`(TFLOP/s/GPU)`).
	maxUnitLen = 16
)

// NoStep is the Step of a line that prints a counter of its own which is not a step
// (DeepSpeed's example `[ 1,  2000] loss:  2.213`): its values have no step, and do not
// take the last step of their rank, which another kind of line printed.
const NoStep = -1

// Sample is one named value read from a line.
type Sample struct {
	Name  string
	Value float64
	// Unit is what the line wrote against the value (ms, GiB, %), or "".
	Unit string
}

// LineInfo is what a line says beside its values: the step it names, torchrun's
// local rank, and what the Store needs of it to place its values in its rank's
// stream. A reader that keeps lines' values apart from their Parsed (wick metrics
// extracts in a goroutine of its own) keeps it with them.
type LineInfo struct {
	// Step is the step the line names, when HasStep; NoStep when the line has a
	// counter of its own that is not a step.
	Step    int64
	HasStep bool
	// Local is the local rank of torchrun's prefix, or -1.
	Local int
	// Summary is whether the line sums up the lines before it and names no context of
	// its own (imagenet's ` *   Acc@1 76.130 Acc@5 92.862` after validation): its
	// values are in the context of the last line with values of its rank's stream,
	// which the Store gives them (inContext).
	Summary bool
	// EpochSteps is, when Step is counted within an epoch (a counter in brackets with
	// its total: timm's `Train: 1 [ 100/1251]`, mmengine's `[1][ 50/500]`), that total
	// (else 0); Epoch is the epoch the line names, -1 when none (imagenet's `Test: [
	// 1/196]`: the Store takes its stream's last).
	Epoch, EpochSteps int64
	// Bar is the position of a progress bar's drawing (tqdm's `20/200 [00:01<...`,
	// rich's `200/200 0:00:10`), -1 when none, and BarTotal its total (-1: `?`). A
	// training bar's position is its step when the line names none (BarStep); the
	// Store counts it over the bar's restarts when no epoch is named.
	Bar, BarTotal int64
	BarStep       bool
	// barEpoch is the epoch the bar's line names (-1: none), until its values are read.
	barEpoch int64
	// notTrain is whether the line's bar is not training's (see notTraining), once
	// asked for one of its drawings: 0 not asked yet, 1 training's, 2 not.
	notTrain uint8
	// Counter is the one number in brackets before the line's values (`[100] loss=2.3`,
	// XGBoost's `[0]\ttrain-logloss:0.54`, CLU's `[100] loss=...` after absl's prefix),
	// when HasCounter: the line's Step is NoStep, and the Store makes it the step when
	// it rises line after line on the stream (a count of something else need not).
	Counter    int64
	HasCounter bool
	// EpochOnly is whether the line names an epoch (Epoch) and no finer counter: the
	// epoch is its step in a run that counts nothing finer (PyG's `Epoch: 001, Loss:`,
	// fastai's table), else the line sums the epoch up (flair's `EPOCH 1 done: loss
	// 0.91`) and its training values are the series epoch/NAME (see Store.AddParsed).
	EpochOnly bool
	// Header is whether the line names a step and no value and ends with a colon: the
	// head of a record whose indented lines are at its step (Composer's
	// `[epoch=1][batch=10/100]:` then one metric a line); Indented whether the line
	// starts with a space or a tab.
	Header, Indented bool
	// Indent is how deep the line is indented (spaces and tabs, after a glog prefix): a
	// record's lines are indented deeper than its head, which may itself be indented
	// (Coqui's `   --> TIME: ... -- GLOBAL_STEP: 25` over `     | > loss: 3.78`).
	Indent int
	// CtxHead is whether the line names a context and no value and ends with a colon:
	// the head of the values on the line under it, which are in that context (RecBole's
	// `valid result:` then `recall@10 : 0.0798    mrr@10 : 0.0412`).
	CtxHead bool
	// CtxOfIndented is whether the context of a head without a colon (BasicSR's
	// `Validation Set5`) is that of the indented lines right under it only.
	CtxOfIndented bool
	// tableHead is whether the line is a group's of a table of key | value (within its
	// record, but at no step).
	tableHead bool
	// Rule is whether the line is a rule of dashes, the edge of a table's record
	// (Baselines' and SB3's dumps); KVRow whether it is a row `| key | value |`; Blank
	// whether it is empty (it ends what a head line began).
	Rule, KVRow, Blank bool
	// ctx is the context the line names for all its values ("" for none or train).
	ctx string
	// epochOpen is whether the step is counted within Epoch, whose total of steps the
	// line does not print (see stream.restartStep).
	epochOpen bool
	// averaged is whether a summary says it averages what came before (`Averaged stats:`):
	// after training's lines, the epoch's summary (epoch/NAME).
	averaged bool
}

// Parsed is what one line says: its values, the step it names, and torchrun's local
// rank when the line carries a `[N]:` prefix.
type Parsed struct {
	Samples []Sample
	LineInfo

	// names remembers recent names that are not words of the extractor's table
	// (eval_runtime, tokens_per_sec), so that a name read line after line is
	// allocated once: a value's name must not pin its line.
	names [nameCache]nameSlot
	// clean holds a line without its escape sequences.
	clean []byte
	// frames are the earlier drawings of a line redrawn with \r that carry values,
	// their samples in frameSamples (see Drawings).
	frames       []drawing
	frameSamples []Sample
	// header is the last header line of columns read (Ultralytics' `Epoch GPU_mem
	// box_loss ...`), for the rows of values under it, and headerLocal its local rank.
	header      []string
	headerLocal int
	// group is the group of the rows of a table of key | value that follow its line
	// (Stable-Baselines3's `| rollout/    |     |`), "" when none.
	group string
	// The time each user pattern took, over how many lines, and the patterns skipped
	// for their time (see PatternLineBudget), with their notices.
	patTime  [maxPatterns]time.Duration
	patLines [maxPatterns]int64
	patSkip  uint32
	notices  []string
	// pairs remembers what the names written before values mean (see pairOf).
	pairs *pairCache
	// plans are how lines of the shapes seen read (see plan.go); headerGen counts the
	// header lines taken, headerRead is whether the line's reading looked at the last
	// (a plan is made under it); fullOnly turns plans off (tests).
	plans      *planCache
	headerGen  uint32
	headerRead bool
	fullOnly   bool
}

// Notices says what the extraction gave up on (a user pattern too slow), once each.
func (p *Parsed) Notices() []string { return p.notices }

// nameCache is how many names a Parsed remembers: more than the unusual names of most
// lines.
const (
	nameCacheBits = 8
	nameCache     = 1 << nameCacheBits
)

// intern returns name as a string, the one it returned before when it can.
func (p *Parsed) intern(name []byte) string {
	return p.internSlot(name).name
}

// internSlot returns the cache slot of name, filled.
func (p *Parsed) internSlot(name []byte) *nameSlot {
	// Two ways: a name is at k or k^1, the one used last at k.
	k := hashWord(headOf(name), len(name)) >> (64 - nameCacheBits)
	a, b := &p.names[k], &p.names[k^1]
	if a.name == string(name) && (a.name != "" || len(name) == 0) {
		return a
	}
	if b.name == string(name) && b.name != "" {
		*a, *b = *b, *a
		return a
	}
	*b = *a
	*a = nameSlot{name: string(name)}
	return a
}

// nameSlot is a name remembered, and whether add found it a setting (0: not asked yet,
// 1: a metric, 2: a setting or an id).
type nameSlot struct {
	name    string
	verdict uint8
}

// Reset empties p for reuse, keeping its buffers.
func (p *Parsed) Reset() {
	p.Samples = p.Samples[:0]
	p.LineInfo = LineInfo{Local: -1, Epoch: -1, Bar: -1, barEpoch: -1}
}

// Extractor reads values from lines as a Config says. It keeps no state between lines
// and may be shared by goroutines.
type Extractor struct {
	cfg Config
	// words says at once what a word before a value is: a step key, an ignored name,
	// a metric (with its interned name), a stop word or a qualifier.
	words wordTable
	// listed is whether cfg.Only lists the metrics: a name it does not list is none.
	listed bool
	// lineBudget and meanBudget bound the time a user pattern takes (see
	// PatternLineBudget).
	lineBudget, meanBudget time.Duration
}

// Budgets of a user pattern, per Parsed (a reader of lines): RE2 is linear in the line,
// but a pattern of many groups and .* on a 4 KiB line can take milliseconds, and the
// app list's background scan reads millions of lines. A pattern that takes more than
// PatternLineBudget on one line, or more than PatternMeanBudget a line on average over
// patternMeanAfter lines, is skipped from then on, with a notice (Parsed.Notices).
const (
	PatternLineBudget = 5 * time.Millisecond
	PatternMeanBudget = 50 * time.Microsecond
	patternMeanAfter  = 256
)

// NewExtractor returns an extractor for cfg (see DefaultConfig).
func NewExtractor(cfg Config) *Extractor {
	ignore := map[string]bool{}
	for _, n := range defaultIgnore {
		ignore[n] = true
	}
	for _, n := range cfg.Ignore {
		ignore[CanonicalName(n)] = true
	}
	var only map[string]bool
	if len(cfg.Only) > 0 {
		only = map[string]bool{}
		for _, n := range cfg.Only {
			only[CanonicalName(n)] = true
			delete(ignore, CanonicalName(n))
		}
	}
	keys := cfg.StepKeys
	if len(keys) == 0 {
		keys = DefaultStepKeys
	}
	// The word of a listed qualified name (loss, of val/loss) must not read as ignored:
	// a name's words are looked up before its qualifier is put back (resolve), and a
	// bare loss is dropped there all the same, as a name not listed.
	bases := map[string]bool{}
	for n := range only {
		if _, rest := splitQualifier([]byte(n)); len(rest) < len(n) {
			bases[string(rest)] = true
		}
	}
	words := map[string]wordInfo{}
	for _, n := range append(append([]string(nil), commonNames...), cfg.Only...) {
		n = CanonicalName(n)
		switch {
		case keep(n, only, ignore):
			words[n] = wordInfo{name: n, kind: kindMetric}
		case bases[n] && !ignore[n]:
		default:
			words[n] = wordInfo{kind: kindIgnore}
		}
	}
	// Every listed and every ignored name is now a word: a name that is not one is
	// kept unless the metrics are listed or its words mark an id or a setting (see
	// addUnknown).
	for n := range ignore {
		words[n] = wordInfo{kind: kindIgnore}
	}
	for _, k := range keys {
		words[strings.ToLower(k)] = wordInfo{kind: kindStep}
	}
	return &Extractor{cfg: cfg, words: newWordTable(words), listed: only != nil,
		lineBudget: PatternLineBudget, meanBudget: PatternMeanBudget}
}

// keep reports whether a name is a metric under the configuration's lists.
func keep(name string, only, ignore map[string]bool) bool {
	if only != nil {
		return only[name]
	}
	return !ignore[name] && !isSetting([]byte(name))
}

// Config returns the extractor's configuration.
func (e *Extractor) Config() Config { return e.cfg }

// DefaultStepKeys are the names that give a line's step (iters: CycleGAN's `(epoch: 1,
// iters: 100, ...)`). `steps` is not one: `Steps: 32` is a count of steps (per epoch, to
// run), not the step a line is at, unless it begins a line of values (leadSteps).
var DefaultStepKeys = []string{"step", "global_step", "iter", "it", "iteration", "iters", "num_updates", "total_timesteps", "total_steps"}

// Extract reads the values of one line into p (which it resets first).
func (e *Extractor) Extract(text string, p *Parsed) {
	p.Reset()
	text, p.Local = localRank(text)
	if strings.IndexByte(text, '\r') >= 0 && e.drawings(text, p) {
		return
	}
	p.frames, p.frameSamples = p.frames[:0], p.frameSamples[:0]
	e.readDrawing(text, p)
}

// readDrawing reads a line, or one drawing of a line redrawn with \r, into p: by the
// plan of its shape when one is known and trusted, else in full (and learns a plan).
// A bar's drawings are most of the reading's time when read in full: they differ in
// their numbers only.
func (e *Extractor) readDrawing(text string, p *Parsed) {
	if !e.usePlans(p) {
		e.extractDrawing(text, p)
		return
	}
	sl, ok := e.readByPlan(text, p)
	if ok {
		return
	}
	local, group, gen := p.Local, p.group, p.headerGen
	p.headerRead = false
	e.extractDrawing(text, p)
	if sl != nil {
		e.learn(text, p, sl, local, group, gen)
	}
}

// maxDrawings bounds the drawings of one line read as points: a bar redrawn for hours
// without a newline is read from its last maxDrawings drawings.
const maxDrawings = 1 << 13

// drawings reads a line redrawn with \r (a progress bar): every drawing that carries
// values is a point, whatever the pattern of the writes that stored it, and a drawing
// at the bar's position of the one before it replaces it (tqdm draws a step's postfix,
// then the same again when it moves on). The last drawing with values is p's own; the
// ones before it are p's earlier drawings (see Parsed.Drawings). It reports false when
// no drawing carries a value: the line is then read as its last drawing.
func (e *Extractor) drawings(text string, p *Parsed) bool {
	t := strings.TrimRight(text, "\r\b")
	if strings.IndexByte(t, '\r') < 0 {
		return false
	}
	local := p.Local
	p.frames, p.frameSamples = p.frames[:0], p.frameSamples[:0]
	// From the last drawing back: a drawing at the bar position of the next one with
	// values is replaced by it, and need not be read (tqdm draws each position twice).
	next := int64(-1) // the bar position of the next drawing kept, when its reading agreed
	for end, n := len(t), 0; end > 0 && n < maxDrawings; n++ {
		k := strings.LastIndexByte(t[:end], '\r')
		seg := t[k+1 : end]
		end = max(0, k)
		if seg == "" {
			continue
		}
		quick := quickBar(seg)
		if quick >= 0 && quick == next {
			continue
		}
		p.Samples = p.Samples[:0]
		p.LineInfo = LineInfo{Local: local, Epoch: -1, Bar: -1, barEpoch: -1, notTrain: p.notTrain}
		e.readDrawing(seg, p)
		if len(p.Samples) == 0 {
			continue
		}
		next = -1
		if p.Bar >= 0 && p.Bar == quick {
			next = p.Bar
		}
		lo := len(p.frameSamples)
		p.frameSamples = append(p.frameSamples, p.Samples...)
		p.frames = append(p.frames, drawing{info: p.LineInfo, lo: lo, hi: len(p.frameSamples)})
	}
	slices.Reverse(p.frames)
	if len(p.frames) == 0 {
		p.Reset()
		p.Local = local
		return false
	}
	last := p.frames[len(p.frames)-1]
	p.frames = p.frames[:len(p.frames)-1]
	p.Samples = append(p.Samples[:0], p.frameSamples[last.lo:last.hi]...)
	p.LineInfo = last.info
	return true
}

// drawing is an earlier drawing of a line with values: its LineInfo and its samples,
// p.frameSamples[lo:hi].
type drawing struct {
	info   LineInfo
	lo, hi int
}

// quickBar returns the position of a tqdm bar's drawing (`| 20/200 [00:01<`), found
// without reading the drawing's values, or -1.
func quickBar(s string) int64 {
	for i := strings.IndexByte(s, '|'); i >= 0 && i+2 < len(s); {
		j := i + 1
		for j < len(s) && s[j] == ' ' {
			j++
		}
		a := j
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if j > a && j < len(s) && s[j] == '/' {
			if n, _, _, ok := barPosition(s, a, j); ok {
				return n
			}
		}
		k := strings.IndexByte(s[i+1:], '|')
		if k < 0 {
			break
		}
		i += k + 1
	}
	return -1
}

// Drawings calls fn with each earlier drawing of the line that carries values (a
// progress bar's), in order, before p's own: each is a point of its own. fn must not
// keep samples.
func (p *Parsed) Drawings(fn func(info LineInfo, samples []Sample)) {
	for _, d := range p.frames {
		fn(d.info, p.frameSamples[d.lo:d.hi])
	}
}

// extractDrawing reads the values of one drawing of a line into p (reset but for Local).
func (e *Extractor) extractDrawing(text string, p *Parsed) {
	text = levelPrefixCut(p.cleanLine(text))
	p.markShape(text)
	if len(text) > 0 && (text[0] == '|' || text[0] == '-') && p.tableGroup(text) {
		p.Indented, p.tableHead = true, true
		return
	}
	if p.group != "" && strings.HasPrefix(text, "|   ") {
		p.Indented = true // a row of the table: a record whose step one of its rows names
	}
	if mayHoldNumber(text) || endsWithColon(text) {
		e.scan(text, p) // a head without numbers names its context (`valid result:`)
	}
	e.table(text, p)
	p.stepFromBar(text)
	e.runPatterns(text, p)
}

// endsWithColon reports whether s ends with a colon, spaces after it aside.
func endsWithColon(s string) bool {
	i := len(s) - 1
	for i >= 0 && s[i] == ' ' {
		i--
	}
	return i >= 0 && s[i] == ':'
}

// levelPrefixCut returns the message of a line a logger wrote after a prefix that
// ends with its INFO level (Swin's `[2026-12-06 10:00:05 swin_t](main.py 98): INFO `,
// maskrcnn-benchmark's `2026-12-06 10:00:12,118 maskrcnn_benchmark.trainer INFO: `,
// mmengine's `11/20 10:00:10 - mmengine - INFO - `): the time, the logger's name and the
// source's file and line are no values. A prefix holds a digit (a time, a line number).
func levelPrefixCut(s string) string {
	k := strings.Index(s[:min(len(s), maxPrefixLen)], "INFO")
	if k < 2 || k+5 >= len(s) {
		return s
	}
	switch s[k-1] {
	case ' ', ')', ']':
	default:
		return s
	}
	j := k + 4
	if s[j] == ':' {
		j++
	}
	if j+2 < len(s) && s[j] == ' ' && (s[j+1] == '-' || s[j+1] == '|') && s[j+2] == ' ' {
		j += 2
	}
	if j >= len(s) || s[j] != ' ' || !strings.ContainsAny(s[:k], "0123456789") || strings.ContainsAny(s[:k], "=\"") {
		return s
	}
	return strings.TrimLeft(s[j:], " ")
}

// markShape marks in p what the shape of a clean line says: indented (or under a glog
// prefix), a rule of dashes, a row of a two-column key-value table.
func (p *Parsed) markShape(text string) {
	p.Indent = indentOf(text, 0)
	p.Blank = p.Indent == len(text)
	p.Indented = p.Indent > 0
	if k := glogPrefixEnd(text); k > 0 && k < len(text) && text[k] == ' ' {
		p.Indented = true // Caffe's `I1206 10:00:01.5 4211 solver.cpp:258]     Train net output #0: ...`
		p.Indent = indentOf(text, k)
	}
	if len(text) >= 8 && text[0] == '-' && strings.Trim(text, "- ") == "" {
		p.Rule = true
	}
	if len(text) > 4 && text[0] == '|' && strings.HasSuffix(strings.TrimRight(text, " "), "|") && strings.Count(text, "|") == 3 {
		p.KVRow = true
	}
}

// indentOf returns how many spaces and tabs begin s[i:] (at most 64).
func indentOf(s string, i int) int {
	n := 0
	for i+n < len(s) && (s[i+n] == ' ' || s[i+n] == '\t') && n < 64 {
		n++
	}
	return n
}

// stepFromBar makes a training bar's position the step of the line's values when the
// line names no step or context of its own: within the epoch the line names, else
// within the bar (the Store counts the bar's restarts).
func (p *Parsed) stepFromBar(text string) {
	if p.Bar < 0 || p.HasStep || p.ctx != "" || !hasMeasure(p.Samples) || p.notTraining(text) {
		return
	}
	p.Step, p.HasStep, p.BarStep = p.Bar, true, true
	if p.BarTotal > 0 && p.BarTotal < maxEpochCount && p.barEpoch >= 0 {
		p.Epoch, p.EpochSteps = p.barEpoch, p.BarTotal
	}
}

// runPatterns reads the values of the configured patterns into p, timing each: a
// pattern over the budget of one line, or over the mean budget on average, is skipped
// from then on, with a notice.
func (e *Extractor) runPatterns(text string, p *Parsed) {
	for i := range e.cfg.Patterns {
		if len(p.Samples) >= MaxValuesPerLine {
			break
		}
		if i >= maxPatterns || p.patSkip&(1<<i) != 0 {
			continue
		}
		t0 := time.Now()
		e.cfg.Patterns[i].extract(text, p)
		d := time.Since(t0)
		p.patTime[i] += d
		p.patLines[i]++
		if d > e.lineBudget || p.patLines[i] >= patternMeanAfter && p.patTime[i]/time.Duration(p.patLines[i]) > e.meanBudget {
			p.patSkip |= 1 << i
			pt := &e.cfg.Patterns[i]
			p.notices = append(p.notices, fmt.Sprintf("pattern.%s is too slow (%s on one line, %s a line on average): skipped from then on",
				pt.Name, d.Round(time.Microsecond), (p.patTime[i]/time.Duration(p.patLines[i])).Round(time.Microsecond)))
		}
	}
}

// mayHoldNumber reports whether s has a digit or an n (of nan, inf, infinity): a line
// without either holds no value, and the scan of its words is skipped (prose, banners,
// tracebacks). A header of columns has neither, and is still read (see table).
func mayHoldNumber(s string) bool {
	for i := 0; i < len(s); i++ {
		if class[s[i]]&cNumberHint != 0 {
			return true
		}
	}
	return false
}

// Classes of bytes, in one table: the scan asks for each byte of a line.
const (
	cDigit      = 1 << iota // 0-9
	cLetter                 // a-z A-Z
	cNameStart              // a letter or _
	cNameChar               // a letter, a digit or _ . / - @
	cNameTrail              // . / -: not the last byte of a name
	cValueLead              // " ' space = : (: after a name, may lead to its value
	cNumberHint             // 0-9 n N: a number (nan, inf) may be read where one is
)

var class = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case '0' <= c && c <= '9':
			t[c] = cDigit | cNameChar | cNumberHint
		case c == 'n', c == 'N':
			t[c] = cLetter | cNameStart | cNameChar | cNumberHint
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
			t[c] = cLetter | cNameStart | cNameChar
		case c == '_':
			t[c] = cNameStart | cNameChar
		case c == '.', c == '/', c == '-':
			t[c] = cNameChar | cNameTrail
		case c == '@': // timm's Acc@1
			t[c] = cNameChar
		case c == '"', c == '\'', c == ' ', c == '=', c == ':', c == '(':
			t[c] = cValueLead
		}
	}
	return t
}()

func isDigit(c byte) bool    { return class[c]&cDigit != 0 }
func isLetter(c byte) bool   { return class[c]&cLetter != 0 }
func isNameChar(c byte) bool { return class[c]&cNameChar != 0 }

// span is a word of a line.
type span struct{ start, end int }

// lineState is what the scan of one line knows as it goes.
type lineState struct {
	// words are the words of the current field before the word being read, when
	// single spaces separate them (`lm loss`, `Test set`): the words of a name, or a
	// qualifier.
	words  [maxNameWords]span
	nwords int
	// ctx is the line's context (val, test, eval; train is none), from a qualifier
	// that names no value of its own.
	ctx string
	// pairs counts the name-value pairs; spacedOnly is whether only spaces separated
	// every name from its value; counter and bracketStep are a counter before the
	// values (`[ 1, 2000]`, `[ 50/1251]`).
	pairs       int
	spacedOnly  bool
	counter     bool
	bracketStep int64
	// spacedKnown is whether the line's one spaced pair names a known metric;
	// spacedStep whether it is the step, a count then a comma or colon (Caffe's
	// `Iteration 500, Testing net (#0)`): the line names its step, whatever prose follows.
	spacedKnown, spacedStep bool
	// bracketTotal is the total of bracketStep (`[ 50/1251]`: 1251); epoch the epoch the
	// line names (`epoch 3`, timm's `Train: 3`, mmengine's `[3]` before the step's
	// bracket), -1 when none; single a bracket of one number (`[3]`), where it ends.
	bracketTotal int64
	// leadCount is whether bracketStep is a count that begins the line (no bracket).
	leadCount bool
	epoch     int64
	single    int64
	singleEnd int
	// epochValEnd is where the epoch's value ended (0: none); inEpoch whether the
	// single bracket follows it: the step within the epoch.
	epochValEnd int
	inEpoch     bool
	// epochEnd is where the word epoch ended when no value followed it (`Epoch [1/5]`,
	// `Epoch: [1]`): the bracket after it is the epoch's, -1 when none.
	epochEnd int
	// stepTotal is the total written after a step's value (`iter: 10/1833`), or 0.
	stepTotal int64
	// lastRest is the name of the line's last value that had a qualifier of its own
	// (litgpt's `loss train: 9.1, val: 9.3`: val's value is val/loss), or nil.
	lastRest []byte
	// lead is the line's first word when it is a metric's and the line ends with a
	// percentage (`Accuracy of the network on the 10000 test images: 54 %`), else "".
	lead string
	// unctx are the values of the line without a qualifier of their own: they take
	// ctx, even when it is named after them, as a context names the whole line.
	unctx  [MaxValuesPerLine]uint8
	nunctx int
	// section is the context a part of the line names in brackets before its values
	// (ESPnet's `[train] loss=... [valid] loss=...`): "" none yet, "train" or a context.
	// The values after it are in it, and the line's context does not reach them.
	section string
	// group is the name before the bracket of values the scan is in (icefall's
	// `tot_loss[loss=1.58, ...]`), until groupEnd (the closing bracket; 0: none):
	// its values are group/NAME, unless the group is named as its first value
	// (`loss[loss=1.13, simple_loss=0.97]`: the batch's own losses), groupOwn.
	group            string
	groupEnd, groupN int
	groupOwn         bool
	// from is where the pairs begin: after a group the line names first (leadGroup).
	from int
	// tag is the word in brackets before the line's counter in brackets (bracketTag).
	tag string
	// countStep is the count between a name and its value (counterThenValue), -1 none:
	// the line's step when it names none.
	countStep int64
	// lead1 is the count a line of spaced pairs begins with (leadCounter), -1 none.
	lead1 int64
}

// bracketTag reads a lowercase word in brackets at s[i] right before a counter in
// brackets (InsightFace's `[lfw][2000]`, `[cfp_fp][2000]`: the verification set the
// values are of). It returns where the word's bracket ends, or i.
func bracketTag(s string, i int) int {
	j := i + 1
	if j >= len(s) || s[j] < 'a' || s[j] > 'z' {
		return i
	}
	for j < len(s) && j-i <= 24 && (s[j] >= 'a' && s[j] <= 'z' || isDigit(s[j]) || s[j] == '_') {
		j++
	}
	if j-i < 3 || j+2 >= len(s) || s[j] != ']' || s[j+1] != '[' || !isDigit(s[j+2]) {
		return i
	}
	return j + 1
}

// groupWords are the parts of a model or a task a line's values may be of, a number
// naming which: a counter that begins a line (epoch, episode, round) is no group.
var groupWords = map[string]bool{
	"region": true, "layer": true, "head": true, "block": true, "stage": true, "level": true,
	"scale": true, "output": true, "task": true, "expert": true, "module": true, "tower": true,
}

// leadGroup reads a group that begins the line, a capitalized word and a number before
// the named values of the line (Darknet's `Region 82 Avg IOU: 0.215312, Class: ...`): it
// returns the group's name (region_82) and where it ends, or "" when the line begins
// otherwise.
func (e *Extractor) leadGroup(s string, p *Parsed) (string, int) {
	if len(s) < 8 || s[0] < 'A' || s[0] > 'Z' {
		return "", 0
	}
	i := 1
	for i < len(s) && s[i] >= 'a' && s[i] <= 'z' && i < 16 {
		i++
	}
	if i < 3 || i+2 >= len(s) || s[i] != ' ' || !isDigit(s[i+1]) {
		return "", 0
	}
	j := i + 1
	for j < len(s) && isDigit(s[j]) && j-i < 6 {
		j++
	}
	if j+1 >= len(s) || s[j] != ' ' || !isLetter(s[j+1]) {
		return "", 0
	}
	// The values after it are named with colons, no later than the second word.
	c := strings.IndexByte(s[j:min(len(s), j+24)], ':')
	if c < 0 || strings.Count(s[j+1:j+c], " ") > 1 {
		return "", 0
	}
	var b [MaxNameLen]byte
	g, _ := appendLower(b[:0], s[:i])
	if !groupWords[string(g)] {
		return "", 0 // `Epoch 3 loss: 2.1`, `Episode 12 reward: 3.5`: a counter, no group
	}
	g = append(append(g, '_'), s[i+1:j]...)
	return p.intern(g), j
}

// scan reads the pairs of s into p.
func (e *Extractor) scan(s string, p *Parsed) {
	st := lineState{spacedOnly: true, countStep: -1, lead1: -1, bracketStep: -1, epoch: -1, single: -1, singleEnd: -1, epochEnd: -1}
	if n, ok := torchtuneStep(s); ok {
		p.Step, p.HasStep = n, true
	}
	st.lead = leadMetric(s)
	group, from := e.leadGroup(s, p)
	st.from = from
	e.pairs(s, p, &st)
	if group == "" && st.tag != "" {
		group = st.tag
	}
	if group != "" {
		// Darknet's `Region 82 Avg IOU: 0.21, Class: 0.49, ...`: the values of layer
		// 82, apart from layer 94's.
		for k := range p.Samples {
			p.Samples[k].Name = p.prefixed(group, p.Samples[k].Name)
		}
	}
	if p.group != "" && p.group != "train" && len(p.Samples) > 0 && strings.HasPrefix(s, "|   ") {
		for k := range p.Samples {
			p.Samples[k].Name = p.prefixed(p.group, p.Samples[k].Name)
		}
	}
	// Prose has numbers after words too ("will create 8 worker processes"): a line
	// whose only pair is `name value`, with no = or :, is not taken unless the name is
	// a metric's (`val loss 5.32`).
	if st.pairs == 1 && st.spacedOnly && !st.spacedKnown {
		p.Samples = p.Samples[:0]
		p.HasStep = st.spacedStep && p.HasStep
		if st.bracketStep >= 0 && !st.leadCount && st.epoch >= 0 && st.bracketTotal < maxEpochCount {
			// DLRM's `Testing at - 2048/4096 of epoch 0,`: the step within the epoch, and
			// the context of the indented lines under it.
			p.Step, p.HasStep, p.Epoch, p.EpochSteps = st.bracketStep, true, st.epoch, st.bracketTotal
			p.ctx = st.ctx
			p.CtxHead, p.CtxOfIndented = st.ctx != "", st.ctx != ""
			return
		}
		if st.epoch >= 0 {
			p.Epoch, p.EpochOnly = st.epoch, true // Keras' `Epoch 1/2`: the epoch of the lines under it
		}
		return
	}
	p.ctx = st.ctx
	p.Summary = st.ctx == "" && len(p.Samples) > 0 && isSummary(s)
	p.averaged = p.Summary && strings.HasPrefix(strings.TrimLeft(s, " "), "Averaged ")
	if st.ctx != "" {
		// A context named after values (`loss 2.1 (valid)`) still names them.
		for _, k := range st.unctx[:st.nunctx] {
			if int(k) < len(p.Samples) {
				p.Samples[k].Name = p.prefixed(st.ctx, p.Samples[k].Name)
			}
		}
	}
	if p.Bar >= 0 {
		p.barEpoch = st.epoch
	}
	st.step(s, p)
}

// step gives p the step the line names, from what the scan of its pairs found.
func (st *lineState) step(s string, p *Parsed) {
	if p.HasStep && st.stepTotal > 0 && st.epoch >= 0 && p.EpochSteps == 0 {
		p.Epoch, p.EpochSteps = st.epoch, st.stepTotal
	} else if p.HasStep && p.Step >= 0 && st.epoch >= 0 && p.Epoch < 0 && p.EpochSteps == 0 && st.bracketStep < 0 && p.ctx == "" {
		// RetinaNet's `Epoch: 1 | Iteration: 0 | ...`: a step within the epoch whose
		// total the line does not print; the Store learns it from the restarts.
		p.Epoch, p.epochOpen = st.epoch, true
	}
	st.countedStep(p)
	if !p.HasStep {
		switch {
		case st.bracketStep >= 0 && (!st.leadCount || len(p.Samples) > 0):
			// A count that begins the line is the step of the values after it (an
			// evaluation's `1/12...` alone is a counter of its own).
			p.Step, p.HasStep = st.bracketStep, true
			// A step counted within an epoch (`Train: 1 [ 100/1251]`): the Store
			// counts it over epochs, so that the x of a series never goes back.
			if st.bracketTotal > 0 && st.bracketTotal < maxEpochCount && st.epoch < maxEpochCount && !st.leadCount {
				p.Epoch, p.EpochSteps = st.epoch, st.bracketTotal
			}
		case st.inEpoch && len(p.Samples) > 0:
			p.Step, p.HasStep, p.Epoch = st.single, true, st.epoch
		case st.counter && len(p.Samples) > 0:
			p.Step, p.HasStep = NoStep, true
			if st.single >= 0 && st.epoch < 0 {
				p.Counter, p.HasCounter = st.single, true
			}
		case st.epoch >= 0:
			// The line names an epoch and no finer counter: the epoch is its step, or
			// it sums the epoch up (the Store says which).
			p.Epoch, p.EpochOnly = st.epoch, true
		}
	}
	p.markHead(s)
}

// countedStep gives p the step of a count before a value (countBefore), or the
// counter a line of spaced pairs begins with (leadCounter), when it names no step.
func (st *lineState) countedStep(p *Parsed) {
	switch {
	case p.HasStep || len(p.Samples) == 0:
	case st.countStep >= 0:
		p.Step, p.HasStep = st.countStep, true
	case st.lead1 >= 0:
		p.Step, p.HasStep = NoStep, true
		p.Counter, p.HasCounter = st.lead1, true
	}
}

// markHead marks a line with no value as the head of the lines under it: of a record
// at its step (Header), or of a context (CtxHead).
func (p *Parsed) markHead(s string) {
	colon := len(p.Samples) == 0 && endsWithColon(s)
	p.Header = p.HasStep && p.Step >= 0 && len(p.Samples) == 0 && (colon || p.group != "")
	p.CtxHead = (colon || len(p.Samples) == 0) && !p.HasStep && p.ctx != ""
	p.CtxOfIndented = p.CtxHead && !colon
}

// barPosition reads a progress bar's position at s[i:j] and the slash at s[j]: `20/200
// [00:01<00:09` (tqdm: its total may be ?) or `200/200 0:00:10` (rich), a count, a
// total and the elapsed time after them. It returns the count, the total (-1 for ?)
// and where the total ends.
func barPosition(s string, i, j int) (n, total int64, end int, ok bool) {
	if j-i > 15 {
		return 0, 0, 0, false
	}
	k := j + 1
	for k < len(s) && isDigit(s[k]) && k-j < 16 {
		k++
	}
	total = -1
	switch {
	case k > j+1:
		t, ok := atoi(s[j+1 : k])
		if !ok {
			return 0, 0, 0, false
		}
		total = t
	case k < len(s) && s[k] == '?':
		k++
	default:
		return 0, 0, 0, false
	}
	m := k
	if m+1 >= len(s) || s[m] != ' ' {
		return 0, 0, 0, false
	}
	m++
	if strings.HasPrefix(s[m:], "━") || strings.HasPrefix(s[m:], "[=") || strings.HasPrefix(s[m:], "[.") {
		// Keras' bar: `938/1875 ━━━━━━━━━━`, `10/60 [====>.....]`
	} else if !barTime(s, m) || s[m] != '[' && !strings.Contains(s[:i], "━") {
		return 0, 0, 0, false // rich's time follows its bar: `11/20 10:00:10` is a date
	}
	c, ok := atoi(s[i:j])
	if !ok {
		return 0, 0, 0, false
	}
	return c, total, k, true
}

// barTime reports whether a bar's elapsed time starts at s[m]: tqdm's `[00:01<`, rich's
// `0:00:10`.
func barTime(s string, m int) bool {
	if s[m] == '[' {
		m++
	}
	d := m
	for m < len(s) && isDigit(s[m]) && m-d < 4 {
		m++
	}
	return m > d && m < len(s) && s[m] == ':'
}

// hasMeasure reports whether samples hold a value that is not a bar's rate (it/s): a
// bar that draws only its rate (a validation pass's) has no step of its own.
func hasMeasure(samples []Sample) bool {
	for _, smp := range samples {
		if n := smp.Name; !strings.HasSuffix(n, "/s") && n != "s/it" {
			return true
		}
	}
	return false
}

// fraction reads a count of a total with no name, at s[i:j] and the slash at s[j]: a
// bar's position, a count of batches, a pair of rates. It returns where the scan goes
// on, and false when it is none of them.
func (st *lineState) fraction(s string, p *Parsed, i, j int) (int, bool) {
	if n, total, k, ok := barPosition(s, i, j); ok {
		p.Bar, p.BarTotal = n, total
		return k, true
	}
	if n, total, k, ok := countOf(s, i, j); ok && st.bracketStep < 0 && len(p.Samples) == 0 {
		st.bracketStep, st.bracketTotal = n, total // `| 200/ 2983 batches |`
		return k, true
	}
	if k, ok := rateOfTotal(s, j); ok {
		return k, true // OpenNMT's `28141/28877 tok/s`: the rate is the second's
	}
	if n, total, k, ok := leadCount(s, i, j); ok && st.bracketStep < 0 && len(p.Samples) == 0 {
		// A count of a total that begins the line (char-rnn's `1000/21150 (epoch
		// 2.364), train_loss = ...`) or that is of an epoch (DLRM's `Testing at -
		// 2048/4096 of epoch 0,`): the step, within the epoch when one is named.
		st.bracketStep, st.bracketTotal, st.leadCount = n, total, !strings.HasPrefix(s[k:], " of epoch")
		return k, true
	}
	return 0, false
}

// leadCount reads a count of a total at s[i:j], the slash at s[j], that begins the
// line (only spaces before it) or is followed by ` of epoch`: `1000/21150 (epoch`,
// `2048/4096 of epoch 0`. It returns the count, the total and where the total ends.
func leadCount(s string, i, j int) (n, total int64, end int, ok bool) {
	k := j + 1
	for k < len(s) && isDigit(s[k]) && k-j <= 16 {
		k++
	}
	if k == j+1 || k < len(s) && (isNameChar(s[k]) || s[k] == '/' || s[k] == '.') {
		return 0, 0, 0, false
	}
	// A count that begins the line is followed by a comma, colon or parenthesis (not
	// a date's `11/20 10:00:10`, Keras' `1875/1875 - 4s`, a table's `1/100      3.21G`).
	lead := strings.TrimLeft(s[:i], " \t") == "" && k < len(s) && (s[k] == ',' || s[k] == ':' || strings.HasPrefix(s[k:], " ("))
	if !lead && !strings.HasPrefix(s[k:], " of epoch") {
		return 0, 0, 0, false
	}
	c, err1 := strconv.ParseInt(s[i:j], 10, 64)
	t, err2 := strconv.ParseInt(s[j+1:k], 10, 64)
	if err1 != nil || err2 != nil || t <= 0 || c > t {
		return 0, 0, 0, false
	}
	return c, t, k, true
}

// countOf reads a count of steps in an epoch at s[i:j], the slash at s[j]: `200/ 2983
// batches` (pytorch/examples' word_language_model). It returns the count, the total
// and where the word ends.
func countOf(s string, i, j int) (n, total int64, end int, ok bool) {
	k := j + 1
	for k < len(s) && s[k] == ' ' && k-j < 8 {
		k++
	}
	d := k
	for k < len(s) && isDigit(s[k]) && k-d < 16 {
		k++
	}
	if k == d || k+1 >= len(s) || s[k] != ' ' {
		return 0, 0, 0, false
	}
	w := k + 1
	e := w
	for e < len(s) && isLetter(s[e]) && e-w < 12 {
		e++
	}
	switch strings.ToLower(s[w:e]) {
	case "batches", "steps", "iters", "iterations", "updates":
	default:
		return 0, 0, 0, false
	}
	c, err1 := strconv.ParseInt(s[i:j], 10, 64)
	t, err2 := strconv.ParseInt(s[d:k], 10, 64)
	if err1 != nil || err2 != nil || t <= 0 || t >= maxEpochCount {
		return 0, 0, 0, false
	}
	return c, t, e, true
}

// rateOfTotal reports whether a number follows the slash at s[j] and a rate follows it
// (`28141/28877 tok/s`): the scan goes on at that number, read as the rate.
func rateOfTotal(s string, j int) (int, bool) {
	k := j + 1
	for k < len(s) && isDigit(s[k]) {
		k++
	}
	if k == j+1 {
		return 0, false
	}
	if r, _ := rateAfter(s, k); r == "" {
		return 0, false
	}
	return j + 1, true
}

// notTraining is notTraining(s) asked once per line: its drawings share their
// description.
func (p *Parsed) notTraining(s string) bool {
	if p.notTrain == 0 {
		p.notTrain = 1
		if notTraining(s) {
			p.notTrain = 2
		}
	}
	return p.notTrain == 2
}

// notTraining reports whether a bar's line says it is not training: Lightning's
// `Sanity Checking`, a prediction, a download or a dataset's map (a rate of bytes or of
// examples, a file's name).
func notTraining(s string) bool {
	for _, w := range [...]string{"Sanity", "sanity", "Predict", "predict", "Download", "B/s", "examples/s",
		".json", ".bin", ".safetensors", ".model", ".txt", "Map", "Loading", "shards", "Generating"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// tableGroup reads the lines of a table of key | value that are no rows: a group's
// (`| rollout/   |     |`: the rows under it are rollout/NAME) and its rule of dashes,
// which ends the table. It reports whether s was one.
func (p *Parsed) tableGroup(s string) bool {
	if s[0] == '-' {
		if strings.Trim(s, "- ") == "" && len(s) >= 8 {
			p.group = ""
		}
		return false
	}
	t := strings.TrimSpace(s[1:])
	name, rest, ok := strings.Cut(t, " ")
	if !ok || len(name) < 2 || name[len(name)-1] != '/' || strings.Trim(rest, " |") != "" || len(name) > 32 {
		return false
	}
	var b [32]byte
	lw, _ := appendLower(b[:0], name[:len(name)-1])
	p.group = p.intern(lw)
	return true
}

// isSummary reports whether a line is marked as a summary: ` * ` before its values, as
// pytorch/examples' ProgressMeter.display_summary prints them, or `Averaged` (DETR's,
// DINO's and MAE's `Averaged stats:` after an epoch's lines and an evaluation's).
func isSummary(s string) bool {
	s = strings.TrimLeft(s, " ")
	return len(s) >= 2 && s[0] == '*' && s[1] == ' ' || strings.HasPrefix(s, "Averaged ")
}

// inContext names the values of p (which named no context) as the line would if it
// named ctx: ctx/NAME, dropped when that is no metric's name.
func (e *Extractor) inContext(p *Parsed, ctx string) {
	out := p.Samples[:0]
	for _, smp := range p.Samples {
		var b [MaxNameLen + 16]byte
		key := append(append(append(b[:0], ctx...), '/'), smp.Name...)
		if len(key) > MaxNameLen {
			continue
		}
		if name, ok := e.nameOf(p, key, e.words.lookup(key, headOf(key))); ok {
			smp.Name = name
			out = append(out, smp)
		}
	}
	p.Samples = out
	p.ctx = ctx
}

// prefixed returns ctx/name, interned.
func (p *Parsed) prefixed(ctx, name string) string {
	var b [MaxNameLen + 16]byte
	k := append(append(append(b[:0], ctx...), '/'), name...)
	if len(k) > MaxNameLen {
		return name
	}
	return p.intern(k)
}

// pairs takes the name-value pairs of s into p. It runs for every byte of most lines:
// what it does for each word and number is here, and in functions the compiler
// inlines; a rate and a bracket, rarer, are functions of their own.
func (e *Extractor) pairs(s string, p *Parsed, st *lineState) {
	for i := st.from; i < len(s); {
		c := s[i]
		switch cl := class[c]; {
		case cl&cNameStart != 0:
			j := wordEnd(s, i+1)
			if k := afterCallRepr(s, p, j); k > j {
				st.endField(s)
				i = k
				continue
			}
			wend := j
			for wend > i+1 && class[s[wend-1]]&cNameTrail != 0 {
				wend--
			}
			// valueAfter and unitThenValue read nothing unless one of these bytes
			// follows the name: most words are passed over here.
			if wend < len(s) && class[s[wend]]&cValueLead != 0 && !wordAfter(s, wend) {
				var v value
				if k, ok := nameValue(s, wend, wend == j, &v); ok {
					i = e.pair(s, p, st, span{i, k}, &v)
					if len(p.Samples) >= MaxValuesPerLine {
						return
					}
					continue
				}
			}
			if wend+2 < len(s) && s[wend] == '.' && s[wend+1] == ' ' && wend-i <= maxAbbrev && wend == j-1 && startsNumber(s, wend+2) && fieldStart(s, i) {
				// An abbreviation that begins a field (Marian's `Up. 500 : ... : L.r.
				// 3.75e-05`): the name is its letters, the value after the space.
				var v value
				if valueAfter(s, wend+1, &v) {
					i = e.pair(s, p, st, span{i, wend + 1}, &v)
					if len(p.Samples) >= MaxValuesPerLine {
						return
					}
					continue
				}
			}
			st.fieldWord(s, span{i, wend}, j)
			i = j
		case cl&cDigit != 0 || c == '.' && i+1 < len(s) && isDigit(s[i+1]):
			if k := digitName(s, i); k > i {
				// Darknet's `.5R: 0.090909`, `.75R: 0.0`: a name that begins with its number.
				var v value
				if valueAfter(s, k, &v) {
					i = e.pair(s, p, st, span{i, k}, &v)
					if len(p.Samples) >= MaxValuesPerLine {
						return
					}
					continue
				}
			}
			var full bool
			if i, full = e.number(s, p, st, i); full {
				return
			}
		case c == '[':
			st.endField(s)
			i = st.bracket(s, p, i)
		default:
			if !st.joinsWords(s, i) {
				st.endField(s)
			}
			i++
		}
	}
	st.endField(s)
}

// afterCallRepr returns where the repr of a call that opens at s[j], after the line's
// values, ends (d2l's `1811.2 examples/sec on [device(type='cuda', index=0), ...]`: the
// arguments of an object's repr are no values of the line), or j.
func afterCallRepr(s string, p *Parsed, j int) int {
	if len(p.Samples) == 0 || j >= len(s) || s[j] != '(' {
		return j
	}
	return callReprEnd(s, j)
}

// callReprEnd returns where the repr of a call whose arguments are named (`device(type=
// 'cuda', index=0)`) that opens at s[j] ends, or j.
func callReprEnd(s string, j int) int {
	k := j + 1
	for k < len(s) && isNameChar(s[k]) && k-j < 32 {
		k++
	}
	if k == j+1 || k >= len(s) || s[k] != '=' {
		return j
	}
	if c := strings.IndexByte(s[k:min(len(s), k+256)], ')'); c > 0 {
		return k + c + 1
	}
	return j
}

// digitName returns where a name that begins with a number at s[i] ends (`.5R:`, a
// point's digits then letters, written at a field's start before a colon), or i.
func digitName(s string, i int) int {
	if s[i] != '.' || !fieldStart(s, i) && (i < 2 || s[i-1] != ' ' || s[i-2] != ',') {
		return i
	}
	j := i + 1
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	k := j
	for k < len(s) && isLetter(s[k]) {
		k++
	}
	if k == j || k+1 >= len(s) || s[k] != ':' || s[k+1] != ' ' {
		return i
	}
	return k
}

// fieldWord takes a word of the field, w, whose bytes end at j (w.end < j: a name's
// trailing bytes): the next word may make a name with it, unless it is a value itself
// (`dtype=bfloat16 lr=...`).
func (st *lineState) fieldWord(s string, w span, j int) {
	if w.end == j && joinsNext(s, w.start, j) {
		if st.nwords == maxNameWords {
			st.closeWords(s, st.words[:1])
			copy(st.words[:], st.words[1:])
			st.nwords--
		}
		st.words[st.nwords] = w
		st.nwords++
		return
	}
	st.endField(s)
	st.closeWords(s, []span{w})
	if w.end-w.start == 5 && foldEqual(s[w.start:w.end], "epoch") {
		st.epochEnd = w.end
	}
}

// number passes over a number with no name at s[i]: all of it (so the e of 1e-4 is
// not a name), taking a rate `20.00it/s` or `48213 tok/s` on the way. It returns where
// the line goes on, and whether p has its most values (MaxValuesPerLine).
func (e *Extractor) number(s string, p *Parsed, st *lineState, i int) (int, bool) {
	st.endField(s)
	j, _ := digitsEnd(s, i) // most such numbers are no rate: only their end
	if j < len(s) && s[j]|0x20 == 'e' {
		j = readNumber(s, i).end // and its exponent's
	}
	if j < len(s) && s[j] == '/' && p.Bar < 0 {
		if k, ok := st.fraction(s, p, i, j); ok {
			return k, false
		}
	}
	st.countedNumber(s, p, i, j) // ESPnet's `1epoch:train:1-100batch:`
	if rate, k := rateAfter(s, j); rate != "" && j-i <= maxNumberLen {
		e.rate(s, p, st, i, j, rate)
		if len(p.Samples) >= MaxValuesPerLine {
			return j, true
		}
		j = k
	} else if k, ok := e.valueThenName(s, p, st, i, j); ok {
		return k, len(p.Samples) >= MaxValuesPerLine
	} else {
		st.leadNumber(s, p, i, j)
	}
	return nameEnd(s, j), false
}

// leadNumber reads a count at s[i:j] that leads a record's values: Darknet's `1:
// 746.53, 746.53 avg, ...`, a count that begins the line before its values, is their
// step; DLLogger's `DLL 2026-12-06 10:12:01.123456 - 5 Dice : 61.52  Val Loss : 0.48`,
// a count after the logging prefix's dash before the values, counts the records: the
// step while it rises line after line (Parsed.Counter).
func (st *lineState) leadNumber(s string, p *Parsed, i, j int) {
	switch {
	case j+2 < len(s) && s[j] == ':' && s[j+1] == ' ' && startsNumber(s, j+2) && st.bracketStep < 0 && strings.TrimLeft(s[:i], " ") == "":
		if n, err := strconv.ParseInt(s[i:j], 10, 64); err == nil {
			st.bracketStep, st.leadCount = n, true
		}
	case st.pairs == 0 && len(p.Samples) == 0 && st.lead1 < 0 && i >= 3 && s[i-1] == ' ' && s[i-2] == '-' && s[i-3] == ' ' &&
		j+1 < len(s) && s[j] == ' ' && isLetter(s[j+1]) && strings.IndexByte(s[j:], ':') > 0:
		if n, err := strconv.ParseInt(s[i:j], 10, 64); err == nil && j-i <= 12 {
			st.lead1 = n
		}
	}
}

// valueThenName reads a measure written before its name, the name then a comma
// (Darknet's `746.532776 avg, 0.000000 rate, 5.81 seconds`): the name's
// value, unless the word is a unit or names no metric. It reports whether it took one,
// and where the name ends.
func (e *Extractor) valueThenName(s string, p *Parsed, st *lineState, i, j int) (int, bool) {
	if j+2 >= len(s) || s[j] != ' ' || !isLetter(s[j+1]) || j-i > maxNumberLen {
		return 0, false
	}
	k := j + 1
	for k < len(s) && isLetter(s[k]) && k-j <= 16 {
		k++
	}
	if k >= len(s) || s[k] != ',' || isUnit(s[j+1:k]) {
		return 0, false
	}
	n := readNumber(s, i)
	if !n.point {
		return 0, false // a count (`64 images`) or prose (`create 8 workers,`)
	}
	f, ok := parseNumber(s[i:j], n, false)
	if !ok {
		return 0, false
	}
	r := p.pairOf(e, s[j+1:k])
	if !r.ok || r.stop {
		return 0, false
	}
	v := value{v: f, end: k, sep: ' '}
	st.pairs++
	st.spacedKnown = true
	e.metric(s, p, st, r, &v)
	return k, true
}

// wordAfter reports whether one space and a word that is not nan or inf follow a name
// ending at i: no value does (most words of prose), valueAfter need not look.
func wordAfter(s string, i int) bool {
	if s[i] != ' ' || i+1 >= len(s) {
		return false
	}
	c := s[i+1]
	return class[c]&cLetter != 0 && c|0x20 != 'n' && c|0x20 != 'i'
}

// wordEnd returns where the word whose bytes go on at s[i] ends: its name's bytes, and
// a possessive's 's, which joins the word to the next (`valid_0's auc`).
func wordEnd(s string, i int) int {
	j := nameEnd(s, i)
	if j+2 < len(s) && s[j] == '\'' && s[j+1] == 's' && s[j+2] == ' ' {
		return j + 2
	}
	return j
}

// nameEnd returns where the bytes of a name from s[i] on end.
func nameEnd(s string, i int) int {
	for i < len(s) && class[s[i]]&cNameChar != 0 {
		i++
	}
	return i
}

// joinsNext reports whether the word s[i:j], not a value itself (after = or :), may
// make a name with the next word, one space after it.
func joinsNext(s string, i, j int) bool {
	isValue := i > 0 && (s[i-1] == '=' || s[i-1] == ':')
	return !isValue && j+1 < len(s) && s[j] == ' ' && class[s[j+1]]&cNameStart != 0
}

// rate takes the rate after the number s[i:j] (`20.00it/s`, `48213 tok/s`) as a value
// of its own, in the line's context.
func (e *Extractor) rate(s string, p *Parsed, st *lineState, i, j int, rate string) {
	v, ok := parseNumber(s[i:j], readNumber(s, i), false)
	if !ok {
		return
	}
	e.rateValue(p, st, v, rate)
}

// rateValue takes v, a rate whose unit is rate, as a value of its own, in the line's
// context.
func (e *Extractor) rateValue(p *Parsed, st *lineState, v float64, rate string) {
	st.pairs++
	st.spacedOnly = false
	if before := len(p.Samples); st.nunctx < len(st.unctx) {
		st.unctx[st.nunctx] = uint8(before) // a rate takes the line's context
		st.nunctx++
	}
	e.add(p, rateTabs().names[rate], v, "")
}

// bracket reads the bracket at s[i] before any value of the line: a counter
// (`[ 50/1251]`, the line's step unless it names one; `[3]`, a count of its own) is
// taken and skipped. It returns where the scan goes on.
func (st *lineState) bracket(s string, p *Parsed, i int) int {
	if i > 0 && isNameChar(s[i-1]) && st.openGroup(s, i) {
		return i + 1
	}
	if q, end := sectionOf(s, i); q != "" {
		st.section = q
		return end
	}
	if len(p.Samples) > 0 {
		return st.endCounter(s, p, i)
	}
	if end := logPrefixEnd(s, i); end > i {
		return end // `[INFO|DP=0|PP=0|TP=0|host]`: the logging prefix's fields are no values
	}
	if end := bracketTag(s, i); end > i {
		st.tag = s[i+1 : end-1] // InsightFace's `[lfw][2000]XNorm: 21.5`: lfw's values
		return end
	}
	b := bracketCounter(s, i)
	if b.end <= i {
		return i + 1
	}
	if st.epochCounter(b) {
		return b.end
	}
	afterEpoch := st.afterEpochWord(s, i)
	switch {
	case b.step >= 0 && afterEpoch:
		st.epoch = b.step // `Epoch [1/5], Step [100/600]`
	case b.step >= 0 && st.bracketStep >= 0 && st.bracketTotal > 0 && st.epoch < 0:
		// Two counters of a total (`[0/25][0/1583]`, `Epoch [1/4] [20/100]`): the
		// first counts the epochs, the second the steps within one.
		st.epoch = st.bracketStep
		st.bracketStep, st.bracketTotal = b.step, b.total
	case b.step >= 0 && st.bracketStep < 0:
		st.bracketStep, st.bracketTotal = b.step, b.total
		if st.singleEnd >= 0 && st.singleEnd <= i && strings.TrimLeft(s[st.singleEnd:i], " ") == "" {
			st.epoch = st.single // mmengine's `[1][ 50/500]`, torchvision's `[1]  [ 0/5005]`
		}
	case b.step < 0 && afterEpoch && b.single >= 0:
		st.epoch = b.single // torchvision's `Epoch: [1]`, mmcv's `Epoch(val) [1]`
		st.single, st.singleEnd, st.epochValEnd = b.single, b.end, b.end
	case b.step < 0:
		st.counter = true
		st.single, st.singleEnd = b.single, b.end
		// A lone [N] right after the epoch's value counts within the epoch (MLX's
		// `Epoch 00 [010] | Train loss`), as batch N after it does.
		st.inEpoch = b.single >= 0 && st.epoch >= 0 && st.epochValEnd > 0 && st.epochValEnd <= i &&
			strings.Trim(s[st.epochValEnd:i], " ") == ""
	}
	return b.end
}

// endCounter reads a bracket at s[i] after the line's values: PyTorch's quickstart
// `loss: 2.303494  [   64/60000]`, a count of a total in brackets that ends the line, is
// the step of its values. It returns where the scan goes on.
func (st *lineState) endCounter(s string, p *Parsed, i int) int {
	if b := bracketCounter(s, i); b.end > i && b.step >= 0 && b.total > 0 && st.bracketStep < 0 && !p.HasStep &&
		strings.TrimRight(s[b.end:], " ") == "" {
		st.bracketStep, st.bracketTotal = b.step, b.total
		return b.end
	}
	return i + 1
}

// recordContext makes the qualifier of a record's first name, written as a word of its
// own, the line's context (PointNet's `[0: 10/379] test loss: 1.70 accuracy: 0.53`, the
// transfer learning tutorial's `val Loss: 0.2418 Acc: 0.9085`).
func (st *lineState) recordContext(p *Parsed, r *pairInfo, own bool) {
	if own && len(p.Samples) == 0 && st.ctx == "" && st.section == "" && r.q != "" && r.q != "train" {
		st.ctx = r.q
	}
}

// epochCounter takes a counter in brackets that names its epoch (PointNet's `[0:
// 10/379]`) as the line's epoch and step within it; it reports whether b is one.
func (st *lineState) epochCounter(b bracket) bool {
	if b.epoch < 0 || b.step < 0 || st.epoch >= 0 || st.bracketStep >= 0 {
		return false
	}
	st.epoch, st.bracketStep, st.bracketTotal = b.epoch, b.step, b.total
	return true
}

// afterEpochWord reports whether the bracket at s[i] comes right after the word epoch
// that no value followed (`Epoch [1/5]`, `Epoch: [1]`), or after the context that word
// names in parentheses (mmcv's `Epoch(val) [1][625]`): the bracket is the epoch's.
func (st *lineState) afterEpochWord(s string, i int) bool {
	if st.epochEnd < 0 || st.epoch >= 0 || i < st.epochEnd {
		return false
	}
	gap := s[st.epochEnd:i]
	if len(gap) > 0 && gap[0] == '(' {
		k := strings.IndexByte(gap, ')')
		if k < 0 || k > maxQualifierLen+1 {
			return false
		}
		gap = gap[k+1:]
	}
	return len(gap) <= 3 && strings.Trim(gap, " :") == ""
}

// joinsWords reports whether the byte at s[i], neither a name's nor a number's, keeps
// the field of words open: one space between two words (`lm loss`); anything else ends
// it.
func (st *lineState) joinsWords(s string, i int) bool {
	return s[i] == ' ' && st.nwords > 0 && i+1 < len(s) && class[s[i+1]]&cNameStart != 0 && class[s[i-1]]&cNameChar != 0
}

// endField closes the current field: its words named no value.
func (st *lineState) endField(s string) {
	if st.nwords == 0 {
		return // the common case, asked after most bytes that are not a name's
	}
	st.closeWords(s, st.words[:st.nwords])
	st.nwords = 0
}

// closeWords takes words that named no value: a qualifier among them names the line
// (`Test set:`, `| valid |`, `Epoch(val)`).
func (st *lineState) closeWords(s string, words []span) {
	if st.ctx != "" {
		return
	}
	for _, w := range words {
		if st.ctx == "" && mayQualify(s, w) && !missingAfter(s, w.end) {
			var b [maxQualifierLen]byte
			lw, _ := appendLower(b[:0], s[w.start:w.end])
			if q := canonQualifier(lw); q != "" && q != "train" {
				st.ctx = q
			}
		}
	}
}

// missingAfter reports whether a value written as missing follows the name ending at
// i: `val: n/a` (litgpt before its first evaluation), `None`, `-`. The name is then no
// context of the line.
func missingAfter(s string, i int) bool {
	if i >= len(s) || s[i] != ':' && s[i] != '=' {
		return false
	}
	i++
	for i < len(s) && s[i] == ' ' {
		i++
	}
	for _, m := range [...]string{"n/a", "N/A", "None", "none", "-"} {
		if strings.HasPrefix(s[i:], m) && (i+len(m) == len(s) || !isNameChar(s[i+len(m)]) || s[i+len(m)] == '-') {
			return true
		}
	}
	return false
}

// pair takes the value v of the name word w, with the words of its field before it,
// and returns where the scan goes on.
func (e *Extractor) pair(s string, p *Parsed, st *lineState, w span, v *value) int {
	first := st.nameWords(s, w, v)
	own := first < st.nwords // words of the field before the name's last
	start := w.start
	if own {
		start = st.words[first].start
	}
	// What the name's words mean is the same on every line that writes them: it is
	// worked out once (resolve) and remembered by their text.
	r := p.pairOf(e, s[start:w.end])
	v.quotedName = start > 0 && (s[start-1] == '\'' || s[start-1] == '"') // HF's `'epoch': 1.0`
	if r.ok && v.sep == ' ' && r.stop {
		if end, stopped := st.stopped(s, w, v, r, first); stopped {
			return end
		}
	}
	st.closeWords(s, st.words[:first])
	st.nwords = 0
	if !r.ok || v.spelled(s) {
		return v.end
	}
	st.countBefore(s, r, v)
	if st.leadCounter(s, start, r, own, v) {
		return v.end
	}
	st.pairs++
	if v.sep != ' ' {
		st.spacedOnly = false
	}
	hadStep := p.HasStep
	if !hadStep && leadSteps(s, start, r, v) {
		p.Step, p.HasStep = int64(v.v), true
		return v.end
	}
	if e.notMetric(p, st, r, own, v) {
		if !hadStep && p.HasStep && (countThenStop(s, v) || atStep(s, start)) {
			st.spacedStep = true // `Iteration 500, Testing net (#0)`, `Iter 100: Saved ...`
		}
		return v.end
	}
	// A metric's value, a sample named after its own qualifier, else after the line's
	// context (when that context makes it a metric).
	if v.sep == ' ' && (own || r.known || v.numpy) {
		st.spacedKnown = true
	}
	st.recordContext(p, r, own)
	e.metric(s, p, st, r, v)
	if v.altEnd > 0 && len(p.Samples) < MaxValuesPerLine {
		e.altMetric(s, p, st, v)
	}
	return v.end
}

// leadCounter takes the count a line of spaced name-value pairs begins with, under a
// name no metric, step or setting has (StyleGAN's `tick 1     kimg 4.1      time 13m
// 40s ...`): a counter of the line's records, the step while it rises line after line
// (Parsed.Counter). It reports whether v is one.
func (st *lineState) leadCounter(s string, start int, r *pairInfo, own bool, v *value) bool {
	if st.pairs > 0 || own || v.sep != ' ' || !v.integer || v.unit != "" || v.v < 0 || v.v >= 1<<53 || r.known || r.q != "" ||
		r.info.kind == kindStep || r.epoch || r.counter || st.countStep >= 0 || st.bracketStep >= 0 {
		return false
	}
	if strings.TrimLeft(s[:start], " ") != "" || v.end+2 >= len(s) || s[v.end] != ' ' || !plainWord(r.rest) || isSetting(r.rest) {
		return false
	}
	// Another name and value follow, a space apart.
	k := spacesEnd(s, v.end)
	j := nameEnd(s, k)
	if j == k || j+1 >= len(s) || s[j] != ' ' || !startsNumber(s, spacesEnd(s, j)) {
		return false
	}
	st.lead1 = int64(v.v)
	return true
}

// plainWord reports whether a name is one lowercase word of three letters or more, no
// loss and no rate's.
func plainWord(w []byte) bool {
	if len(w) < 3 || bytes.Contains(w, []byte("loss")) {
		return false
	}
	for _, c := range w {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// countBefore reads a count between the name r and its value v (counterThenValue):
// Tacotron 2's `Train loss 1000 0.612004`, `Validation loss 1000:  0.598114`: the step
// the value is at, unless the line names one.
func (st *lineState) countBefore(s string, r *pairInfo, v *value) {
	if v.sep != ' ' || !v.integer || v.unit != "" || v.ratio || r.info.kind == kindStep || r.epoch || st.countStep >= 0 {
		return
	}
	if n, ok := counterThenValue(s, v); ok {
		st.countStep = n
	}
}

// leadSteps reports whether the value v of the name r that begins the line at start is
// the line's step: `steps` written first, with a colon or =, before other values
// (HiFi-GAN's `Steps : 5, Gen Loss Total : 88.530, ...`), where elsewhere it counts
// steps (`Total optimization steps = 375`, `600 steps to run`).
func leadSteps(s string, start int, r *pairInfo, v *value) bool {
	if v.sep == ' ' || !v.integer || v.v < 0 || v.v >= 1<<53 || string(r.rest) != "steps" || r.q != "" {
		return false
	}
	for i := 0; i < start; i++ {
		if s[i] != ' ' {
			return false
		}
	}
	return v.end < len(s) && s[v.end] == ',' && strings.IndexByte(s[v.end:], ':') > 0
}

// stopped handles a stop word r, the name a space separates from its value v: alone
// in its field (not own words), the scan stops there (stopWord); after words of its
// own field and with a qualifier, when v has no unit, the pair is prose (`Training for
// 25000 kimg...`) and the scan goes on after v. It returns where the scan goes on, and
// false when the pair is read as any other.
func (st *lineState) stopped(s string, w span, v *value, r *pairInfo, first int) (int, bool) {
	if first >= st.nwords {
		return st.stopWord(s, w, v), true
	}
	if r.q != "" && v.unit == "" {
		st.closeWords(s, st.words[:first])
		st.nwords = 0
		return v.end, true
	}
	return 0, false
}

// countThenStop reports whether v, after a space, is a whole number that a comma or a
// colon ends: a count that names the line's step (Caffe's `Iteration 500, Testing net`).
// atStep reports whether the name at s[start] follows the word at: a sentence that says
// when (Tacotron 2's `Saving model and optimizer state at iteration 1000 to ...`).
func atStep(s string, start int) bool {
	return start >= 3 && s[start-1] == ' ' && s[start-3] == 'a' && s[start-2] == 't' && (start == 3 || s[start-4] == ' ')
}

func countThenStop(s string, v *value) bool {
	return v.sep == ' ' && v.integer && v.end < len(s) && (s[v.end] == ',' || s[v.end] == ':')
}

// altMetric adds the second value a value v carries (BasicSR's `time (data): 0.191
// (0.002)`: data's), named by the words in its parentheses, when they name a metric.
func (e *Extractor) altMetric(s string, p *Parsed, st *lineState, v *value) {
	if r2 := p.pairOf(e, s[v.altStart:v.altEnd]); r2.ok && !r2.stop {
		v2 := value{v: v.alt, end: v.end, sep: ':'}
		e.metric(s, p, st, r2, &v2)
	}
}

// nameWords returns the first of the field's words (st.words) that are the name of a
// value v: after a separator (`lm loss: 1.06`) every word of the field; after a space
// only the last one, and only a qualifier (`val loss 2.0`, but `final loss 0.7` is the
// loss).
func (st *lineState) nameWords(s string, w span, v *value) int {
	if v.sep != ' ' {
		return 0
	}
	first := st.nwords
	if first > 0 && spacedPair(s, st.words[first-1], w) {
		first-- // `Grad Norm 12.345678`: one name of two words
	}
	if first > 0 && isQualifier(s, st.words[first-1]) {
		first--
	}
	return first
}

// spacedPairs are the names of two words read whole after a space too (`Grad Norm
// 0.52`), where a space before a value otherwise leaves only the last word (prose).
var spacedPairs = [...][2]string{{"grad", "norm"}, {"learning", "rate"}, {"weight", "decay"}}

// spacedPair reports whether the words a and b are one of spacedPairs.
func spacedPair(s string, a, b span) bool {
	for _, sp := range spacedPairs {
		if foldEqual(s[a.start:a.end], sp[0]) && foldEqual(s[b.start:b.end], sp[1]) {
			return true
		}
	}
	return false
}

// counterThenValue reads the value after a count v that a name's space separates
// from it, when one follows, a colon and spaces or a space before it, into v: it
// returns the count.
func counterThenValue(s string, v *value) (int64, bool) {
	j := v.end
	if j < len(s) && s[j] == ':' {
		j++
	}
	if j+1 >= len(s) || s[j] != ' ' {
		return 0, false
	}
	for j < len(s) && s[j] == ' ' {
		j++
	}
	if j >= len(s) || !startsNumber(s, j) && !(s[j] == '-' && startsNumber(s, j+1)) {
		return 0, false
	}
	var w value
	w.sep = ' '
	if !readValue(s, j, &w, false) || w.integer || v.v >= 1<<53 {
		return 0, false
	}
	n := int64(v.v)
	*v = w
	return n, true
}

// perCounted reports whether a name is a time per something training counts
// (time/batch): written with a time unit, its value is a duration, no count.
func perCounted(name []byte) bool {
	k := bytes.LastIndexByte(name, '/')
	return k > 0 && string(name[:k]) == "time" && countedWords[string(name[k+1:])]
}

// hasSample reports whether p holds a value named name, in any context: a sentence's
// metric is read once (DLRM's `accuracy 77.841 %, best 77.841 %`).
func hasSample(p *Parsed, name string) bool {
	for _, x := range p.Samples {
		if n := x.Name; n == name || strings.HasSuffix(n, name) && len(n) > len(name) && n[len(n)-len(name)-1] == '/' {
			return true
		}
	}
	return false
}

// metric adds the value v of a metric, its name's words r, to p: as a sample named
// after its own qualifier, else after the line's context, else (a sentence's percent)
// after the sentence's first word; or nothing when the name is no metric's there.
func (e *Extractor) metric(s string, p *Parsed, st *lineState, r *pairInfo, v *value) {
	val := v.v
	if v.ratio && !r.counter {
		val = v.num / v.den // accuracy: 9800/10000
	}
	k := st.contextOf(r) // the series' name: its own qualifier's, else its part's, else the line's context's
	if r.verdict[k] == 0 {
		r.names[k], r.verdict[k] = e.resolve(p, r, k)
	}
	if r.verdict[k] != 1 {
		if (v.unit == "s" || v.unit == "ms") && !e.listed && perCounted(r.rest) {
			// char-rnn's `time/batch = 0.4612s`: a time per batch, where Composer's
			// `time/batch: 9` counts batches.
			var b [MaxNameLen + 16]byte
			key := b[:0]
			if r.q != "" {
				key = append(append(key, r.q...), '/')
			}
			if key = append(key, r.rest...); len(key) <= MaxNameLen && len(p.Samples) < MaxValuesPerLine {
				p.Samples = append(p.Samples, Sample{Name: p.intern(key), Value: val, Unit: v.unit})
			}
			return
		}
		if st.lead != "" && !e.listed && percentAfter(s, v) && !hasSample(p, st.lead) {
			// `Accuracy of the network on the 10000 test images: 54 %`: the sentence's
			// metric is its first word, in the context its words name.
			e.addNamed(p, r.q, []byte(st.lead), val, "%")
		}
		return
	}
	if st.groupEnd > 0 && st.inGroup(r.names[k], v.end) {
		var b [MaxNameLen]byte
		g, _ := appendLower(b[:0], st.group)
		e.addNamed(p, string(g), []byte(r.names[k]), val, v.unit)
		return
	}
	st.addMetric(p, r, k, val, v.unit)
}

// openGroup opens the group of values in brackets at s[i] written against the name
// before it (`tot_loss[loss=1.58, simple_loss=1.21]`); it reports whether there is one.
func (st *lineState) openGroup(s string, i int) bool {
	j := i
	for j > 0 && isNameChar(s[j-1]) && i-j < maxGroupName {
		j--
	}
	k := strings.IndexByte(s[i:min(len(s), i+maxGroupLen)], ']')
	if k < 2 || j == i || !isLetter(s[j]) || !isLetter(s[i+1]) || j > 0 && s[j-1] != ' ' && s[j-1] != ',' || !strings.ContainsAny(s[i:i+k], "=:") {
		return false
	}
	st.group, st.groupEnd, st.groupN, st.groupOwn = s[j:i], i+k, 0, false
	return true
}

// Bounds of a group of values in brackets: its name, and what the brackets hold.
const (
	maxGroupName = 32
	maxGroupLen  = 512
)

// inGroup reports whether the value of name ending at end is one of the open group's
// own (see lineState.group) and is named after the group; it closes the group past
// its end.
func (st *lineState) inGroup(name string, end int) bool {
	if end > st.groupEnd {
		st.groupEnd = 0
		return false
	}
	if st.groupN == 0 && strings.EqualFold(name, st.group) {
		st.groupOwn = true
	}
	st.groupN++
	return !st.groupOwn
}

// contextOf returns the index in contexts of the series of r's value: 0 when r names a
// qualifier of its own, else the context of the line's part (Parsed.section), else
// the line's.
func (st *lineState) contextOf(r *pairInfo) int {
	switch {
	case r.q != "" || r.rate:
		return 0
	case st.section != "":
		return ctxIndex(st.section)
	case st.ctx != "":
		return ctxIndex(st.ctx)
	}
	return 0
}

// addMetric adds the value of r, named in the context of index k, with its unit.
func (st *lineState) addMetric(p *Parsed, r *pairInfo, k int, val float64, unit string) {
	if r.q != "" {
		st.lastRest = r.rest
	}
	val, unit = scaled(r.names[k], val, unit)
	if unit != "" && !isTableUnit(unit) {
		unit = p.intern([]byte(unit)) // a unit in parentheses: a value must not pin its line
	}
	if r.q == "" && k == 0 && st.section == "" && !r.rate && st.nunctx < len(st.unctx) {
		st.unctx[st.nunctx] = uint8(len(p.Samples))
		st.nunctx++
	}
	p.Samples = append(p.Samples, Sample{Name: r.names[k], Value: val, Unit: unit})
}

// notMetric takes the value v of a name that is no metric's: a context (`Test: 3`), a
// step or an ignored name, a counter of a total. It reports whether it was one.
func (e *Extractor) notMetric(p *Parsed, st *lineState, r *pairInfo, own bool, v *value) bool {
	switch {
	case r.only != "" && st.lastRest != nil:
		// `loss train: 9.179, val: 9.312`: the value of the same name in that context.
		e.addNamed(p, r.only, st.lastRest, v.v, v.unit)
	case r.only != "" && len(p.Samples) > 0:
		// PyG's `Loss: 1.9463, Train: 0.2929, Val: 0.2780`: a value of a split the line
		// does not name (an accuracy), not the context of the whole line.
	case r.only != "":
		st.onlyContext(r.only, v)
	case r.stepOrIgnored():
		st.configured(p, r, own, v)
	case r.counter && v.integer && !v.ratio && st.epoch >= 0 && st.bracketStep < 0 && string(r.rest) == "batch" && v.v >= 0:
		// icefall's `Epoch 1, batch 50,`: the step within the epoch the line names.
		st.bracketStep = int64(v.v)
	case r.epoch && v.ratio && !v.quotedName:
		// Coqui's `> EPOCH: 0/1000`: the epoch, of the epochs to run; no step.
		if st.epoch < 0 && v.num >= 0 && v.num < maxEpochCount && v.num == math.Trunc(v.num) {
			st.epoch, st.epochValEnd = int64(v.num), v.end
		}
	case r.counter && v.ratio:
		// `[batch=10/100]`: a count of a total is a counter, not a value; the step within
		// the epoch when it is training's (an eval counter never is the step).
		if (r.q == "" || r.q == "train") && st.ctx == "" && st.bracketStep < 0 && v.den < maxEpochCount {
			st.bracketStep, st.bracketTotal = int64(v.num), int64(v.den)
		}
	default:
		return false
	}
	return true
}

// addNamed adds the value of the metric named rest in context q ("" or train: rest).
func (e *Extractor) addNamed(p *Parsed, q string, rest []byte, v float64, unit string) {
	var b [MaxNameLen + 16]byte
	key := b[:0]
	if q != "" {
		key = append(append(key, q...), '/')
	}
	key = append(key, rest...)
	if len(key) <= MaxNameLen {
		e.add(p, key, v, unit)
	}
}

// leadMetric returns the first word of s, lowercased, when it is an accuracy and s
// ends with a percentage: a sentence that says a metric (`Accuracy of the network on
// the 10000 test images: 54 %`).
func leadMetric(s string) string {
	t := strings.TrimRight(s, " ")
	if !strings.HasSuffix(t, "%") {
		return ""
	}
	t = strings.TrimLeft(t, " ")
	j := 0
	for j < len(t) && isLetter(t[j]) && j < 16 {
		j++
	}
	var b [16]byte
	lw, _ := appendLower(b[:0], t[:j])
	switch string(lw) {
	case "accuracy":
		return "accuracy"
	case "acc":
		return "acc"
	}
	return ""
}

// percentAfter reports whether the value v is a percentage: its unit, or a % one space
// after it.
func percentAfter(s string, v *value) bool {
	if v.unit == "%" {
		return true
	}
	i := v.end
	for i < len(s) && s[i] == ' ' && i-v.end < 2 {
		i++
	}
	return i < len(s) && s[i] == '%'
}

// onlyContext takes the value v of a name that is only a qualifier (`Train: 0`, `Test:
// 3`): a context, not a metric; timm's number after it is the epoch, when a step in
// brackets follows.
func (st *lineState) onlyContext(ctx string, v *value) {
	if ctx != "train" && st.ctx == "" {
		st.ctx = ctx
	}
	st.takeEpoch(v)
}

// stopWord passes over the value v of the stop word w, written after a space: a stop
// word is prose ("create 8 workers"), and may be a word of a longer name (`number of
// nan iterations: 1` is not of=nan). It returns where the scan goes on.
func (st *lineState) stopWord(s string, w span, v *value) int {
	if st.nwords < maxNameWords && w.end < len(s) && s[w.end] == ' ' {
		st.words[st.nwords] = w
		st.nwords++
		return w.end
	}
	st.endField(s)
	return v.end
}

// configured takes the value v of a name the configuration says is a step (the
// line's step, when it names none yet) or ignored. own is whether the name has words
// of its field before its last.
func (st *lineState) configured(p *Parsed, r *pairInfo, own bool, v *value) {
	if own && r.q != "" && r.q != "train" && st.ctx == "" {
		st.ctx = r.q // `validate step: 10` names the line
	}
	count := r.info.kind == kindStep && v.v >= 0 && v.v < 1<<53 && v.v == math.Trunc(v.v)
	switch {
	case count && v.ratio && r.q != "" && r.q != "train":
		// OLMo's `[eval_step=10/10]`: an evaluation's count of its own batches, never the
		// training step (`Validation Step 200` names the training step it is at).
	case count && !p.HasStep:
		p.Step, p.HasStep = int64(v.v), true
		if v.ratio && v.den < maxEpochCount {
			st.stepTotal = int64(v.den) // YOLOX's `iter: 10/1833`: within the epoch when one is named
		}
	case count && !v.ratio && st.stepTotal > 0 && int64(v.v) >= p.Step:
		// Coqui's `STEP: 19/406 -- GLOBAL_STEP: 425`: the run's count beside the epoch's is
		// the more specific training counter.
		p.Step, st.stepTotal = int64(v.v), 0
	}
	if r.epoch && !v.quotedName {
		st.takeEpoch(v) // `Epoch: [0][ 1/5005]`, `Train Epoch: 1 [640/60000]`
	}
}

// maxEpochCount bounds an epoch and the steps of an epoch counted together: their
// product stays far from overflowing.
const maxEpochCount = 1 << 31

// takeEpoch takes the value v as the line's epoch, when it is a count.
func (st *lineState) takeEpoch(v *value) {
	if st.epoch < 0 && v.integer && v.unit == "" && v.v >= 0 && v.v < maxEpochCount && v.v == math.Trunc(v.v) {
		st.epoch, st.epochValEnd = int64(v.v), v.end
	}
}

// contexts are the contexts a line may name, at their index in a pairInfo's names
// (0: none).
var contexts = [...]string{"", "val", "test", "eval"}

func ctxIndex(ctx string) int {
	for k, c := range contexts {
		if c == ctx {
			return k
		}
	}
	return 0
}

// pairInfo is what the words of a name written before a value mean, whatever the
// value and the rest of the line: its lowercase words joined (rest, after its
// qualifier q and modifiers), what the extractor's table says of them, and the name
// of its series in each context of a line (see resolve).
type pairInfo struct {
	text string // the name's words as written (the key)
	ok   bool   // a name at all (not too long)
	stop bool   // the name is a stop word
	// only is the context when the name is only a qualifier (`Test: 3`).
	only    string
	q       string
	rest    []byte
	info    wordInfo // of rest
	known   bool     // rest is a knownMetric
	rate    bool     // rest is the learning rate: training's, whatever the line's context
	epoch   bool     // rest is epoch
	counter bool     // rest counts what is done of a total
	// names are the series' names in each of contexts when q is "" (else names[0]),
	// verdict whether each is worked out yet (0), a metric's (1) or none (2).
	names   [len(contexts)]string
	verdict [len(contexts)]uint8
}

// stepOrIgnored reports whether the configuration says the name is a step or ignored.
func (r *pairInfo) stepOrIgnored() bool {
	return r.info.flags&flagConfigured != 0 && (r.info.kind == kindStep || r.info.kind == kindIgnore)
}

// pairCache remembers the pairInfo of the names read, for one extractor: an
// open-addressing table keyed by a cheap hash of the text (its first and last eight
// bytes and its length, as the wordTable's), as a Go map's lookup costs as much as
// what it saves on the short names of logs.
type pairCache struct {
	e     *Extractor
	slots []pairSlot // a power of two, at most half full
	shift uint       // 64 - log2(len(slots))
	n     int
}

type pairSlot struct {
	h uint64
	r *pairInfo
}

// maxPairCache bounds the names remembered: logs write a few dozen; past this many
// (lines of ever new names), the cache starts over.
const maxPairCache = 1024

// pairOf returns the pairInfo of the words text (as written), worked out on first use.
func (p *Parsed) pairOf(e *Extractor, text string) *pairInfo {
	c := p.pairs
	if c == nil || c.e != e { // a Parsed may be used with another extractor
		c = &pairCache{e: e, slots: make([]pairSlot, 64), shift: 64 - 6}
		p.pairs = c
	}
	var h uint64
	if n := len(text); n >= 8 {
		h = load64(text, 0) ^ load64(text, n-8)*31
	} else {
		for i := range n {
			h |= uint64(text[i]) << (8 * i)
		}
	}
	h = hashWord(h, len(text))
	mask := uint64(len(c.slots) - 1)
	i := h >> c.shift // the top bits: the multiply mixes them best
	for ; c.slots[i].r != nil; i = (i + 1) & mask {
		if s := &c.slots[i]; s.h == h && s.r.text == text {
			return s.r
		}
	}
	if 2*(c.n+1) > len(c.slots) {
		c.grow()
		return p.pairOf(e, text) // placed in the new table
	}
	r := e.pairInfoOf(p, text)
	c.slots[i] = pairSlot{h, &r}
	c.n++
	return &r
}

// grow doubles the table, or empties it at maxPairCache names.
func (c *pairCache) grow() {
	if c.n >= maxPairCache {
		clear(c.slots)
		c.n = 0
		return
	}
	old := c.slots
	c.slots = make([]pairSlot, 2*len(old))
	c.shift--
	mask := uint64(len(c.slots) - 1)
	for _, s := range old {
		if s.r == nil {
			continue
		}
		i := s.h >> c.shift
		for c.slots[i].r != nil {
			i = (i + 1) & mask
		}
		c.slots[i] = s
	}
}

// load64 returns the eight bytes of s at i as a little-endian number.
func load64(s string, i int) uint64 {
	b := s[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// pairInfoOf works out what the words text mean (see pairInfo).
func (e *Extractor) pairInfoOf(p *Parsed, text string) pairInfo {
	r := pairInfo{text: strings.Clone(text)} // text may be the bytes of p.clean
	var buf [MaxNameLen + 16]byte
	name, ok := joinWords(buf[:0], text)
	if !ok {
		return r
	}
	if n := len(name); n > 1 && name[n-1] == '.' && !strings.Contains(text, " ") {
		name = expandAbbrev(name[:n-1])
	}
	r.ok = true
	r.stop = e.words.lookup(name, headOf(name)).flags&flagStop != 0
	q, rest := splitQualifier(name)
	if q != "" && e.words.lookup(rest, headOf(rest)).flags&flagStop != 0 {
		r.stop = true // `Training for 25000 kimg...`: prose after a qualifier
	}
	if c := canonQualifier(rest); c != "" {
		r.only = c
		return r
	}
	// Megatron's `lm loss value` is lm_loss; PyTorch-GAN's clip_value is a name of its own.
	rest = trimModifiers(rest, len(text) > 6 && strings.EqualFold(text[len(text)-6:], " value"))
	if q != "" && qualifiedPath(rest) {
		q = "" // Composer's `Train loss/train/total`: the name already says its context
	}
	r.q = q
	r.rest = append([]byte(nil), rest...)
	r.info = e.words.lookup(rest, headOf(rest))
	if k := bytes.LastIndexByte(rest, '/'); k > 2 && len(rest)-k > 4 && r.info.flags&flagConfigured == 0 {
		// A step under a namespace (Baselines' misc/total_timesteps): the step.
		if w := e.words.lookup(rest[k+1:], headOf(rest[k+1:])); w.flags&flagConfigured != 0 && w.kind == kindStep {
			r.info = w
		}
	}
	if r.info.flags&flagConfigured == 0 && (q == "" || q == "train") && strings.Count(r.text, " ") == 1 {
		// MaxText's `completed step: 3`, `current iteration`: the step, the last of its
		// two words says (`elapsed time per iteration` is a time; global_step is the
		// step only when the configuration says so).
		if w := lastWord(rest); string(w) == "step" || string(w) == "iteration" {
			r.info = e.words.lookup(w, headOf(w))
		}
	}
	if r.info.flags&flagConfigured == 0 && (q == "" || q == "train") && stepCounter(rest) {
		// A counter of steps of its own (Tianshou's env_step, update_step): a step, the
		// line's when it names none before it, and no series.
		w := rest[len(rest)-len("step"):]
		r.info = e.words.lookup(w, headOf(w))
	}
	r.known = knownMetrics[string(rest)]
	r.rate = string(rest) == "lr" || string(rest) == "learning_rate"
	r.counter = counterWords[string(rest)]
	r.epoch = string(rest) == "epoch"
	return r
}

// resolve returns the name of the series of r in context k (an index of contexts; 0
// when r has a qualifier of its own) and its verdict: 1 a metric's, 2 none (an ignored
// name, a setting, a name too long, one the configuration does not list).
func (e *Extractor) resolve(p *Parsed, r *pairInfo, k int) (string, uint8) {
	q := r.q
	if q == "" {
		q = contexts[k]
	}
	var kb [MaxNameLen + 16]byte
	key := r.rest
	info := r.info
	if q != "" {
		key = append(append(append(kb[:0], q...), '/'), r.rest...)
		if len(key) > MaxNameLen {
			return "", 2
		}
		info = e.words.lookup(key, headOf(key))
	}
	if name, ok := e.nameOf(p, key, info); ok {
		return name, 1
	}
	return "", 2
}

// add keeps a metric named by a lowercase name unless it is ignored or not among the
// chosen.
func (e *Extractor) add(p *Parsed, name []byte, v float64, unit string) {
	if unit != "" && !isTableUnit(unit) {
		unit = p.intern([]byte(unit)) // a unit in parentheses: a value must not pin its line
	}
	if n, ok := e.nameOf(p, name, e.words.lookup(name, headOf(name))); ok {
		v, unit = scaled(n, v, unit)
		p.Samples = append(p.Samples, Sample{Name: n, Value: v, Unit: unit})
	}
}

// nameOf returns the series name of a lowercase name whose word w is already looked
// up, and whether it is a metric's.
func (e *Extractor) nameOf(p *Parsed, name []byte, w wordInfo) (string, bool) {
	if w.flags&flagConfigured != 0 {
		return w.name, w.kind == kindMetric
	}
	if len(name) > MaxNameLen || e.listed {
		return "", false
	}
	sl := p.internSlot(name)
	if sl.verdict == 0 {
		sl.verdict = 1
		if _, rest := splitQualifier(name); hasIgnoredSuffix(rest) || isSetting(rest) {
			sl.verdict = 2
		}
	}
	return sl.name, sl.verdict == 1
}

// appendLower appends s lowercased (ASCII) to b, and returns the head (see headOf) of
// b when it was empty, else of all of b.
func appendLower(b []byte, s string) ([]byte, uint64) {
	n := len(b)
	b = append(b, s...) // one copy, then lowered in place: no append per byte
	t := b[n:]
	for i := range t {
		t[i] = lower[t[i]]
	}
	if n > 0 || len(t) >= 8 {
		return b, headOf(b)
	}
	var head uint64
	for i := range t {
		head |= uint64(t[i]) << (8 * i)
	}
	return b, head
}

// lower maps a byte to its ASCII lowercase.
var lower = func() (t [256]byte) {
	for c := range 256 {
		t[c] = byte(c)
		if 'A' <= c && c <= 'Z' {
			t[c] = byte(c + 'a' - 'A')
		}
	}
	return t
}()

// glogPrefixEnd returns where the prefix glog and absl put before a message ends
// (`I1206 10:00:01.512301  4211 solver.cpp:239] `: severity, month and day, time,
// thread, file:line, then "] "), 0 when s has none: what follows it is the line as its
// writer wrote it (an indented line of a record).
func glogPrefixEnd(s string) int {
	if len(s) < 22 || !strings.ContainsRune("IWEF", rune(s[0])) || !isDigit(s[1]) || !isDigit(s[4]) || s[5] != ' ' || s[8] != ':' {
		return 0
	}
	k := strings.IndexByte(s, ']')
	if k < 20 || k > 160 || k+1 >= len(s) || s[k+1] != ' ' {
		return 0
	}
	if c := strings.LastIndexByte(s[:k], ':'); c < 0 || !isDigit(s[k-1]) {
		return 0
	}
	return k + 2
}

// stepCounter reports whether a lowercase name counts steps of what trains (env_step,
// update_step, optimizer_step): the word before step says what steps, not a metric
// taken at each step (Lightning's train_loss_step). global_step is the step when the
// configuration says so (DefaultStepKeys), not here.
func stepCounter(name []byte) bool {
	before, ok := bytes.CutSuffix(name, []byte("_step"))
	if !ok {
		return false
	}
	switch string(before) {
	case "env", "update", "updates", "agent", "optimizer", "optim", "opt", "sgd", "learner", "trainer", "policy", "train", "training":
		return true
	}
	return false
}

// maxAbbrev bounds an abbreviated name's letters (`L.r.`, `Sen.`).
const maxAbbrev = 3

// abbrevWords are the words an abbreviation of a counter or a count may stand for: the
// letters written are their beginning (Marian's `Ep.`, `Up.`, `Sen.`).
var abbrevWords = [...]string{"epoch", "updates", "iteration", "step", "batch", "sentences", "samples", "tokens", "examples", "words"}

// expandAbbrev returns the word a lowercase abbreviation (its dot removed) stands for
// when it begins one of abbrevWords with two letters or more, else the abbreviation
// itself (`l.r`). An update counted is the step: the name becomes a step key's.
func expandAbbrev(a []byte) []byte {
	if len(a) < 2 || bytes.IndexByte(a, '.') >= 0 {
		return a
	}
	for _, w := range abbrevWords {
		if len(a) < len(w) && w[:len(a)] == string(a) {
			if w == "updates" || w == "iteration" {
				return []byte("step")
			}
			return []byte(w)
		}
	}
	return a
}

// fieldStart reports whether a field of the line begins at s[i]: the line's start, or
// after `: `, `| ` or `] ` (not prose: `e.g. 30s`, `line. 488`).
func fieldStart(s string, i int) bool {
	if i == 0 {
		return true
	}
	if i < 2 || s[i-1] != ' ' {
		return false
	}
	switch s[i-2] {
	case ':', '|', ']':
		return true
	}
	return false
}
