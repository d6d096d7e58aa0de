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
//  4. Step: the value of a step name (step, global_step, iter, it, iteration,
//     num_updates), else a counter in brackets before the values (`[ 50/1251]` is step
//     50), else torchtune's `1|50|`. A line with a counter of its own that is not a
//     step (`[ 1,  2000] loss: 2.2`) has NoStep: it takes no step from other lines.
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
	"strconv"
	"strings"
	"time"
	"unsafe"
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

// Parsed is what one line says: its values, the step it names, and torchrun's local
// rank when the line carries a `[N]:` prefix.
type Parsed struct {
	Samples []Sample
	// Step is the step the line names, when HasStep; NoStep when the line has a
	// counter of its own that is not a step.
	Step    int64
	HasStep bool
	// Local is the local rank of torchrun's prefix, or -1.
	Local int

	// names remembers recent names that are not words of the extractor's table
	// (eval_runtime, tokens_per_sec), so that a name read line after line is
	// allocated once: a value's name must not pin its line.
	names [nameCache]nameSlot
	// clean holds a line without its escape sequences.
	clean []byte
	// header is the last header line of columns read (Ultralytics' `Epoch GPU_mem
	// box_loss ...`), for the rows of values under it, and headerLocal its local rank.
	header      []string
	headerLocal int
	// The time each user pattern took, over how many lines, and the patterns skipped
	// for their time (see PatternLineBudget), with their notices.
	patTime  [maxPatterns]time.Duration
	patLines [maxPatterns]int64
	patSkip  uint32
	notices  []string
}

// Notices says what the extraction gave up on (a user pattern too slow), once each.
func (p *Parsed) Notices() []string { return p.notices }

// maxColumns bounds the columns of a header line.
const maxColumns = 24

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
	p.Step, p.HasStep, p.Local = 0, false, -1
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
	words := map[string]wordInfo{}
	for _, n := range append(append([]string(nil), commonNames...), cfg.Only...) {
		n = CanonicalName(n)
		if keep(n, only, ignore) {
			words[n] = wordInfo{name: n, kind: kindMetric}
		} else {
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

// DefaultStepKeys are the names that give a line's step. `steps` is not one: `Steps:
// 32` is a count of steps (per epoch, to run), not the step a line is at.
var DefaultStepKeys = []string{"step", "global_step", "iter", "it", "iteration", "num_updates"}

// defaultIgnore are names whose numbers are not metrics.
var defaultIgnore = []string{
	"pid", "ppid", "port", "rank", "local_rank", "node_rank", "group_rank", "world_size",
	"local_world_size", "nproc", "nproc_per_node", "nnodes", "seed", "epoch", "epochs",
	"gpu", "gpus", "device", "cuda", "worker", "workers", "line", "version", "id",
	// torchrun's agent prints its configuration at LOGLEVEL=INFO.
	"min_nodes", "max_nodes", "max_restarts", "monitor_interval", "restart_count", "timeout",
	"elapsed", "role_world_size", "group_world_size", "nnodes_min", "nnodes_max",
	"attempt", "restart", "restarts", "done", "exitcode", "exit_code", "code", "errno", "signal",
	// Counters of frameworks: DeepSpeed's skipped steps and micro steps, fairseq's
	// batch size, Lightning's version and dataloader index, HF's fractional epoch.
	"skipped", "micro_step", "bsz", "v_num", "dataloader", "update", "eta", "best_epoch",
	// NCCL_DEBUG=INFO's communicator lines.
	"nranks", "cudadev", "busid", "nvmldev", "comm", "channel", "nchannels",
}

// settingWords are words of names that count or size things: settings and counters,
// not metrics (global batch size, num_examples, consumed samples, v_num).
var settingWords = map[string]bool{
	"size": true, "sizes": true, "examples": true, "epochs": true, "steps": true,
	"parameters": true, "params": true, "workers": true, "gpus": true, "devices": true,
	"nodes": true, "iterations": true, "instances": true, "zeros": true, "seed": true,
	"version": true, "id": true, "rank": true, "ranks": true, "port": true, "pid": true,
	"addr": true, "samples": true, "num": true, "number": true, "count": true,
	"classes": true, "images": true, "tokens": true, "layers": true, "heads": true,
	"dim": true, "shards": true,
}

// isSetting reports whether a lowercase name (words joined by _ . - / or space) names
// a setting or a counter by its words: one of them is in settingWords, or its last is
// epoch. A rate is a metric whatever it counts (samples_per_second, tokens/s), and so
// is a loss (epoch_loss).
func isSetting(name []byte) bool {
	if len(name) >= 4 && string(name[len(name)-4:]) == "loss" {
		return false
	}
	for i := 0; i+1 < len(name); i++ {
		if name[i] == '/' && name[i+1] == 's' && (i+2 == len(name) || name[i+2] == '_') {
			return false
		}
	}
	if bytes.Contains(name, []byte("per_sec")) || bytes.Contains(name, []byte("persec")) {
		return false
	}
	setting := false
	start := 0
	for i := 0; i <= len(name); i++ {
		if i < len(name) {
			if c := name[i]; c != '_' && c != '.' && c != '-' && c != ' ' && c != '/' {
				continue
			}
		}
		w := string(name[start:i])
		if w == "nan" || w == "inf" {
			// Megatron's `number of nan iterations`: a count of NaN steps is the
			// run's health, not a setting (the Store raises an alarm when it is not 0).
			return false
		}
		setting = setting || settingWords[w] || i == len(name) && w == "epoch"
		start = i + 1
	}
	return setting
}

// stopWords are words that precede numbers in prose, never metrics when only a space
// separates them from the number: "create 8 workers", "is 4", "of 10".
var stopWords = []string{
	"a", "an", "the", "is", "are", "was", "were", "be", "of", "to", "in", "on", "at", "by",
	"for", "with", "from", "than", "and", "or", "into", "over", "after", "before", "every",
	"each", "all", "only", "about", "per", "use", "using", "create", "created", "has",
	"have", "had", "got", "found", "expected", "received", "took", "takes", "max", "min",
	"total", "last", "first", "top", "x", "line", "see", "version", "python",
}

// qualifiers are the words of a context: they name the series (val/loss) of the name
// that follows them, or of the whole line.
var qualifiers = []string{
	"train", "training", "eval", "evaluation", "val", "valid", "validation", "validate",
	"validating", "test", "testing", "dev",
}

// canonQualifier is the series prefix of a qualifier ("" for training).
func canonQualifier(q []byte) string {
	switch string(q) {
	case "train", "training":
		return "train"
	case "eval", "evaluation":
		return "eval"
	case "val", "valid", "validation", "validate", "validating", "dev":
		return "val"
	case "test", "testing":
		return "test"
	}
	return ""
}

// counterWords count what is done of a total (`epoch 3/10`): their count is their value.
var counterWords = map[string]bool{
	"step": true, "iter": true, "iteration": true, "it": true, "batch": true, "epoch": true,
	"global_step": true, "update": true, "updates": true,
}

// isModifier reports whether a word is dropped from the front of a name of several
// words: `Average loss` is the loss.
func isModifier(w []byte) bool {
	switch string(w) {
	case "average", "avg", "mean":
		return true
	}
	return false
}

// maxQualifierLen bounds the words looked up as qualifiers: none is longer.
const maxQualifierLen = 16

// commonNames are interned so that extracting them allocates nothing.
var commonNames = []string{
	"loss", "lr", "grad_norm", "tok/s", "it/s", "s/it", "eval/loss", "train/loss",
	"val/loss", "test/loss", "learning_rate", "accuracy", "acc", "ppl", "perplexity",
	"throughput", "samples/s", "mfu", "step_time", "data_time", "time", "memory", "mem",
	"lm_loss", "nll_loss", "norm", "tps", "tflops", "data", "val/accuracy", "test/accuracy",
}

// knownMetrics may stand alone after a space: `val loss 5.32` is a value even as the
// only pair of its line, where `create 8 workers` is prose.
var knownMetrics = map[string]bool{
	"loss": true, "lr": true, "acc": true, "accuracy": true, "ppl": true, "perplexity": true,
	"grad_norm": true, "mfu": true,
}

// CanonicalName is the name under which a metric written name is kept: lowercased,
// its qualifier a prefix (`eval_loss`, `Eval Loss` and `eval/loss` are eval/loss;
// `valid_loss` is val/loss). A configuration's names go through it too.
func CanonicalName(name string) string {
	var buf [MaxNameLen + 16]byte
	lw, _ := appendLower(buf[:0], strings.TrimSpace(name))
	for i, c := range lw {
		if c == ' ' {
			lw[i] = '_'
		}
	}
	q, rest := splitQualifier(lw)
	if q == "" {
		return string(lw)
	}
	return q + "/" + string(rest)
}

// splitQualifier splits a lowercase name into its context and the rest: val_loss is
// val and loss. A name that is only a qualifier has none.
func splitQualifier(name []byte) (string, []byte) {
	for i := 0; i < len(name) && i <= maxQualifierLen; i++ {
		if c := name[i]; c == '_' || c == '/' || c == '.' || c == ' ' || c == '-' {
			if q := canonQualifier(name[:i]); q != "" && i+1 < len(name) {
				return q, name[i+1:]
			}
			return "", name
		}
	}
	return "", name
}

// Extract reads the values of one line into p (which it resets first).
func (e *Extractor) Extract(text string, p *Parsed) {
	p.Reset()
	text, p.Local = localRank(text)
	text = p.cleanLine(text)
	e.scan(text, p)
	e.table(text, p)
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

// table reads a header line of column names, or a row of values under the last one:
// columns right-aligned, two spaces or more apart, as Ultralytics prints them (a row
// may be a tqdm bar's description, before its `: 100%|`).
func (e *Extractor) table(s string, p *Parsed) {
	if i := strings.Index(s, "%|"); i >= 0 {
		c := strings.LastIndexByte(s[:i], ':')
		if c < 0 {
			return
		}
		s = s[:c]
	} else if len(p.Samples) > 0 || p.HasStep {
		return
	}
	var cols [maxColumns]string
	n := 0
	for i := 0; i < len(s); {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i == len(s) {
			break
		}
		if n > 0 && (i < 2 || s[i-2] != ' ') || n == maxColumns {
			return // one space apart: prose, not columns
		}
		j := i
		for j < len(s) && s[j] != ' ' {
			j++
		}
		cols[n] = s[i:j]
		n++
		i = j
	}
	if n < 4 {
		return
	}
	header := true
	for _, c := range cols[:n] {
		if !isLetter(c[0]) && c[0] != '(' {
			header = false
			break
		}
	}
	if header {
		p.header = p.header[:0]
		for _, c := range cols[:n] {
			c = strings.Trim(c, "()")
			if k := strings.IndexByte(c, '('); k >= 0 {
				c = c[k+1:] // Box(P is P
			}
			var b [MaxNameLen]byte
			if len(c) > MaxNameLen {
				c = c[:MaxNameLen]
			}
			lw, _ := appendLower(b[:0], c)
			p.header = append(p.header, p.intern(lw))
		}
		p.headerLocal = p.Local
		return
	}
	if len(p.header) != n || p.headerLocal != p.Local {
		return
	}
	st := lineState{}
	for k, c := range cols[:n] {
		if !isDigit(c[0]) && !(c[0] == '.' || c[0] == '-') {
			continue // a label: all, person
		}
		v, ok := readValue(c, 0, value{sep: ':'}, false)
		if !ok || v.ratio || v.end != len(c) {
			continue // 1/100 is the epoch
		}
		name := []byte(p.header[k])
		if info := e.words.lookup(name, headOf(name)); info.flags&flagConfigured != 0 && info.kind == kindStep {
			if !p.HasStep && v.v >= 0 && v.v == math.Trunc(v.v) && v.v < 1<<53 {
				p.Step, p.HasStep = int64(v.v), true
			}
			continue
		}
		e.add(p, &st, name, v.v, v.unit)
		if len(p.Samples) >= MaxValuesPerLine {
			return
		}
	}
}

// cleanLine returns the last drawing of a line, without escape sequences, cut to
// MaxLineBytes at a space.
func (p *Parsed) cleanLine(text string) string {
	// A progress bar redrawn with \r: its last drawing holds the latest values. Keras
	// erases with \b before its \r.
	if strings.IndexByte(text, '\r') >= 0 {
		text = strings.TrimRight(text, "\r\b")
		if i := strings.LastIndexByte(text, '\r'); i >= 0 {
			text = text[i+1:]
		}
	}
	if strings.IndexByte(text, 0x1b) >= 0 {
		p.clean = stripEscapes(p.clean[:0], text, MaxLineBytes)
		// The text is read only during Extract, and nothing read keeps a piece of it
		// (names and units are interned copies): it may be p.clean's bytes.
		text = unsafe.String(unsafe.SliceData(p.clean), len(p.clean))
	}
	if len(text) > MaxLineBytes {
		cut := strings.LastIndexByte(text[:MaxLineBytes], ' ')
		if cut < 0 {
			cut = MaxLineBytes
		}
		text = text[:cut]
	}
	return text
}

// stripEscapes appends s without its ANSI escape sequences (CSI `ESC [ ... final`,
// OSC `ESC ] ... BEL or ESC \`, and two-byte escapes) to b, stopping past max bytes
// kept.
func stripEscapes(b []byte, s string, max int) []byte {
	for i := 0; i < len(s) && len(b) <= max; {
		c := s[i]
		if c != 0x1b {
			b = append(b, c)
			i++
			continue
		}
		i++
		if i >= len(s) {
			break
		}
		switch s[i] {
		case '[':
			i++
			for i < len(s) && (s[i] < 0x40 || s[i] > 0x7e) {
				i++
			}
			i++ // the final byte
		case ']':
			for i < len(s) && s[i] != 0x07 && !(s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\') {
				i++
			}
			if i < len(s) && s[i] == 0x1b {
				i++
			}
			i++
		default:
			i++
		}
	}
	return b
}

// localRank strips torchrun's `[N]:` or `[NAME N]:` prefix (after leading spaces)
// and returns N, or -1 when the line has none.
func localRank(s string) (string, int) {
	t := strings.TrimLeft(s, " ")
	if len(t) < 4 || t[0] != '[' {
		return s, -1
	}
	end := strings.Index(t[:min(len(t), 48)], "]:")
	if end < 2 {
		return s, -1
	}
	inner := t[1:end]
	j := len(inner)
	for j > 0 && isDigit(inner[j-1]) {
		j--
	}
	if j == len(inner) || len(inner)-j > 6 {
		return s, -1
	}
	for k := 0; k < j; k++ {
		if c := inner[k]; !isNameChar(c) && c != ' ' {
			return s, -1
		}
	}
	n, _ := strconv.Atoi(inner[j:])
	return t[end+2:], n
}

// Classes of bytes, in one table: the scan asks for each byte of a line.
const (
	cDigit     = 1 << iota // 0-9
	cLetter                // a-z A-Z
	cNameStart             // a letter or _
	cNameChar              // a letter, a digit or _ . / - @
	cNameTrail             // . / -: not the last byte of a name
)

var class = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case '0' <= c && c <= '9':
			t[c] = cDigit | cNameChar
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
			t[c] = cLetter | cNameStart | cNameChar
		case c == '_':
			t[c] = cNameStart | cNameChar
		case c == '.', c == '/', c == '-':
			t[c] = cNameChar | cNameTrail
		case c == '@': // timm's Acc@1
			t[c] = cNameChar
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
	// spacedKnown is whether the line's one spaced pair names a known metric.
	spacedKnown bool
	// unctx are the values of the line without a qualifier of their own: they take
	// ctx, even when it is named after them, as a context names the whole line.
	unctx  [MaxValuesPerLine]uint8
	nunctx int
}

// scan reads the pairs of s into p.
func (e *Extractor) scan(s string, p *Parsed) {
	st := lineState{spacedOnly: true, bracketStep: -1}
	if n, ok := torchtuneStep(s); ok {
		p.Step, p.HasStep = n, true
	}
	e.pairs(s, p, &st)
	// Prose has numbers after words too ("will create 8 worker processes"): a line
	// whose only pair is `name value`, with no = or :, is not taken unless the name is
	// a metric's (`val loss 5.32`).
	if st.pairs == 1 && st.spacedOnly && !st.spacedKnown {
		p.Samples = p.Samples[:0]
		p.HasStep = false
		return
	}
	if st.ctx != "" {
		// A context named after values (`loss 2.1 (valid)`) still names them.
		for _, k := range st.unctx[:st.nunctx] {
			if int(k) < len(p.Samples) {
				p.Samples[k].Name = p.prefixed(st.ctx, p.Samples[k].Name)
			}
		}
	}
	if !p.HasStep {
		switch {
		case st.bracketStep >= 0:
			p.Step, p.HasStep = st.bracketStep, true
		case st.counter && len(p.Samples) > 0:
			p.Step, p.HasStep = NoStep, true
		}
	}
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

// torchtuneStep reads torchtune's progress description `EPOCH|STEP|Loss: ...`.
func torchtuneStep(s string) (int64, bool) {
	i := 0
	for i < len(s) && s[i] == ' ' {
		i++
	}
	a := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == a || i >= len(s) || s[i] != '|' || i-a > 9 {
		return 0, false
	}
	i++
	b := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == b || i >= len(s) || s[i] != '|' || i-b > 15 {
		return 0, false
	}
	n, err := strconv.ParseInt(s[b:i], 10, 64)
	return n, err == nil
}

// pairs takes the name-value pairs of s into p.
func (e *Extractor) pairs(s string, p *Parsed, st *lineState) {
	for i := 0; i < len(s); {
		c := s[i]
		switch cl := class[c]; {
		case cl&cNameStart != 0:
			j := i + 1
			for j < len(s) && class[s[j]]&cNameChar != 0 {
				j++
			}
			wend := j
			for wend > i+1 && class[s[wend-1]]&cNameTrail != 0 {
				wend--
			}
			if v, ok := valueAfter(s, wend); ok {
				i = e.pair(s, p, st, span{i, wend}, v)
				if len(p.Samples) >= MaxValuesPerLine {
					return
				}
				continue
			}
			// `time (ms): 12.5`, `memory(GiB): 3.1`: a unit in parentheses.
			if v, ok := unitThenValue(s, wend); ok {
				i = e.pair(s, p, st, span{i, wend}, v)
				if len(p.Samples) >= MaxValuesPerLine {
					return
				}
				continue
			}
			// A word of the field: the next one may make a name with it, unless it
			// is a value itself (`dtype=bfloat16 lr=...`).
			isValue := i > 0 && (s[i-1] == '=' || s[i-1] == ':')
			if !isValue && wend == j && j+1 < len(s) && s[j] == ' ' && class[s[j+1]]&cNameStart != 0 {
				if st.nwords == maxNameWords {
					st.closeWords(s, st.words[:1])
					copy(st.words[:], st.words[1:])
					st.nwords--
				}
				st.words[st.nwords] = span{i, wend}
				st.nwords++
			} else {
				st.endField(s)
				st.closeWords(s, []span{{i, wend}})
			}
			i = j
		case cl&cDigit != 0 || c == '.' && i+1 < len(s) && isDigit(s[i+1]):
			// A number with no name: skip all of it (so the e of 1e-4 is not a name),
			// taking a rate `20.00it/s` or `48213 tok/s` on the way.
			st.endField(s)
			n := readNumber(s, i)
			j := n.end
			if rate, k := rateAfter(s, j); rate != "" && j-i <= maxNumberLen {
				if v, ok := parseNumber(s[i:j], n, false); ok {
					st.pairs++
					st.spacedOnly = false
					if before := len(p.Samples); st.nunctx < len(st.unctx) {
						st.unctx[st.nunctx] = uint8(before) // a rate takes the line's context
						st.nunctx++
					}
					e.add(p, st, rateNames[rate], v, "")
					if len(p.Samples) >= MaxValuesPerLine {
						return
					}
				}
				j = k
			}
			for j < len(s) && class[s[j]]&cNameChar != 0 {
				j++
			}
			i = j
		case c == '[':
			st.endField(s)
			if len(p.Samples) == 0 {
				if end, step, counter := bracketCounter(s, i); end > i {
					if step >= 0 && st.bracketStep < 0 {
						st.bracketStep = step
					}
					st.counter = st.counter || counter
					i = end
					continue
				}
			}
			i++
		default:
			// One space between two words keeps the field (`lm loss`); anything
			// else ends it.
			if !(c == ' ' && st.nwords > 0 && i+1 < len(s) && class[s[i+1]]&cNameStart != 0 && class[s[i-1]]&cNameChar != 0) {
				st.endField(s)
			}
			i++
		}
	}
	st.endField(s)
}

// endField closes the current field: its words named no value.
func (st *lineState) endField(s string) {
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
		if st.ctx == "" && mayQualify(s, w) {
			var b [maxQualifierLen]byte
			lw, _ := appendLower(b[:0], s[w.start:w.end])
			if q := canonQualifier(lw); q != "" && q != "train" {
				st.ctx = q
			}
		}
	}
}

// pair takes the value v of the name word w, with the words of its field before it,
// and returns where the scan goes on.
func (e *Extractor) pair(s string, p *Parsed, st *lineState, w span, v value) int {
	// The name's words: after a separator (`lm loss: 1.06`) every word of the field;
	// after a space only the last one, and only a qualifier (`val loss 2.0`, but
	// `final loss 0.7` is the loss).
	first := 0
	if v.sep == ' ' {
		first = st.nwords
		if first > 0 && isQualifier(s, st.words[first-1]) {
			first--
		}
	}
	var buf [MaxNameLen + 16]byte
	name, ok := joinWords(buf[:0], s, st.words[first:st.nwords], w)
	own := first < st.nwords // words of the field before the name's last
	if ok && v.sep == ' ' && !own {
		// A stop word is prose ("create 8 workers"), and may be a word of a longer
		// name: `number of nan iterations: 1` is not of=nan.
		if info := e.words.lookup(name, headOf(name)); info.flags&flagStop != 0 {
			if st.nwords < maxNameWords && w.end < len(s) && s[w.end] == ' ' {
				st.words[st.nwords] = w
				st.nwords++
				return w.end
			}
			st.endField(s)
			return v.end
		}
	}
	st.closeWords(s, st.words[:first])
	st.nwords = 0
	if !ok {
		return v.end
	}
	st.pairs++
	if v.sep != ' ' {
		st.spacedOnly = false
	}
	q, rest := splitQualifier(name)
	if canonQualifier(rest) != "" {
		// `Train: 0`, `Test: 3`: a context, not a metric.
		if q = canonQualifier(rest); q != "train" && st.ctx == "" {
			st.ctx = q
		}
		return v.end
	}
	rest = trimModifiers(rest)
	info := e.words.lookup(rest, headOf(rest))
	configured := info.flags&flagConfigured != 0
	if configured && info.kind == kindStep {
		if own && q != "" && q != "train" && st.ctx == "" {
			st.ctx = q // `validate step: 10` names the line
		}
		if !p.HasStep && v.v >= 0 && v.v < 1<<53 && v.v == math.Trunc(v.v) {
			p.Step, p.HasStep = int64(v.v), true
		}
		return v.end
	}
	if configured && info.kind == kindIgnore {
		if own && q != "" && q != "train" && st.ctx == "" {
			st.ctx = q
		}
		return v.end
	}
	if v.sep == ' ' && (own || knownMetrics[string(rest)]) {
		st.spacedKnown = true
	}
	val := v.v
	if v.ratio && !counterWords[string(rest)] {
		val = v.num / v.den // accuracy: 9800/10000
	}
	if q == "" && st.ctx != "" {
		q = st.ctx
	}
	var kb [MaxNameLen + 16]byte
	key := rest
	if q != "" {
		key = append(append(append(kb[:0], q...), '/'), rest...)
	}
	if len(key) > MaxNameLen {
		return v.end
	}
	before := len(p.Samples)
	e.add(p, st, key, val, v.unit)
	if q == "" && len(p.Samples) > before && st.nunctx < len(st.unctx) {
		st.unctx[st.nunctx] = uint8(before)
		st.nunctx++
	}
	return v.end
}

// mayQualify is a quick look at a word: whether it may be a qualifier (its length and
// first letter), before it is lowercased and looked up.
func mayQualify(s string, w span) bool {
	if n := w.end - w.start; n < 3 || n > 10 {
		return false
	}
	switch s[w.start] | 0x20 {
	case 't', 'e', 'v', 'd':
		return true
	}
	return false
}

// isQualifier reports whether a word is a qualifier.
func isQualifier(s string, w span) bool {
	if !mayQualify(s, w) {
		return false
	}
	var b [maxQualifierLen]byte
	lw, _ := appendLower(b[:0], s[w.start:w.end])
	return canonQualifier(lw) != ""
}

// trimModifiers drops modifiers before a name (`average_loss` is the loss) and
// Megatron's `value` after it (`lm loss value`).
func trimModifiers(name []byte) []byte {
	for {
		k := 0
		for k < len(name) && name[k] != '_' {
			k++
		}
		if k < len(name) && isModifier(name[:k]) {
			name = name[k+1:]
			continue
		}
		break
	}
	if n := len(name) - len("_value"); n > 0 && string(name[n:]) == "_value" {
		name = name[:n]
	}
	return name
}

// joinWords appends the lowercase words and w, joined by _, to b; ok is false when the
// name is too long or a word is not one.
func joinWords(b []byte, s string, words []span, w span) ([]byte, bool) {
	for k := 0; k <= len(words); k++ {
		x := w
		if k < len(words) {
			x = words[k]
		}
		if len(b) > 0 {
			b = append(b, '_')
		}
		if len(b)+x.end-x.start > MaxNameLen {
			return nil, false
		}
		b, _ = appendLower(b, s[x.start:x.end])
	}
	return b, len(b) > 0
}

// bracketCounter reads a counter in brackets at s[i] == '[': `[ 50/1251]`, `[  50/1251 (
// 4%)]` (step 50), `[ 1,  2000]` or `[1]` (a counter, no step). end is i when there is
// none.
func bracketCounter(s string, i int) (end int, step int64, counter bool) {
	j := i + 1
	num := func() (int64, bool) {
		for j < len(s) && s[j] == ' ' {
			j++
		}
		a := j
		for j < len(s) && isDigit(s[j]) && j-a < 16 {
			j++
		}
		if j == a {
			return 0, false
		}
		n, err := strconv.ParseInt(s[a:j], 10, 64)
		return n, err == nil
	}
	a, ok := num()
	if !ok {
		return i, -1, false
	}
	for j < len(s) && s[j] == ' ' {
		j++
	}
	step = -1
	switch {
	case j < len(s) && s[j] == '/':
		j++
		if _, ok := num(); !ok {
			return i, -1, false
		}
		step = a
		// timm's and mnist's `(  4%)`: progress, not a value.
		for j < len(s) && s[j] == ' ' {
			j++
		}
		if j < len(s) && s[j] == '(' {
			k := strings.IndexByte(s[j:min(len(s), j+12)], ')')
			if k < 0 {
				return i, -1, false
			}
			j += k + 1
		}
	case j < len(s) && s[j] == ',':
		for j < len(s) && s[j] == ',' {
			j++
			if _, ok := num(); !ok {
				return i, -1, false
			}
		}
	}
	for j < len(s) && s[j] == ' ' {
		j++
	}
	if j >= len(s) || s[j] != ']' {
		return i, -1, false
	}
	return j + 1, step, step < 0
}

// rateAfter reads a rate unit right after a number or after one space: it/s, s/it,
// tok/s. It returns the metric's name and where the unit ends.
func rateAfter(s string, j int) (string, int) {
	if j >= len(s) || s[j] != ' ' && !isLetter(s[j]) || s[j] == ' ' && (j+1 >= len(s) || !isLetter(s[j+1])) {
		return "", j
	}
	k := j
	if k < len(s) && s[k] == ' ' {
		k++
	}
	for _, r := range rates {
		if strings.HasPrefix(s[k:], r) && boundary(s, k+len(r)) {
			if k > j && (r == "it/s" || r == "s/it") {
				continue // tqdm writes these against the number
			}
			return r, k + len(r)
		}
	}
	return "", j
}

var rates = []string{"it/s", "s/it", "tok/s", "tokens/s", "samples/s", "img/s"}

// rateNames are the rates as the names add looks up.
var rateNames = func() map[string][]byte {
	m := map[string][]byte{}
	for _, r := range rates {
		m[r] = []byte(r)
	}
	return m
}()

// value is a number read after a name.
type value struct {
	v    float64
	unit string
	end  int
	// sep is ' ' when only spaces separate the name from the value, else ':' or '='.
	sep byte
	// ratio is a count of a total (`9800/10000`): the value is num/den for a metric.
	ratio    bool
	num, den float64
}

// units are the units kept with a value, longest first.
var units = []string{"GiB", "MiB", "KiB", "TiB", "GB", "MB", "KB", "TB", "ms", "us", "µs", "ns", "min", "s", "h", "G", "M", "%"}

// valueAfter reads the value that follows a name ending at i: optional closing quote,
// spaces, at most one `=` or `:`, spaces, an optional opening quote or bracket, then a
// number, a total, a unit and a remark in parentheses, ending at a boundary.
func valueAfter(s string, i int) (v value, ok bool) {
	quoted := i < len(s) && (s[i] == '"' || s[i] == '\'')
	if quoted {
		i++
	}
	sp := i
	for i < len(s) && s[i] == ' ' {
		i++
	}
	v.sep = ' '
	tight := false // `name:value`, no space after the colon
	if i < len(s) && (s[i] == '=' || s[i] == ':') {
		v.sep = s[i]
		i++
		tight = v.sep == ':' && !quoted && (i >= len(s) || s[i] != ' ')
		for i < len(s) && s[i] == ' ' {
			i++
		}
	}
	if v.sep == ' ' && i == sp {
		return value{}, false // `loss2` is a name, not loss=2
	}
	if v.sep == ' ' && quoted {
		return value{}, false
	}
	return readValue(s, i, v, tight)
}

// unitThenValue reads `NAME (unit): value` or `NAME(unit)=value` after a name ending
// at i.
func unitThenValue(s string, i int) (value, bool) {
	j := i
	if j < len(s) && s[j] == ' ' {
		j++
	}
	if j >= len(s) || s[j] != '(' {
		return value{}, false
	}
	k := strings.IndexByte(s[j:min(len(s), j+maxUnitLen+2)], ')')
	if k < 2 {
		return value{}, false
	}
	unit := s[j+1 : j+k]
	for x := 0; x < len(unit); x++ {
		if c := unit[x]; !isNameChar(c) && c != '%' {
			return value{}, false
		}
	}
	j += k + 1
	if j >= len(s) || s[j] != ':' && s[j] != '=' {
		return value{}, false
	}
	v := value{sep: s[j]}
	j++
	for j < len(s) && s[j] == ' ' {
		j++
	}
	v, ok := readValue(s, j, v, false)
	if ok && v.unit == "" {
		v.unit = unit
	}
	return v, ok
}

// readValue reads the number at s[i] and what follows it (see valueAfter).
func readValue(s string, i int, v value, tight bool) (value, bool) {
	if i < len(s) && (s[i] == '"' || s[i] == '\'') {
		i++
	}
	list := false
	if i < len(s) && s[i] == '[' && v.sep != ' ' {
		list = true // DeepSpeed's lr=[0.001]
		i++
	}
	start := i
	neg := false
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	var n number
	var end int
	word := false
	switch {
	case i < len(s) && (isDigit(s[i]) || s[i] == '.' && i+1 < len(s) && isDigit(s[i+1])):
		n = readNumber(s, i)
		end = n.end
	case i+3 <= len(s) && (s[i]|0x20 == 'n' || s[i]|0x20 == 'i'):
		// nan, inf or infinity, in any case and with any sign, as a word of its own.
		w := i
		for w < len(s) && isLetter(s[w]) && w-i < 9 {
			w++
		}
		switch {
		case foldEqual(s[i:w], "nan"):
			v.v = math.NaN()
		case foldEqual(s[i:w], "inf"), foldEqual(s[i:w], "infinity"):
			v.v = math.Inf(1)
			if neg {
				v.v = math.Inf(-1)
			}
		default:
			return value{}, false
		}
		end, word = w, true
	default:
		return value{}, false
	}
	if end-start > maxNumberLen {
		return value{}, false
	}
	tok := s[start:end]
	var grouped [maxNumberLen + 8]byte
	if !word && end < len(s) && s[end] == ',' {
		// Thousands separators: 1,234 and 1,234,567.89.
		if g, gend, ok := thousands(s, i, end, grouped[:0]); ok {
			f, err := strconv.ParseFloat(string(g), 64)
			if err != nil {
				return value{}, false
			}
			if neg {
				f = -f
			}
			v.v, end, word = f, gend, true
		}
	}
	integer := !word
	for k := 0; k < len(tok) && integer; k++ {
		integer = tok[k] != '.' && tok[k]|0x20 != 'e'
	}
	if tight && integer {
		return value{}, false // train.py:42, localhost:29500
	}
	// `step 20/1000`, `iteration 10/  100000`, `9800/10000`: a count and its total.
	if end < len(s) && s[end] == '/' {
		k := end + 1
		for k < len(s) && s[k] == ' ' && k-end < 12 {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			d := k
			for k < len(s) && (isDigit(s[k]) || s[k] == '.') {
				k++
			}
			if integer && !strings.Contains(s[d:k], ".") {
				den, err := strconv.ParseFloat(s[d:k], 64)
				if err == nil && den > 0 {
					v.ratio, v.den = true, den
				}
			}
			end = k
		}
	}
	// A unit against the number: 30.12ms, 25.1GiB, 98%.
	if end < len(s) && (isLetter(s[end]) || s[end] == '%' || s[end] == 0xc2) {
		for _, u := range units {
			if strings.HasPrefix(s[end:], u) && unitEnds(s, end+len(u)) {
				v.unit = u
				end += len(u)
				break
			}
		}
	}
	// A remark in parentheses against the value: 25.1GiB(31.7%).
	if end < len(s) && s[end] == '(' {
		k := strings.IndexByte(s[end:min(len(s), end+32)], ')')
		if k < 0 {
			return value{}, false
		}
		end += k + 1
	}
	if list {
		if end >= len(s) || s[end] != ']' {
			return value{}, false
		}
		end++
	}
	if end < len(s) && (s[end] == '"' || s[end] == '\'') {
		end++
	}
	if !boundary(s, end) {
		return value{}, false
	}
	if countsThings(s, end) {
		return value{}, false // `dataset: 1,000,000 samples` is a size
	}
	if !word {
		f, ok := parseNumber(tok, n, neg)
		if !ok {
			// Out of range (1e400) or malformed: not a value, and no false Inf alarm.
			return value{}, false
		}
		v.v = f
	}
	if v.ratio {
		v.num = v.v
	}
	v.end = end
	return v, true
}

// isTableUnit reports whether u is one of units (a constant string).
func isTableUnit(u string) bool {
	for _, t := range units {
		if u == t {
			return true
		}
	}
	return false
}

// countsThings reports whether the word after a number at i (past one space) says
// what it counts: `1,000,000 samples`, `200 steps`.
func countsThings(s string, i int) bool {
	if i >= len(s) || s[i] != ' ' {
		return false
	}
	i++
	j := i
	for j < len(s) && isLetter(s[j]) && j-i < 12 {
		j++
	}
	if j == i {
		return false
	}
	if j < len(s) {
		switch s[j] {
		case ' ', ',', ';', '.', ')', '|':
		default:
			return false
		}
	}
	var b [12]byte
	lw, _ := appendLower(b[:0], s[i:j])
	return settingWords[string(lw)]
}

// unitEnds reports whether a unit may end at i: not inside a longer word.
func unitEnds(s string, i int) bool {
	return i >= len(s) || !isLetter(s[i]) && !isDigit(s[i]) && s[i] != '_'
}

// thousands reads digits grouped by commas starting at i (the first group ending at
// end, where a comma is): 1,234 or 12,345,678.9. It appends the digits without commas
// to b.
func thousands(s string, i, end int, b []byte) ([]byte, int, bool) {
	if end-i > 3 || end == i {
		return nil, 0, false
	}
	b = append(b, s[i:end]...)
	j := end
	groups := 0
	for j+3 < len(s) && s[j] == ',' && isDigit(s[j+1]) && isDigit(s[j+2]) && isDigit(s[j+3]) && (j+4 >= len(s) || !isDigit(s[j+4])) {
		b = append(b, s[j+1:j+4]...)
		j += 4
		groups++
		if j-i > maxNumberLen {
			return nil, 0, false // as long as any number read: an id, not a value
		}
	}
	if groups == 0 {
		return nil, 0, false
	}
	if j+1 < len(s) && s[j] == '.' && isDigit(s[j+1]) {
		b = append(b, '.')
		j++
		for j < len(s) && isDigit(s[j]) && len(b) <= maxNumberLen {
			b = append(b, s[j])
			j++
		}
	}
	return b, j, true
}

// foldEqual reports whether the letters s are the lowercase word w in any case.
func foldEqual(s, w string) bool {
	if len(s) != len(w) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i]|0x20 != w[i] {
			return false
		}
	}
	return true
}

// boundary reports whether a number may end at i.
func boundary(s string, i int) bool {
	if i >= len(s) {
		return true
	}
	switch s[i] {
	case ' ', '\t', ';', '|', ')', ']', '}', '"', '\'', '\r', '\b':
		return true
	case ',', ':':
		// `1,000,000` and `12:00:00` are not values; `loss 2.3, lr` and `step 20: loss`
		// are.
		return i+1 >= len(s) || !isDigit(s[i+1])
	case '/':
		// DeepSpeed's `epoch=0/micro_step=10`.
		return i+1 < len(s) && isLetter(s[i+1])
	}
	return false
}

// add keeps a metric named by a lowercase name unless it is ignored or not among the
// chosen.
func (e *Extractor) add(p *Parsed, st *lineState, name []byte, v float64, unit string) {
	if unit != "" && !isTableUnit(unit) {
		unit = p.intern([]byte(unit)) // a unit in parentheses: a value must not pin its line
	}
	if w := e.words.lookup(name, headOf(name)); w.flags&flagConfigured != 0 {
		if w.kind == kindMetric {
			p.Samples = append(p.Samples, Sample{Name: w.name, Value: v, Unit: unit})
		}
		return
	}
	if len(name) > MaxNameLen || e.listed {
		return
	}
	sl := p.internSlot(name)
	if sl.verdict == 0 {
		sl.verdict = 1
		if _, rest := splitQualifier(name); hasIgnoredSuffix(rest) || isSetting(rest) {
			sl.verdict = 2
		}
	}
	if sl.verdict == 2 {
		return
	}
	p.Samples = append(p.Samples, Sample{Name: sl.name, Value: v, Unit: unit})
}

// hasIgnoredSuffix reports whether a name ends like an id.
func hasIgnoredSuffix(name []byte) bool {
	for _, suf := range ignoredSuffixes {
		if len(name) >= len(suf) && string(name[len(name)-len(suf):]) == suf {
			return true
		}
	}
	return false
}

// ignoredSuffixes mark ids: master_port, worker_pid, global_rank, job_id.
var ignoredSuffixes = []string{"_pid", "_port", "_rank", "_id", "_addr"}

// lookup is kept for the word table's users: the lowercase word and what it is.
func appendLower(b []byte, s string) ([]byte, uint64) {
	var head uint64
	n := len(b)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
		if i < 8 {
			head |= uint64(c) << (8 * i)
		}
	}
	if n > 0 {
		head = headOf(b)
	}
	return b, head
}
