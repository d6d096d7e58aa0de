package metrics

import (
	"math"
	"strconv"
	"strings"
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
	switch s[k] {
	case 'i', 's', 't', 'w': // the first letters of rates
	default:
		return "", j
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

var rates = []string{"it/s", "s/it", "tok/s", "tokens/s", "samples/s", "img/s", "words/s"}

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
	// integer is whether the number was written without a point or an exponent: a
	// count (HF's `'epoch': 1.0` is a fraction of the way, not the epoch's count).
	integer bool
	// quotedName is whether the name was quoted (a dict's or JSON's key).
	quotedName bool
}

// units are the units kept with a value, longest first.
var units = []string{"GiB", "MiB", "KiB", "TiB", "GB", "MB", "KB", "TB", "Gb", "Mb", "Kb", "ms", "us", "µs", "ns", "min", "s", "h", "G", "M", "K", "k", "B", "T", "%"}

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
	if v.sep == ' ' && i == sp {
		return false // `loss2` is a name, not loss=2
	}
	if v.sep == ' ' && quoted {
		return false
	}
	return readValue(s, i, v, tight)
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
	neg := false
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	var n number
	var end int
	word := false
	switch {
	case startsNumber(s, i):
		n = readNumber(s, i)
		end = n.end
	case mayBeNonFinite(s, i):
		f, w, ok := nonFinite(s, i, neg)
		if !ok {
			return false
		}
		v.v, end, word = f, w, true
	default:
		return false
	}
	if end-start > maxNumberLen {
		return false
	}
	tok := s[start:end]
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
	if !boundary(s, end) || !n.point && countsThings(s, end) {
		// countsThings: `dataset: 1,000,000 samples` is a size (WeNet's `grad_norm
		// 412.51 rank 0` counts no ranks).
		return false
	}
	end = v.unitAfterSpace(s, end, list)
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
	if i < len(s) && s[i] == '[' && v.sep != ' ' {
		return i + 1, true
	}
	return i, false
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
	// A unit against the number: 30.12ms, 25.1GiB, 98%.
	if end < len(s) && (isLetter(s[end]) || s[end] == '%' || s[end] == 0xc2) {
		for _, u := range units {
			if u[0] == s[end] && strings.HasPrefix(s[end:], u) && unitEnds(s, end+len(u)) && !(len(u) == 1 && strings.IndexByte("KkMBGT", u[0]) >= 0 && end+1 < len(s) && s[end+1] == '/') {
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
			return end, false
		}
		end += k + 1
	}
	if list {
		if end >= len(s) || s[end] != ']' {
			return end, false
		}
		end++
	}
	if end < len(s) && (s[end] == '"' || s[end] == '\'') {
		end++
	}
	return end, true
}

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
var spacedUnits = []string{"ms", "sec", "s", "%"}

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
