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
}

// bracketCounter reads a counter in brackets at s[i] == '[': `[ 50/1251]`, `[  50/1251 (
// 4%)]` (step 50 of 1251), `[ 1,  2000]` or `[1]` (a counter, no step). end is i when
// there is none.
func bracketCounter(s string, i int) bracket {
	none := bracket{end: i, step: -1, single: -1}
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
		return none
	}
	for j < len(s) && s[j] == ' ' {
		j++
	}
	b := bracket{step: -1, single: a}
	switch {
	case j < len(s) && s[j] == '/':
		j++
		total, ok := num()
		if !ok {
			return none
		}
		b.step, b.total, b.single = a, total, -1
		// timm's and mnist's `(  4%)`: progress, not a value.
		for j < len(s) && s[j] == ' ' {
			j++
		}
		if j < len(s) && s[j] == '(' {
			k := strings.IndexByte(s[j:min(len(s), j+12)], ')')
			if k < 0 {
				return none
			}
			j += k + 1
		}
	case j < len(s) && s[j] == ',':
		b.single = -1
		for j < len(s) && s[j] == ',' {
			j++
			if _, ok := num(); !ok {
				return none
			}
		}
	}
	for j < len(s) && s[j] == ' ' {
		j++
	}
	if j >= len(s) || s[j] != ']' {
		return none
	}
	b.end = j + 1
	return b
}
