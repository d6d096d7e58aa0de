package metrics

import (
	"strconv"
	"strings"
)

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

// bracket is a counter in brackets: `[ 50/1251]` is step 50 of total 1251, `[1]` the
// single number 1, `[ 1,  2000]` a counter of neither kind.
type bracket struct {
	end    int
	step   int64 // -1 when none
	total  int64
	single int64 // -1 when none
	epoch  int64 // the epoch the counter names before a colon (`[0: 10/379]`), -1 when none
}

// bracketCounter reads a counter in brackets at s[i] == '[': `[ 50/1251]`, `[  50/1251 (
// 4%)]` (step 50 of 1251), `[ 1,  2000]` or `[1]` (a counter, no step). end is i when
// there is none.
func bracketCounter(s string, i int) bracket {
	none := bracket{end: i, step: -1, single: -1, epoch: -1}
	a, j, ok := bracketNum(s, i+1)
	if !ok {
		return none
	}
	j = spacesEnd(s, j)
	b := bracket{step: -1, single: a, epoch: -1}
	if j+2 < len(s) && s[j] == ':' && s[j+1] == ' ' {
		// PointNet's `[0: 10/379]`: the epoch, then the step within it of its total.
		k := spacesEnd(s, j+1)
		if n, e, ok := bracketNum(s, k); ok && e < len(s) && s[e] == '/' {
			b.epoch, a, j = a, n, e
		}
	}
	switch {
	case j < len(s) && s[j] == '/':
		b.step, b.single = a, -1
		b.total, j, ok = bracketTotal(s, j+1)
	case j < len(s) && s[j] == '-' && j+1 < len(s) && isDigit(s[j+1]) && i > 1 && s[i-1] == ' ' && isLetter(s[i-2]):
		// MXNet's Speedometer `Batch [100-200]`: the batches since the last line, up
		// to the step (after a word: `[0-9]` of a pattern is none).
		b.step, j, ok = bracketNum(s, j+1)
		ok = ok && b.step >= a
		b.single = -1
	case j < len(s) && s[j] == ',':
		b.single = -1
		j, ok = bracketList(s, j)
	}
	if !ok {
		return none
	}
	j = spacesEnd(s, j)
	if j >= len(s) || s[j] != ']' {
		return none
	}
	b.end = j + 1
	return b
}

// spacesEnd returns where the spaces at s[j] end.
func spacesEnd(s string, j int) int {
	for j < len(s) && s[j] == ' ' {
		j++
	}
	return j
}

// bracketNum reads a counter's number at s[j], after spaces: up to 16 digits. It
// returns the number and where it ends; ok is false when there is none.
func bracketNum(s string, j int) (n int64, end int, ok bool) {
	j = spacesEnd(s, j)
	a := j
	for j < len(s) && isDigit(s[j]) && j-a < 16 {
		j++
	}
	if j == a {
		return 0, j, false
	}
	n, ok = atoi(s[a:j])
	return n, j, ok
}

// bracketTotal reads the total after the slash of `[ 50/1251]` at s[j], and the
// progress after it (timm's and mnist's `(  4%)`: progress, not a value). It returns
// the total and where it ends.
func bracketTotal(s string, j int) (total int64, end int, ok bool) {
	total, j, ok = bracketNum(s, j)
	if !ok {
		return 0, j, false
	}
	j = spacesEnd(s, j)
	if j < len(s) && s[j] == '(' {
		k := strings.IndexByte(s[j:min(len(s), j+12)], ')')
		if k < 0 {
			return 0, j, false
		}
		j += k + 1
	}
	return total, j, true
}

// bracketList reads the numbers after the commas of `[ 1,  2000]` at s[j] == ',' and
// returns where they end.
func bracketList(s string, j int) (end int, ok bool) {
	for j < len(s) && s[j] == ',' {
		if _, j, ok = bracketNum(s, j+1); !ok {
			return j, false
		}
	}
	return j, true
}

// logLevels are the levels a logging prefix in brackets begins with.
var logLevels = [...]string{"INFO", "WARNING", "WARN", "DEBUG", "ERROR", "CRITICAL", "FATAL", "NOTICE", "TRACE"}

// logPrefixEnd returns where a logging prefix in brackets that begins with a level ends
// (nanotron's `[INFO|DP=0|PP=0|TP=0|ip-26-0-160-225]`), or i when s[i] begins none: the
// fields of such a prefix repeat on every line, they are no values.
func logPrefixEnd(s string, i int) int {
	if i+6 >= len(s) || s[i+1] < 'A' || s[i+1] > 'W' {
		return i
	}
	for _, l := range logLevels {
		k := i + 1 + len(l)
		if k < len(s) && strings.HasPrefix(s[i+1:], l) && (s[k] == '|' || s[k] == ']' || s[k] == ' ' || s[k] == ':') {
			if e := strings.IndexByte(s[k:min(len(s), k+maxPrefixLen)], ']'); e >= 0 {
				return k + e + 1
			}
			return i
		}
	}
	return i
}

// maxPrefixLen bounds what a logging prefix in brackets holds after its level.
const maxPrefixLen = 160

// sectionOf reads a part's context in brackets at s[i] == '[': `[train]`, `[valid]`,
// `[test]` (ESPnet's epoch results). It returns the context ("train" for training's,
// "" when there is none) and where the bracket ends.
func sectionOf(s string, i int) (string, int) {
	k := strings.IndexByte(s[i:min(len(s), i+maxQualifierLen+2)], ']')
	if k < 2 {
		return "", i
	}
	w := s[i+1 : i+k]
	for x := 0; x < len(w); x++ {
		if !isLetter(w[x]) {
			return "", i
		}
	}
	var b [maxQualifierLen]byte
	lw, _ := appendLower(b[:0], w)
	q := canonQualifier(lw)
	if q == "" {
		return "", i
	}
	return q, i + k + 1
}

// countedNumber reads a count written against the word of what it counts, the number
// at s[i:j] of a line that is no bar's (ESPnet's `1epoch:train:1-100batch:`, the
// batches 1 to 100 of epoch 1), a word of its own: an epoch's is the line's epoch, a
// batch's its step (the last of a range).
func (st *lineState) countedNumber(s string, p *Parsed, i, j int) {
	if j >= len(s) || p.Bar >= 0 || !isLetter(s[j]) && s[j] != '-' || i > 0 && s[i-1] != ' ' && s[i-1] != ':' {
		return // inside a word or a number
	}
	n, w, ok := countWord(s, i, j)
	switch {
	case !ok:
	case strings.EqualFold(w, "epoch") && st.epoch < 0:
		st.epoch = n
	case strings.EqualFold(w, "batch") && st.bracketStep < 0:
		st.bracketStep = n
	}
}

// countWord reads the number at s[i:j] (or the range from it, `1-100`: its last) and
// the word written against it, a word of its own of at most 9 letters: 1epoch,
// 1-100batch.
func countWord(s string, i, j int) (int64, string, bool) {
	if s[j] == '-' {
		k := j + 1
		for k < len(s) && isDigit(s[k]) && k-j < 10 {
			k++
		}
		if k == j+1 || k >= len(s) || !isLetter(s[k]) {
			return 0, "", false
		}
		i, j = j+1, k
	}
	k := j
	for k < len(s) && isLetter(s[k]) && k-j < 10 {
		k++
	}
	if k < len(s) && s[k] != ':' && s[k] != ' ' || j-i > 9 {
		return 0, "", false
	}
	n, ok := atoi(s[i:j])
	return n, s[j:k], ok
}
