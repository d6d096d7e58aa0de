package metrics

import "strconv"

// number is a number token as the scan reads it: where it ends and, when it is a
// plain decimal of at most 19 digits, its digits and power of ten.
type number struct {
	end    int
	mant   uint64
	exp    int
	simple bool
	// point is whether the token has a fraction or an exponent: it is not an integer.
	point bool
}

// readNumber reads the digits, dots and exponent starting at i. The token ends where
// they end, whatever it holds: 1.2.3 is one token, and not a number.
func readNumber(s string, i int) number {
	var mant uint64
	digits, dots, exp := 0, 0, 0
	j := i
	for ; j < len(s); j++ {
		c := s[j]
		if d := c - '0'; d <= 9 {
			if digits < 19 {
				mant = mant*10 + uint64(d)
			}
			digits++
			if dots > 0 {
				exp--
			}
			continue
		}
		if c != '.' {
			break
		}
		dots++
	}
	point := dots > 0
	if j < len(s) && s[j]|0x20 == 'e' {
		k := j + 1
		neg := k < len(s) && s[k] == '-'
		if k < len(s) && (s[k] == '-' || s[k] == '+') {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			e := 0
			for j = k; j < len(s) && isDigit(s[j]); j++ {
				if e < 1e4 { // past this, far out of the exact range anyway
					e = e*10 + int(s[j]-'0')
				}
			}
			if neg {
				e = -e
			}
			exp += e
			point = true
		}
	}
	return number{end: j, mant: mant, exp: exp, simple: digits > 0 && digits <= 19 && dots <= 1, point: point}
}

// digitsEnd returns where the run of digits and dots at i ends, and how many dots it
// holds.
func digitsEnd(s string, i int) (end, dots int) {
	j := i
	for j < len(s) && s[j]-'0' <= 9 {
		j++
	}
	for j < len(s) && s[j] == '.' {
		dots++
		j++
		for j < len(s) && s[j]-'0' <= 9 {
			j++
		}
	}
	return j, dots
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
}

// value returns the number, negated when neg, when one rounding gives it: its digits
// and its power of ten are then both exact in a float64, and their product or
// quotient, correctly rounded, is what strconv.ParseFloat returns for the token. The
// numbers of logs (2.8400, 6.3e-05, 48213) are such numbers.
func (n number) value(neg bool) (float64, bool) {
	if !n.simple || n.mant > 1<<53 {
		return 0, false
	}
	v := float64(n.mant)
	switch {
	case n.exp == 0:
	case 0 < n.exp && n.exp < len(pow10):
		v *= pow10[n.exp]
	case n.exp < 0 && -n.exp < len(pow10):
		v /= pow10[-n.exp]
	default:
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// parseNumber returns the value of the number token tok (read by readNumber, after an
// optional sign, or nan, inf, infinity in any case), as strconv.ParseFloat does, to
// the bit; ok is false for what ParseFloat rejects (1.2.3, 1e400).
func parseNumber(tok string, n number, neg bool) (v float64, ok bool) {
	if v, ok := n.value(neg); ok {
		return v, true
	}
	v, err := strconv.ParseFloat(tok, 64)
	return v, err == nil
}

// atoi returns the value of s, at most 18 decimal digits and nothing else (the counts
// and positions of logs), without strconv's generality; ok is false for anything else.
func atoi(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		d := s[i] - '0'
		if d > 9 {
			return 0, false
		}
		n = n*10 + int64(d)
	}
	return n, true
}
