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

	// names remembers recent names that are not words of the extractor's table
	// (eval_runtime, tokens_per_sec), so that a name read line after line is
	// allocated once: a value's name must not pin its line.
	names [nameCache]string
}

// nameCache is how many names a Parsed remembers: more than the unusual names of most
// lines.
const (
	nameCacheBits = 4
	nameCache     = 1 << nameCacheBits
)

// intern returns name as a string, the one it returned before when it can.
func (p *Parsed) intern(name []byte) string {
	k := hashWord(headOf(name), len(name)) >> (64 - nameCacheBits)
	if p.names[k] == string(name) {
		return p.names[k]
	}
	s := string(name)
	p.names[k] = s
	return s
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
}

// NewExtractor returns an extractor for cfg (see DefaultConfig).
func NewExtractor(cfg Config) *Extractor {
	ignore := map[string]bool{}
	for _, n := range defaultIgnore {
		ignore[n] = true
	}
	for _, n := range cfg.Ignore {
		ignore[strings.ToLower(n)] = true
	}
	var only map[string]bool
	if len(cfg.Only) > 0 {
		only = map[string]bool{}
		for _, n := range cfg.Only {
			only[strings.ToLower(n)] = true
			delete(ignore, strings.ToLower(n))
		}
	}
	keys := cfg.StepKeys
	if len(keys) == 0 {
		keys = DefaultStepKeys
	}
	words := map[string]wordInfo{}
	for _, n := range append(append([]string(nil), commonNames...), cfg.Only...) {
		n = strings.ToLower(n)
		if keep(n, only, ignore) {
			words[n] = wordInfo{name: n, kind: kindMetric}
		} else {
			words[n] = wordInfo{kind: kindIgnore}
		}
	}
	// Every listed and every ignored name is now a word: a name that is not one is
	// kept unless the metrics are listed or its suffix marks an id (see addUnknown).
	for n := range ignore {
		words[n] = wordInfo{kind: kindIgnore}
	}
	for _, k := range keys {
		words[strings.ToLower(k)] = wordInfo{kind: kindStep}
	}
	return &Extractor{cfg: cfg, words: newWordTable(words), listed: only != nil}
}

// keep reports whether a name is a metric under the configuration's lists.
func keep(name string, only, ignore map[string]bool) bool {
	if only != nil {
		return only[name]
	}
	return !ignore[name] && !hasIgnoredSuffix([]byte(name))
}

// hasIgnoredSuffix reports whether a name ends like an id or a size.
func hasIgnoredSuffix(name []byte) bool {
	for _, suf := range ignoredSuffixes {
		if len(name) >= len(suf) && string(name[len(name)-len(suf):]) == suf {
			return true
		}
	}
	return false
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
var stopWords = []string{
	"a", "an", "the", "is", "are", "was", "were", "be", "of", "to", "in", "on", "at", "by",
	"for", "with", "from", "than", "and", "or", "into", "over", "after", "before", "every",
	"each", "all", "only", "about", "per", "use", "using", "create", "created", "has",
	"have", "had", "got", "found", "expected", "received", "took", "takes", "max", "min",
	"total", "last", "first", "top", "x", "line", "see", "version", "python",
}

// qualifiers are words joined to the name that follows them.
var qualifiers = []string{"train", "training", "eval", "val", "valid", "validation", "test"}

// maxQualifierLen bounds the words looked up as qualifiers: none is longer.
const maxQualifierLen = 16

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

// Classes of bytes, in one table: the scan asks for each byte of a line.
const (
	cDigit     = 1 << iota // 0-9
	cLetter                // a-z A-Z
	cNameStart             // a letter or _
	cNameChar              // a letter, a digit or _ . / -
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
		}
	}
	return t
}()

func isDigit(c byte) bool    { return class[c]&cDigit != 0 }
func isLetter(c byte) bool   { return class[c]&cLetter != 0 }
func isNameChar(c byte) bool { return class[c]&cNameChar != 0 }

// scan reads `name value` pairs from s.
func (e *Extractor) scan(s string, p *Parsed) {
	// Prose has numbers after words too ("will create 8 worker processes"): a line
	// whose only pair is `name value`, with no = or :, is not taken.
	if pairs, spacedOnly := e.pairs(s, p); pairs == 1 && spacedOnly {
		p.Samples = p.Samples[:0]
		p.HasStep = false
	}
}

// pairs takes the `name value` pairs of s into p, and returns how many there were and
// whether only spaces separated their names from their values.
func (e *Extractor) pairs(s string, p *Parsed) (pairs int, spacedOnly bool) {
	spacedOnly = true
	prev := "" // the name word just before this one, for qualifiers
	prevEnd := -1
	var buf [MaxNameLen]byte // the lowercased name
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
			word := s[i:wend]
			if v, vend, spaced, ok := valueAfter(s, wend); ok {
				lw, info, fits := e.lookup(word, &buf)
				if spaced && info.flags&flagStop != 0 {
					prev, prevEnd = "", -1
					i = vend
					continue
				}
				pairs++
				spacedOnly = spacedOnly && spaced
				if fits {
					e.emit(p, prev, prevEnd, i, lw, info, v)
					if len(p.Samples) >= MaxValuesPerLine {
						return pairs, spacedOnly
					}
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
		case cl&cDigit != 0 || c == '.' && i+1 < len(s) && isDigit(s[i+1]):
			// A number with no name: skip all of it (so the e of 1e-4 is not a name),
			// taking a tqdm rate `20.00it/s` on the way.
			n := readNumber(s, i)
			j := n.end
			if rest := s[j:]; strings.HasPrefix(rest, "it/s") || strings.HasPrefix(rest, "s/it") {
				if boundary(s, j+4) && j-i <= maxNumberLen {
					if v, ok := parseNumber(s[i:j], n, false); ok {
						pairs, spacedOnly = pairs+1, false
						e.add(p, append(buf[:0], rest[:4]...), v)
						if len(p.Samples) >= MaxValuesPerLine {
							return pairs, spacedOnly
						}
					}
				}
				j += 4
			}
			for j < len(s) && class[s[j]]&cNameChar != 0 {
				j++
			}
			prev, prevEnd = "", -1
			i = j
		default:
			i++
		}
	}
	return pairs, spacedOnly
}

// lookup lowercases a name into buf and says what it is. fits is false for a name too
// long to be a metric or a word of the table: it gives nothing.
func (e *Extractor) lookup(word string, buf *[MaxNameLen]byte) (lw []byte, info wordInfo, fits bool) {
	if len(word) > len(buf) {
		if len(word) > e.words.maxLen {
			return nil, wordInfo{}, false
		}
		lw = make([]byte, 0, len(word)) // a configured name longer than MaxNameLen
	} else {
		lw = buf[:0]
	}
	lw, head := appendLower(lw, word)
	return lw, e.words.lookup(lw, head), true
}

// appendLower appends s lowercased (ASCII) to b, and returns the head of what it
// appended (see headOf).
func appendLower(b []byte, s string) ([]byte, uint64) {
	var head uint64
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
	return b, head
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
	neg := false
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	var n number
	switch {
	case i < len(s) && (isDigit(s[i]) || s[i] == '.' && i+1 < len(s) && isDigit(s[i+1])):
		n = readNumber(s, i)
		end = n.end
	case i+3 <= len(s) && (s[i]|0x20 == 'n' || s[i]|0x20 == 'i'):
		// nan, inf or infinity, in any case, as a word of its own.
		w := i
		for w < len(s) && isLetter(s[w]) && w-i < 9 {
			w++
		}
		if !foldEqual(s[i:w], "nan") && !foldEqual(s[i:w], "inf") && !foldEqual(s[i:w], "infinity") {
			return 0, 0, false, false
		}
		end = w
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
	v, ok = parseNumber(tok, n, neg)
	if !ok {
		// Out of range (1e400) or malformed: not a value, and no false Inf alarm.
		return 0, 0, false, false
	}
	return v, end, seps == 0 && !quoted, true
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
	case ' ', '\t', ';', '|', ')', ']', '}', '"', '\'', '\r':
		return true
	case ',', ':':
		// `1,000,000` and `12:00:00` are not values; `loss 2.3, lr` and `step 20: loss`
		// are.
		return i+1 >= len(s) || !isDigit(s[i+1])
	}
	return false
}

// emit takes a name = value pair, its name lowercased (lw) and looked up (info): a
// step, or a metric (joined to a qualifier written just before it).
func (e *Extractor) emit(p *Parsed, prev string, prevEnd, start int, lw []byte, info wordInfo, v float64) {
	configured := info.flags&flagConfigured != 0
	if configured && info.kind == kindStep {
		if !p.HasStep && v >= 0 && v < 1<<53 && v == math.Trunc(v) {
			p.Step, p.HasStep = int64(v), true
		}
		return
	}
	if configured && info.kind == kindIgnore {
		return // "training done: 1200" is not training_done
	}
	if prev != "" && prevEnd == start-1 && len(prev) <= maxQualifierLen {
		var pb [maxQualifierLen]byte
		lp, head := appendLower(pb[:0], prev)
		if e.words.lookup(lp, head).flags&flagQualifier != 0 {
			var kb [MaxNameLen]byte
			if len(lp)+1+len(lw) <= len(kb) {
				key := append(append(append(kb[:0], lp...), '_'), lw...)
				if q := e.words.lookup(key, headOf(key)); q.flags&flagConfigured != 0 {
					if q.kind == kindMetric {
						p.Samples = append(p.Samples, Sample{Name: q.name, Value: v})
					}
					return
				}
				e.addUnknown(p, key, v)
			}
			return
		}
	}
	if configured {
		p.Samples = append(p.Samples, Sample{Name: info.name, Value: v})
		return
	}
	e.addUnknown(p, lw, v)
}

// add keeps a metric named by a lowercase name unless it is ignored or not among the
// chosen.
func (e *Extractor) add(p *Parsed, name []byte, v float64) {
	if w := e.words.lookup(name, headOf(name)); w.flags&flagConfigured != 0 {
		if w.kind == kindMetric {
			p.Samples = append(p.Samples, Sample{Name: w.name, Value: v})
		}
		return
	}
	e.addUnknown(p, name, v)
}

// addUnknown keeps a metric whose lowercase name is not a word of the table: every
// listed or ignored name is one, so it is kept unless the metrics are listed or its
// suffix marks an id or a size.
func (e *Extractor) addUnknown(p *Parsed, name []byte, v float64) {
	if len(name) > MaxNameLen || e.listed || hasIgnoredSuffix(name) {
		return
	}
	p.Samples = append(p.Samples, Sample{Name: p.intern(name), Value: v})
}
