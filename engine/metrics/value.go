package metrics

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
)

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
	if strings.IndexByte(s[k:min(len(s), k+maxRateLen)], '/') < 0 {
		return "", j // every rate has a slash: most words after a number are none
	}
	for _, r := range rateTabs().by[s[k]|0x20] {
		if strings.HasPrefix(s[k:], r) && boundary(s, k+len(r)) {
			if k > j && (r == "it/s" || r == "s/it") {
				continue // tqdm writes these against the number
			}
			if k == j && !tightRates[r] {
				continue // the others are written after a space (DLRM's `31.57 ms/it`)
			}
			return r, k + len(r)
		}
	}
	return "", j
}

// rates are the units of rates: a count of what training goes through a second
// (`tok/s`, `samples/sec`) or a time per one of them (`s/it`, `ms/it`), longest first.
func rates() []string {
	counted := []string{"it", "iter", "iters", "step", "steps", "batch", "batches", "sample", "samples",
		"img", "imgs", "images", "tok", "tokens", "words", "examples", "seq", "seqs", "epoch"}
	var r []string
	for _, c := range counted {
		r = append(r, c+"/s", c+"/sec", "s/"+c, "ms/"+c, "sec/"+c)
	}
	slices.SortStableFunc(r, func(a, b string) int { return len(b) - len(a) })
	return r
}

// tightRates are the rates read against their number too (tqdm's `20.00it/s`).
var tightRates = map[string]bool{"it/s": true, "s/it": true, "iter/s": true, "tok/s": true, "tokens/s": true, "samples/s": true, "img/s": true, "words/s": true}

// maxRateLen is the length of the longest rate.
const maxRateLen = len("examples/sec")

// rateTables are the rates as the scan looks them up.
type rateTables struct {
	// by are the rates by their first letter, longest first.
	by [256][]string
	// names are the rates as the names add looks up.
	names map[string][]byte
}

// rateTabs are built at first use, not at every wick's start: 90 rates, each made
// of two strings, were most of this package's initialisation (240 allocations), which
// every verb and supervisor paid, extracting metrics or not.
var rateTabs = sync.OnceValue(func() *rateTables {
	t := &rateTables{names: map[string][]byte{}}
	for _, r := range rates() {
		t.by[r[0]] = append(t.by[r[0]], r)
		t.names[r] = []byte(r)
	}
	return t
})

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
	// integer is whether the number was written without a point or an exponent: a
	// count (HF's `'epoch': 1.0` is a fraction of the way, not the epoch's count).
	integer bool
	// quotedName is whether the name was quoted (a dict's or JSON's key).
	quotedName bool
	// numpy is whether the value is written as a NumPy scalar's repr in a list
	// (`[np.float32(0.71)]`): its closing parenthesis follows the number.
	numpy bool
	// tuple is whether the value is a Python tuple's one element (`(1e-04,)`).
	tuple bool
	// torch is whether the value is written as a torch tensor's repr (`tensor(5.98,
	// device='cuda:0', grad_fn=<NllLossBackward0>)`, an f-string of a 0-dim tensor).
	torch bool
	// alt is the value of a second name written in parentheses after the first
	// (`time (data): 0.191 (0.002)`), s[altStart:altEnd]; altEnd is 0 when none.
	alt              float64
	altStart, altEnd int
}

// units are the units kept with a value, longest first of each letter (GPT-NeoX's
// `112.3TFLOPS` is a throughput in TFLOPS, not 112.3 T).
var units = []string{"EFLOPS", "PFLOPS", "TFLOPS", "GFLOPS", "MFLOPS", "KFLOPS", "FLOPS", "GiB", "MiB", "KiB", "TiB", "GB", "MB", "KB", "TB", "Gb", "Mb", "Kb", "ms", "us", "µs", "ns", "min", "s", "h", "G", "M", "K", "k", "B", "T", "%"}

// scaled reads a human-format suffix (nanotron's `524K`, `1.05M`, `3.4B`): K, M, B (G)
// and T multiply the value, for a metric that is not a memory's (Detectron2's
// `max_mem: 2345M`, Ultralytics' `3.21G` are sizes in those units, kept as written).
func scaled(name string, v float64, unit string) (float64, string) {
	if len(unit) != 1 || isMemory(name) {
		return v, unit
	}
	switch unit[0] {
	case 'K', 'k':
		return v * 1e3, ""
	case 'M':
		return v * 1e6, ""
	case 'B', 'G':
		return v * 1e9, ""
	case 'T':
		return v * 1e12, ""
	}
	return v, unit
}

// isMemory reports whether a metric's name says it is a memory's size.
func isMemory(name string) bool {
	return strings.Contains(name, "mem") || strings.Contains(name, "cache") || strings.Contains(name, "alloc") || strings.Contains(name, "reserved")
}

// valueAfter reads the value that follows a name ending at i: optional closing quote,
// spaces, at most one `=` or `:`, spaces, an optional opening quote or bracket, then a
// number, a total, a unit and a remark in parentheses, ending at a boundary.
// It fills v, which must be zero, and reports whether a value was read: v is
// not copied through the readers, as they run for most words of a line.
func valueAfter(s string, i int, v *value) bool {
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
	if i > sp && i+1 < len(s) && s[i] == '|' && s[i+1] == ' ' && s[0] == '|' && strings.IndexByte(s[1:sp], '|') < 0 {
		v.sep = ':' // Stable-Baselines3's table: `|    loss      | 7.29     |`
		i++
		for i < len(s) && s[i] == ' ' {
			i++
		}
		return readValue(s, i, v, false)
	}
	if i < len(s) && (s[i] == '=' || s[i] == ':') {
		v.sep = s[i]
		i++
		tight = v.sep == ':' && !quoted && (i >= len(s) || s[i] != ' ')
		for i < len(s) && s[i] == ' ' {
			i++
		}
	}
	if v.sep == ' ' && i == sp+1 && dashPair(s, i) {
		// segmentation_models.pytorch's bar postfix `dice_loss - 0.4361, iou_score - 0.4527]`:
		// a name, a dash between spaces, a number that ends its field.
		v.sep = ':'
		i += 2
	}
	if v.sep == ' ' && i == sp {
		return false // `loss2` is a name, not loss=2
	}
	if v.sep == ' ' && quoted {
		return false
	}
	return readValue(s, i, v, tight)
}

// dashPair reports whether s[i:] is `- N` with N a number that ends a field: a comma,
// a closing bracket or the end of the line after it.
func dashPair(s string, i int) bool {
	if i+2 >= len(s) || s[i] != '-' || s[i+1] != ' ' || !isDigit(s[i+2]) {
		return false
	}
	k := i + 2
	for k < len(s) && (isDigit(s[k]) || s[k] == '.' || s[k] == 'e' || s[k] == '-' || s[k] == '+') && k-i < 32 {
		k++
	}
	return k == len(s) || s[k] == ',' || s[k] == ']'
}

// parenName returns where a name's part in parentheses written against it ends (GAN
// tutorials' `D(x)`, `D(G(z))`), or i when s[i] begins none: a word, or nested
// parentheses of words, that is not a unit (`memory(GiB)` is memory in GiB).
func parenName(s string, i int) int {
	if i >= len(s) || s[i] != '(' {
		return i
	}
	depth, j := 0, i
	for ; j < len(s) && j-i <= maxParenName; j++ {
		switch c := s[j]; {
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				if j == i+1 || isUnit(s[i+1:j]) {
					return i
				}
				return j + 1
			}
		case !isNameChar(c):
			return i
		}
	}
	return i
}

// maxParenName bounds a name's part in parentheses.
const maxParenName = 16

// isUnit reports whether u is a unit a value is written in: one of units, or a time's.
func isUnit(u string) bool {
	for _, x := range units {
		if u == x {
			return true
		}
	}
	switch u {
	case "sec", "secs", "seconds", "mins", "minutes", "hours", "days", "t":
		return true
	}
	return false
}

// nameValue reads into v (zero) the value after a name ending at i: valueAfter, else
// after a part of the name in parentheses written against it when the name is whole
// there (parenName: `D(G(z)): 0.58`), else after a unit in parentheses (`time (ms):
// 12.5`, `memory(GiB): 3.1`). It returns where the name ends.
func nameValue(s string, i int, whole bool, v *value) (int, bool) {
	if s[i] == '(' && whole {
		if k := parenName(s, i); k > i {
			if valueAfter(s, k, v) {
				return k, true
			}
			*v = value{}
		}
	}
	return i, valueAfter(s, i, v) || unitThenValue(s, i, v)
}

// spelled reads a duration's unit written in words after v (see spelledDuration): it
// takes seconds as v's unit, and reports whether v is no value (a longer unit).
func (v *value) spelled(s string) bool {
	if v.unit != "" || v.sep == ' ' || v.end+2 >= len(s) || s[v.end] != ' ' {
		return false
	}
	switch s[v.end+1] {
	case 's', 'm', 'h', 'd', 'w':
	default:
		return false
	}
	switch spelledDuration(s, v.end) {
	case "s":
		v.unit = "s"
	case "-":
		return true // `2 minutes and 34.41 seconds`
	}
	return false
}

// unitThenValue reads `NAME (unit): value` or `NAME(unit)=value` after a name ending
// at i into v. `(t)` is no unit (OpenCLIP's `Data (t): 0.021`: a time in no unit said).
func unitThenValue(s string, i int, v *value) bool {
	j := i
	if j < len(s) && s[j] == ' ' {
		j++
	}
	if j >= len(s) || s[j] != '(' {
		return false
	}
	k := strings.IndexByte(s[j:min(len(s), j+maxUnitLen+2)], ')')
	if k < 2 {
		return false
	}
	unit := s[j+1 : j+k]
	if unit == "t" {
		return false
	}
	second := !isUnit(unit) && isLetter(unit[0]) && strings.ToLower(unit) == unit && len(unit) > 3
	altStart := j + 1
	for x := 0; x < len(unit); x++ {
		if c := unit[x]; !isNameChar(c) && c != '%' {
			return false
		}
	}
	j += k + 1
	if j >= len(s) || s[j] != ':' && s[j] != '=' {
		return false
	}
	*v = value{sep: s[j]}
	j++
	for j < len(s) && s[j] == ' ' {
		j++
	}
	ok := readValue(s, j, v, false)
	if ok && second {
		// BasicSR's `time (data): 0.191 (0.002)`: a second name in parentheses, its
		// value in parentheses after the first's.
		e := v.end
		if e+2 < len(s) && s[e] == ' ' && s[e+1] == '(' {
			var w value
			if readValue(s, e+2, &w, false) && w.end < len(s) && s[w.end] == ')' {
				v.alt, v.altStart, v.altEnd, v.end = w.v, altStart, altStart+len(unit), w.end+1
				return true
			}
		}
		return false
	}
	if ok && v.unit == "" {
		v.unit = unit
	}
	return ok
}

// readValue reads the number at s[i] and what follows it into v (see valueAfter). It
// runs for most words of a line, and most values are a number and a boundary: what
// is rarer (nan and inf, thousands, a total, a unit, a remark, a closing bracket or
// quote) is read by functions it calls only when the bytes ask for them.
func readValue(s string, i int, v *value, tight bool) bool {
	i, list := v.opening(s, i)
	start := i
	i, neg := pastSign(s, i)
	n, f, end, word, ok := numberAt(s, i, neg)
	if !ok {
		return false
	}
	if word {
		v.v = f
	}
	if end-start > maxNumberLen {
		return false
	}
	tok := s[start:end]
	if !word && !n.point && !neg && mayBeInParts(s, start, end) {
		// A duration in parts (StyleGAN's `time 1m 03s`, `2d 03h 04m`): seconds.
		if secs, dend, ok := partsDuration(s, i); ok {
			v.v, v.unit, v.integer, v.end = secs, "s", false, dend
			return true
		}
	}
	if !word && end < len(s) && s[end] == ',' {
		f, gend, found, ok := groupedValue(s, i, end, neg)
		if !ok {
			return false
		}
		if found {
			v.v, end, word = f, gend, true
		}
	}
	integer := !word && !n.point
	if tight && integer {
		return false // train.py:42, localhost:29500
	}
	if list || end < len(s) && leadsSuffix(s[end]) {
		var ok bool
		if end, ok = v.suffix(s, end, integer, list); !ok {
			return false
		}
	}
	if deviationAt(s, end) {
		end = pastDeviation(s, end)
	}
	if !endsValue(s, end, n.point) {
		return false
	}
	end = v.unitAfterSpace(s, end, list)
	if v.listFollows(s, end, list) {
		return false
	}
	if !word {
		f, ok := parseNumber(tok, n, neg)
		if !ok {
			// Out of range (1e400) or malformed: not a value, and no false Inf alarm.
			return false
		}
		v.v = f
	}
	if v.ratio {
		v.num = v.v
	}
	v.integer = integer
	v.end = end
	return true
}

// pastSign returns where the number at s[i] starts after its sign, if any, and whether
// the sign is a minus.
func pastSign(s string, i int) (int, bool) {
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		return i + 1, s[i] == '-'
	}
	return i, false
}

// listFollows reports whether a value read after a separator other than a space and
// not in brackets (list) ends at end before two more numbers: mmcv's
// `bbox_mAP_copypaste: 0.214 0.387 0.217 ...` is a list, not one value.
func (v *value) listFollows(s string, end int, list bool) bool {
	return v.sep != ' ' && !list && numbersAfter(s, end) >= 2
}

// mayBeInParts reports whether the whole number s[start:end] may begin a duration
// in parts: a day, hour or minute letter follows it, and no quote opens it.
func mayBeInParts(s string, start, end int) bool {
	if end >= len(s) || s[end] != 'd' && s[end] != 'h' && s[end] != 'm' {
		return false
	}
	return start == 0 || s[start-1] != '"' && s[start-1] != '\''
}

// deviationAt reports whether a deviation's sign (`+-` or `±`) is at s[end], with a
// byte after it. It is the cheap test, inlined, before pastDeviation.
func deviationAt(s string, end int) bool {
	return end+2 < len(s) && (s[end] == '+' && s[end+1] == '-' || s[end] == 0xc2 && s[end+1] == 0xb1)
}

// pastDeviation returns where a value's deviation, whose sign is at s[end], ends
// (InsightFace's `Accuracy-Flip: 0.96517+-0.00887`, `0.95±0.01`: the value is the
// first number), or end when no number follows the sign.
func pastDeviation(s string, end int) int {
	if !startsNumber(s, end+2) {
		return end
	}
	return readNumber(s, end+2).end
}

// endsValue reports whether a value may end at end: a boundary follows, and a whole
// number is not a count of the things named after it (`dataset: 1,000,000 samples` is
// a size; WeNet's `grad_norm 412.51 rank 0` counts no ranks).
func endsValue(s string, end int, point bool) bool {
	return boundary(s, end) && (point || !countsThings(s, end))
}

// numberAt reads the number at s[i], after its sign (neg): its digits (n, ending at
// end) or a word for nan or inf (word, its value f). ok is false when s[i] begins
// neither.
func numberAt(s string, i int, neg bool) (n number, f float64, end int, word, ok bool) {
	switch {
	case startsNumber(s, i):
		n = readNumber(s, i)
		if n.end-1 > i && s[n.end-1] == '.' && (n.end == len(s) || s[n.end] == ' ') {
			// A sentence's full stop after the number (MLX's `Test ppl 4.166.`).
			n = readNumber(s[:n.end-1], i)
		}
		return n, 0, n.end, false, true
	case mayBeNonFinite(s, i):
		f, end, ok = nonFinite(s, i, neg)
		return n, f, end, ok, ok
	}
	return n, 0, 0, false, false
}

// unitAfterSpace reads into v a unit one space after a number that ends at end
// (litgpt's `iter time: 412.31 ms`, `54 %`) when v has none yet and the number is not
// in a list, and returns where the value then ends.
func (v *value) unitAfterSpace(s string, end int, list bool) int {
	if v.unit != "" || list || end+1 >= len(s) || s[end] != ' ' {
		return end
	}
	if c := s[end+1]; c != 'm' && c != 's' && c != '%' {
		return end
	}
	if u, e := spacedUnit(s, end+1); u != "" {
		v.unit, end = u, e
		if u == "seconds" || u == "sec" {
			v.unit = "s" // Darknet's `Loaded: 0.000046 seconds`, CycleGAN's `412 sec`
		}
	}
	return end
}

// opening skips the opening quote of a value at s[i], and after a separator the
// bracket of a list (DeepSpeed's lr=[0.001]): it returns where the number starts, and
// whether it is in a list.
func (v *value) opening(s string, i int) (int, bool) {
	if i < len(s) && (s[i] == '"' || s[i] == '\'') {
		i++
	}
	if i < len(s) && s[i] == '[' && (v.sep != ' ' || numpyScalar(s, i+1) > 0) {
		if b := bracketCounter(s, i); b.end > i && b.step >= 0 {
			return i, false // Swin's `Test: [0/49]`: a counter of a total, no list's value
		}
		i++
		if k := numpyScalar(s, i); k > 0 {
			v.numpy = true
			return k, true
		}
		return i, true
	}
	if i+8 < len(s) && s[i] == 't' && strings.HasPrefix(s[i:], "tensor(") && (startsNumber(s, i+7) || s[i+7] == '-') {
		v.torch = true // SimCLR's `Loss: tensor(5.9812, device='cuda:0', grad_fn=...)`
		return i + 7, true
	}
	if i+1 < len(s) && s[i] == '(' && v.sep != ' ' && startsNumber(s, i+1) {
		v.tuple = true // BasicSR's `lr:(1.000e-04,)`: a tuple of one value
		return i + 1, true
	}
	return i, false
}

// numpyScalar returns where the number of a NumPy 2 scalar's repr written at s[i]
// begins (`np.float32(` of `[np.float32(0.7123)]`, as nnU-Net prints a list of them),
// 0 when none is.
func numpyScalar(s string, i int) int {
	if !strings.HasPrefix(s[i:], "np.") {
		return 0
	}
	j := i + 3
	for j < len(s) && j-i < 16 && (isLetter(s[j]) || isDigit(s[j]) || s[j] == '_') {
		j++
	}
	if j == i+3 || j >= len(s) || s[j] != '(' {
		return 0
	}
	return j + 1
}

// startsNumber reports whether a number's digits start at s[i]: a digit, or a point
// and a digit.
func startsNumber(s string, i int) bool {
	return i < len(s) && (isDigit(s[i]) || s[i] == '.' && i+1 < len(s) && isDigit(s[i+1]))
}

// mayBeNonFinite reports whether nan, inf or infinity may start at s[i].
func mayBeNonFinite(s string, i int) bool {
	return i+3 <= len(s) && (s[i]|0x20 == 'n' || s[i]|0x20 == 'i')
}

// nonFinite reads nan, inf or infinity at s[i], in any case, as a word of its own: the
// value (negative infinity when neg) and where the word ends.
func nonFinite(s string, i int, neg bool) (float64, int, bool) {
	w := i
	for w < len(s) && isLetter(s[w]) && w-i < 9 {
		w++
	}
	switch {
	case foldEqual(s[i:w], "nan"):
		return math.NaN(), w, true
	case foldEqual(s[i:w], "inf"), foldEqual(s[i:w], "infinity"):
		if neg {
			return math.Inf(-1), w, true
		}
		return math.Inf(1), w, true
	}
	return 0, w, false
}

// groupedValue reads a number with thousands separators (1,234 and 1,234,567.89) whose
// first group, after the sign, is s[i:end] (a comma at end): its value, negated when
// neg, and where it ends. found is false when the comma separates no thousands (the
// number is s[i:end]); ok is false when the digits are no float64.
func groupedValue(s string, i, end int, neg bool) (f float64, gend int, found, ok bool) {
	var grouped [maxNumberLen + 8]byte
	g, gend, found := thousands(s, i, end, grouped[:0])
	if !found {
		return 0, 0, false, true
	}
	f, err := strconv.ParseFloat(string(g), 64)
	if err != nil {
		return 0, 0, true, false
	}
	if neg {
		f = -f
	}
	return f, gend, true, true
}

// leadsSuffix reports whether c, right after a value's number, may start what suffix
// reads.
// partsDuration reads a duration written in parts from s[i] (dnnlib's format_time:
// `1m 03s`, `1h 02m 03s`, `2d 03h 04m`): two parts at least, one space apart, their
// units in order. It returns the seconds and where the duration ends.
func partsDuration(s string, i int) (secs float64, end int, ok bool) {
	last, parts := 5, 0
	for {
		j := i
		for j < len(s) && isDigit(s[j]) && j-i < 9 {
			j++
		}
		if j == i || j >= len(s) {
			return 0, 0, false
		}
		u := strings.IndexByte("smhd", s[j])
		if u < 0 || u >= last || j+1 < len(s) && isNameChar(s[j+1]) {
			return 0, 0, false
		}
		n, _ := strconv.Atoi(s[i:j])
		secs += float64(n) * [...]float64{1, 60, 3600, 86400}[u]
		last, end = u, j+1
		parts++
		if u == 0 || end+1 >= len(s) || s[end] != ' ' || !isDigit(s[end+1]) {
			break
		}
		i = end + 1
	}
	return secs, end, parts >= 2
}

func leadsSuffix(c byte) bool {
	return c == '/' || isLetter(c) || c == '%' || c == 0xc2 || c == '(' || c == '"' || c == '\''
}

// suffix reads what follows a value's number, which ends at end: a total, a unit, a
// remark in parentheses, the list's closing bracket when list, a closing quote. It
// returns where they end, and false when the remark or the list is not closed.
func (v *value) suffix(s string, end int, integer, list bool) (int, bool) {
	if end < len(s) && s[end] == '/' {
		end = v.readTotal(s, end, integer)
	}
	end = v.unitAgainst(s, end)
	if v.numpy {
		if end >= len(s) || s[end] != ')' {
			return end, false
		}
		end++ // the scalar's repr closes
	}
	end, ok := pastRemark(s, end)
	if !ok {
		return end, false
	}
	if list {
		if end, ok = v.closeList(s, end); !ok {
			return end, false
		}
	}
	if end < len(s) && (s[end] == '"' || s[end] == '\'') {
		end++
	}
	return end, true
}

// unitAgainst reads into v a unit of units against a number that ends at end
// (30.12ms, 25.1GiB, 98%) and returns where it ends, or end when none is there. A
// one-letter size unit is no unit when a slash follows it (`12M/s`).
func (v *value) unitAgainst(s string, end int) int {
	if end >= len(s) || !isLetter(s[end]) && s[end] != '%' && s[end] != 0xc2 {
		return end
	}
	for _, u := range units {
		if u[0] == s[end] && strings.HasPrefix(s[end:], u) && unitEnds(s, end+len(u)) && !sizeBeforeSlash(s, end, u) {
			v.unit = u
			return end + len(u)
		}
	}
	return end
}

// sizeBeforeSlash reports whether the unit u at s[end] is a single size letter that
// a slash follows.
func sizeBeforeSlash(s string, end int, u string) bool {
	return len(u) == 1 && strings.IndexByte("KkMBGT", u[0]) >= 0 && end+1 < len(s) && s[end+1] == '/'
}

// pastRemark returns where a remark in parentheses against a value at end ends
// (25.1GiB(31.7%)), or end when none opens there; false when it opens and does not
// close within 32 bytes.
func pastRemark(s string, end int) (int, bool) {
	if end >= len(s) || s[end] != '(' {
		return end, true
	}
	k := strings.IndexByte(s[end:min(len(s), end+32)], ')')
	if k < 0 {
		return end, false
	}
	return end + k + 1, true
}

// closeList returns where the list a value opened ends after its number and suffix
// at end: `,)` for a tuple, `]` for a list; false when it does not close there.
func (v *value) closeList(s string, end int) (int, bool) {
	if v.torch {
		// `)`, or the tensor's keywords then `)`: `, device='cuda:0', grad_fn=<...>)`
		if end < len(s) && s[end] == ',' {
			k := strings.IndexByte(s[end:min(len(s), end+maxTensorTail)], ')')
			if k < 0 {
				return end, false
			}
			end += k
		}
		if end >= len(s) || s[end] != ')' {
			return end, false
		}
		return end + 1, true
	}
	if v.tuple {
		if end+1 >= len(s) || s[end] != ',' || s[end+1] != ')' {
			return end, false
		}
		return end + 2, true
	}
	if end >= len(s) || s[end] != ']' {
		return end, false
	}
	return end + 1, true
}

// maxTensorTail bounds a tensor repr's keywords after its number.
const maxTensorTail = 96

// readTotal reads the total after a count's slash at end: `step 20/1000`, `iteration
// 10/  100000`, `9800/10000`. When the count is an integer and the total a positive
// whole number, v is a ratio of that total. It returns where the total ends (end when
// no number follows the slash).
func (v *value) readTotal(s string, end int, integer bool) int {
	k := end + 1
	for k < len(s) && s[k] == ' ' && k-end < 12 {
		k++
	}
	if k >= len(s) || !isDigit(s[k]) {
		return end
	}
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
	return k
}

// spacedUnits are the units read one space after a value: times and percentages.
var spacedUnits = []string{"ms", "seconds", "sec", "s", "%"}

// spacedUnit reads a unit of spacedUnits at s[i], a word of its own.
func spacedUnit(s string, i int) (string, int) {
	for _, u := range spacedUnits {
		if strings.HasPrefix(s[i:], u) && (unitEnds(s, i+len(u)) && (i+len(u) == len(s) || s[i+len(u)] != '/' && s[i+len(u)] != '.' && s[i+len(u)] != '-')) {
			return u, i + len(u)
		}
	}
	return "", i
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
	return settingWords[string(lw)] || string(lw) == "times" // Marian's `stalled 1 times`
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
	case '.':
		// A sentence's full stop (MLX's `Test ppl 4.166.`).
		return i+1 >= len(s) || s[i+1] == ' '
	}
	return false
}

// spelledUnits are the units of a duration written in words (humanfriendly's `2 minutes
// and 34.41 seconds`, ESPnet's epoch times).
var spelledUnits = [...]string{"second", "minute", "hour", "day", "week"}

// spelledDuration reads a duration's unit in words after the number ending at i: it
// returns "s" for seconds (`8.31 seconds` is 8.31s), "-" for a longer unit (a duration
// of several words is prose, not a value), "" for none.
func spelledDuration(s string, i int) string {
	if i+7 > len(s) || s[i] != ' ' {
		return ""
	}
	for k, u := range spelledUnits {
		if strings.HasPrefix(s[i+1:], u) {
			e := i + 1 + len(u)
			if e < len(s) && s[e] == 's' {
				e++
			}
			switch {
			case e < len(s) && isLetter(s[e]):
				return ""
			case k == 0:
				return "s"
			}
			return "-"
		}
	}
	return ""
}

// numbersAfter counts the numbers that follow s[i:] one space apart, up to 2: a value
// followed by two more bare numbers is the first of a list.
func numbersAfter(s string, i int) int {
	n := 0
	for n < 2 && i+1 < len(s) && s[i] == ' ' && startsNumber(s, i+1) {
		j := readNumber(s, i+1).end
		if j < len(s) && s[j] != ' ' {
			break
		}
		n++
		i = j
	}
	return n
}
