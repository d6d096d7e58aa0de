// Package metrics turns the numbers in training logs into series: it extracts named
// values (loss, lr, grad_norm, tok/s) from the lines training scripts print, keeps them
// per rank in bounded memory, and raises alarms when a value is NaN or Inf or when one
// rank departs from the others. It needs no terminal: the CLI and the log wall both
// feed it sched.Line values and draw what it holds.
//
// # What is extracted
//
// A value is a number written right after a name: `loss 2.84`, `loss=2.84`,
// `loss: 2.84`, `'loss': 2.84` (Python dicts), `"loss": 2.84` (JSON lines), with any
// spaces around the `=` or `:`. Names are letters, digits and `_ . / -`, starting with a
// letter or `_` (so `tok/s` and `train.loss` are names). Numbers are decimal, with an
// optional sign, fraction and exponent (`6.3e-05`), or nan, inf, infinity. A number
// must end at a space, `,`, `;`, `|`, a closing bracket or quote, `%`, or `/` followed
// by digits (`step 20/1000`); `1,000,000` or `124.4M` are not values. A tqdm rate
// `20.00it/s` (or `s/it`) gives the metric `it/s` (or `s/it`). Names are lowercased. A
// name right after train, eval, val, valid, validation or test is joined to it:
// `eval loss 2.91` is `eval_loss`.
//
// torchrun's `[N]:` prefix (and `[NAME N]:`) gives the line's local rank. A line
// redrawn with `\r` (a progress bar) is read from its last drawing.
//
// The x axis is the step when the line names one (step, iter, it, global_step,
// iteration); a line that names none takes the last step its rank named (an eval loss
// printed after step 400 is at step 400); before any step, points only have a time.
//
// Names that are never metrics are dropped (pid, port, rank, world_size, seed, epoch,
// names ending in _pid, _port, _rank, _size, _id), so a process id or a rendezvous port
// neither clutters the table nor sets off an alarm.
//
// # Bounds
//
// Only the first MaxLineBytes of a line are read, at most MaxValuesPerLine values are
// taken from it, and a number longer than maxNumberLen characters (or one that
// overflows a float64) is not a value. User patterns are RE2 expressions, linear in the
// line's length. Work per line is therefore bounded whatever the line holds.
package metrics

import (
	"math"
	"strconv"
	"strings"
)

// Limits on the work done per line.
const (
	// MaxLineBytes is how much of a line is read: training lines are a few hundred
	// bytes; a JSON line of a few dozen metrics fits in 4 KiB.
	MaxLineBytes = 4 << 10
	// MaxValuesPerLine bounds the values taken from one line: a line with thousands of
	// numbers (a printed tensor) is data dumped, not metrics.
	MaxValuesPerLine = 64
	// maxNumberLen is the longest number token read: a float64 needs at most 24
	// characters; anything longer is an id, a hash or garbage.
	maxNumberLen = 40
	// MaxNameLen is the longest metric name.
	MaxNameLen = 64
)

// Sample is one named value read from a line.
type Sample struct {
	Name  string
	Value float64
}

// Parsed is what one line says: its values, the step it names, and torchrun's local
// rank when the line carries a `[N]:` prefix.
type Parsed struct {
	Samples []Sample
	// Step is the step the line names, when HasStep.
	Step    int64
	HasStep bool
	// Local is the local rank of torchrun's prefix, or -1.
	Local int
}

// Reset empties p for reuse, keeping its buffer.
func (p *Parsed) Reset() {
	p.Samples = p.Samples[:0]
	p.Step, p.HasStep, p.Local = 0, false, -1
}

// Extractor reads values from lines as a Config says. It keeps no state between lines
// and may be shared by goroutines.
type Extractor struct {
	cfg    Config
	only   map[string]bool
	ignore map[string]bool
	// words says at once what a known word is: a step key, an ignored name or a
	// metric (with its interned name). Read-only after NewExtractor.
	words map[string]wordInfo
}

type wordKind uint8

const (
	kindIgnore wordKind = iota
	kindStep
	kindMetric
)

type wordInfo struct {
	kind wordKind
	name string
}

// NewExtractor returns an extractor for cfg (see DefaultConfig).
func NewExtractor(cfg Config) *Extractor {
	e := &Extractor{cfg: cfg, ignore: map[string]bool{}, words: map[string]wordInfo{}}
	for _, n := range defaultIgnore {
		e.ignore[n] = true
	}
	for _, n := range cfg.Ignore {
		e.ignore[strings.ToLower(n)] = true
	}
	if len(cfg.Only) > 0 {
		e.only = map[string]bool{}
		for _, n := range cfg.Only {
			e.only[strings.ToLower(n)] = true
			delete(e.ignore, strings.ToLower(n))
		}
	}
	keys := cfg.StepKeys
	if len(keys) == 0 {
		keys = DefaultStepKeys
	}
	for _, n := range append(append([]string(nil), commonNames...), cfg.Only...) {
		n = strings.ToLower(n)
		if e.keep(n) {
			e.words[n] = wordInfo{kindMetric, n}
		} else {
			e.words[n] = wordInfo{kind: kindIgnore}
		}
	}
	for n := range e.ignore {
		e.words[n] = wordInfo{kind: kindIgnore}
	}
	for _, k := range keys {
		e.words[strings.ToLower(k)] = wordInfo{kind: kindStep}
	}
	return e
}

// Config returns the extractor's configuration.
func (e *Extractor) Config() Config { return e.cfg }

// DefaultStepKeys are the names that give a line's step.
var DefaultStepKeys = []string{"step", "global_step", "iter", "it", "iteration", "steps"}

// defaultIgnore are names whose numbers are not metrics.
var defaultIgnore = []string{
	"pid", "ppid", "port", "rank", "local_rank", "node_rank", "group_rank", "world_size",
	"local_world_size", "nproc", "nproc_per_node", "nnodes", "seed", "epoch", "epochs",
	"gpu", "gpus", "device", "cuda", "worker", "workers", "line", "version", "id",
	// torchrun's agent prints its configuration at LOGLEVEL=INFO.
	"min_nodes", "max_nodes", "max_restarts", "monitor_interval", "restart_count", "timeout",
	"elapsed", "role_world_size", "group_world_size", "nnodes_min", "nnodes_max",
	"attempt", "restart", "restarts", "done", "exitcode", "exit_code", "code", "errno", "signal",
}

// ignoredSuffixes mark ids and sizes: master_port, worker_pid, global_rank,
// batch_size, job_id.
var ignoredSuffixes = []string{"_pid", "_port", "_rank", "_size", "_id", "_addr"}

// stopWords are words that precede numbers in prose, never metrics when only a space
// separates them from the number: "create 8 workers", "is 4", "of 10".
var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "is": true, "are": true, "was": true, "were": true,
	"be": true, "of": true, "to": true, "in": true, "on": true, "at": true, "by": true,
	"for": true, "with": true, "from": true, "than": true, "and": true, "or": true,
	"into": true, "over": true, "after": true, "before": true, "every": true, "each": true,
	"all": true, "only": true, "about": true, "per": true, "use": true, "using": true,
	"create": true, "created": true, "has": true, "have": true, "had": true, "got": true,
	"found": true, "expected": true, "received": true, "took": true, "takes": true,
	"max": true, "min": true, "total": true, "last": true, "first": true, "top": true,
	"x": true, "line": true, "see": true, "version": true, "python": true,
}

// qualifiers are words joined to the name that follows them.
var qualifiers = map[string]bool{
	"train": true, "training": true, "eval": true, "val": true, "valid": true,
	"validation": true, "test": true,
}

// commonNames are interned so that extracting them allocates nothing.
var commonNames = []string{
	"loss", "lr", "grad_norm", "tok/s", "it/s", "s/it", "eval_loss", "train_loss",
	"val_loss", "test_loss", "learning_rate", "accuracy", "acc", "ppl", "perplexity",
	"throughput", "samples/s", "mfu", "step_time", "data_time", "time", "memory", "mem",
}

// Extract reads the values of one line into p (which it resets first).
func (e *Extractor) Extract(text string, p *Parsed) {
	p.Reset()
	if len(text) > MaxLineBytes {
		text = text[:MaxLineBytes]
	}
	// A progress bar redrawn with \r: its last drawing holds the latest values.
	if strings.IndexByte(text, '\r') >= 0 {
		text = strings.TrimRight(text, "\r")
		if i := strings.LastIndexByte(text, '\r'); i >= 0 {
			text = text[i+1:]
		}
	}
	text, p.Local = localRank(text)
	e.scan(text, p)
	for i := range e.cfg.Patterns {
		if len(p.Samples) >= MaxValuesPerLine {
			break
		}
		e.cfg.Patterns[i].extract(text, p)
	}
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

func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }
func isNameStart(c byte) bool {
	return isLetter(c) || c == '_'
}
func isNameChar(c byte) bool {
	return isLetter(c) || isDigit(c) || c == '_' || c == '.' || c == '/' || c == '-'
}

// scan reads `name value` pairs from s.
func (e *Extractor) scan(s string, p *Parsed) {
	prev := "" // the name word just before this one, for qualifiers
	prevEnd := -1
	// Prose has numbers after words too ("will create 8 worker processes"): a line
	// whose only pair is `name value`, with no = or :, is not taken.
	pairs, spacedOnly := 0, true
	defer func() {
		if pairs == 1 && spacedOnly {
			p.Samples = p.Samples[:0]
			p.HasStep = false
		}
	}()
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case isNameStart(c):
			j := i + 1
			for j < len(s) && isNameChar(s[j]) {
				j++
			}
			wend := j
			for wend > i+1 && (s[wend-1] == '.' || s[wend-1] == '-' || s[wend-1] == '/') {
				wend--
			}
			word := s[i:wend]
			if v, vend, spaced, ok := valueAfter(s, wend); ok {
				if spaced && len(word) <= 8 && stopWords[lower(word)] {
					prev, prevEnd = "", -1
					i = vend
					continue
				}
				pairs++
				spacedOnly = spacedOnly && spaced
				e.emit(p, prev, prevEnd, i, word, v)
				if len(p.Samples) >= MaxValuesPerLine {
					return
				}
				prev, prevEnd = "", -1
				i = vend
				continue
			}
			// Only a word followed by one space can qualify the next name.
			prev, prevEnd = "", -1
			if wend == j && j < len(s) && s[j] == ' ' {
				prev, prevEnd = word, wend
			}
			i = j
		case isDigit(c) || c == '.' && i+1 < len(s) && isDigit(s[i+1]):
			// A number with no name: skip all of it (so the e of 1e-4 is not a name),
			// taking a tqdm rate `20.00it/s` on the way.
			j := skipNumber(s, i)
			if rest := s[j:]; strings.HasPrefix(rest, "it/s") || strings.HasPrefix(rest, "s/it") {
				if boundary(s, j+4) {
					if v, err := strconv.ParseFloat(s[i:j], 64); err == nil && j-i <= maxNumberLen {
						pairs, spacedOnly = pairs+1, false
						e.add(p, rest[:4], v)
						if len(p.Samples) >= MaxValuesPerLine {
							return
						}
					}
				}
				j += 4
			}
			for j < len(s) && isNameChar(s[j]) {
				j++
			}
			prev, prevEnd = "", -1
			i = j
		default:
			i++
		}
	}
}

// skipNumber returns the end of the digits, dots and exponent starting at i.
func skipNumber(s string, i int) int {
	j := i
	for j < len(s) && (isDigit(s[j]) || s[j] == '.') {
		j++
	}
	if j < len(s) && s[j]|0x20 == 'e' {
		k := j + 1
		if k < len(s) && (s[k] == '-' || s[k] == '+') {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			j = k
			for j < len(s) && isDigit(s[j]) {
				j++
			}
		}
	}
	return j
}

// valueAfter reads the value that follows a name ending at i: optional closing quote,
// spaces, at most one `=` or `:`, spaces, an optional opening quote, then a number
// that ends at a boundary. It returns the value, where it ends, and whether only
// spaces separated it from an unquoted name.
func valueAfter(s string, i int) (v float64, end int, spaced, ok bool) {
	quoted := i < len(s) && (s[i] == '"' || s[i] == '\'')
	if quoted {
		i++
	}
	sp := i
	for i < len(s) && s[i] == ' ' {
		i++
	}
	seps := 0
	if i < len(s) && (s[i] == '=' || s[i] == ':') {
		colon := s[i] == ':'
		i++
		seps++
		// `name:123` is a file and line (train.py:42) or a host and port; a value
		// after a colon needs a space, or a quoted name (compact JSON).
		if colon && !quoted && (i >= len(s) || s[i] != ' ') {
			return 0, 0, false, false
		}
		for i < len(s) && s[i] == ' ' {
			i++
		}
	}
	if seps == 0 && i == sp {
		return 0, 0, false, false // `loss2` is a name, not loss=2
	}
	if i < len(s) && (s[i] == '"' || s[i] == '\'') {
		i++
	}
	start := i
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	end = 0
	switch {
	case i < len(s) && (isDigit(s[i]) || s[i] == '.' && i+1 < len(s) && isDigit(s[i+1])):
		end = skipNumber(s, i)
	case i+3 <= len(s) && isLetter(s[i]):
		w := i
		for w < len(s) && isLetter(s[w]) && w-i < 9 {
			w++
		}
		switch strings.ToLower(s[i:w]) {
		case "nan", "inf", "infinity":
			end = w
		default:
			return 0, 0, false, false
		}
	default:
		return 0, 0, false, false
	}
	if end-start > maxNumberLen {
		return 0, 0, false, false
	}
	tok := s[start:end]
	// `step 20/1000`: the value is the count done; skip the total.
	if end+1 < len(s) && s[end] == '/' && isDigit(s[end+1]) {
		end++
		for end < len(s) && isDigit(s[end]) {
			end++
		}
	}
	if end < len(s) && s[end] == '%' {
		end++
	}
	if end < len(s) && (s[end] == '"' || s[end] == '\'') {
		end++
	}
	if !boundary(s, end) {
		return 0, 0, false, false
	}
	v, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		// Out of range (1e400) or malformed: not a value, and no false Inf alarm.
		return 0, 0, false, false
	}
	return v, end, seps == 0 && !quoted, true
}

// boundary reports whether a number may end at i.
func boundary(s string, i int) bool {
	if i >= len(s) {
		return true
	}
	switch s[i] {
	case ' ', '\t', ';', '|', ')', ']', '}', '"', '\'', '\r':
		return true
	case ',', ':':
		// `1,000,000` and `12:00:00` are not values; `loss 2.3, lr` and `step 20: loss`
		// are.
		return i+1 >= len(s) || !isDigit(s[i+1])
	}
	return false
}

// emit takes a name = value pair: a step, or a metric (joined to a qualifier written
// just before it).
func (e *Extractor) emit(p *Parsed, prev string, prevEnd, start int, word string, v float64) {
	lw := lower(word)
	info, known := e.words[lw]
	if known && info.kind == kindStep {
		if !p.HasStep && v >= 0 && v < 1<<53 && v == math.Trunc(v) {
			p.Step, p.HasStep = int64(v), true
		}
		return
	}
	if known && info.kind == kindIgnore {
		return // "training done: 1200" is not training_done
	}
	if prev != "" && prevEnd == start-1 && len(prev) <= 16 && qualifiers[lower(prev)] {
		var buf [MaxNameLen]byte
		if len(prev)+1+len(lw) <= len(buf) {
			key := append(append(append(buf[:0], lower(prev)...), '_'), lw...)
			if q, ok := e.words[string(key)]; ok { // no allocation for a lookup
				e.addKnown(p, q, v)
				return
			}
			e.add(p, string(key), v)
		}
		return
	}
	if known {
		e.addKnown(p, info, v)
		return
	}
	e.add(p, lw, v)
}

func (e *Extractor) addKnown(p *Parsed, w wordInfo, v float64) {
	if w.kind == kindMetric {
		p.Samples = append(p.Samples, Sample{Name: w.name, Value: v})
	}
}

// lower lowercases ASCII, allocating only when s has an upper-case letter.
func lower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

// add keeps a metric unless it is ignored or not among the chosen.
func (e *Extractor) add(p *Parsed, name string, v float64) {
	if len(name) > MaxNameLen {
		return
	}
	name = lower(name)
	if w, ok := e.words[name]; ok {
		e.addKnown(p, w, v)
		return
	}
	if !e.keep(name) {
		return
	}
	p.Samples = append(p.Samples, Sample{Name: strings.Clone(name), Value: v}) // do not pin the line
}

// keep reports whether a name is a metric under the configuration.
func (e *Extractor) keep(name string) bool {
	if e.only != nil {
		return e.only[name]
	}
	if e.ignore[name] {
		return false
	}
	for _, suf := range ignoredSuffixes {
		if strings.HasSuffix(name, suf) {
			return false
		}
	}
	return true
}
