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
