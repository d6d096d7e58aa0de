package metrics

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestParseNumberIsParseFloat checks the fast path of number parsing against
// strconv.ParseFloat, to the bit, on tokens around its limits: up to 20 digits, a dot
// anywhere, exponents around ±22, mantissas around 2^53.
func TestParseNumberIsParseFloat(t *testing.T) {
	tokens := []string{
		"0", "-0", "+0", "0.0", "-0.0", ".5", "5.", "-.5", "+.5e3", "1.e5", "007", "000.5",
		"1", "9007199254740992", "9007199254740993", "9007199254740991", "-9007199254740993",
		"1e22", "1e23", "1e-22", "1e-23", "9007199254740993e-22", "4503599627370497e22",
		"1234567890123456789", "12345678901234567890", "0.1234567890123456789",
		"1.2.3", "1..2", "1e400", "-1e400", "1e-400", "5e-324", "2.2250738585072014e-308",
		"1.7976931348623157e308", "1.7976931348623159e308", "1e+05", "1E4", "6.3e-05",
		"1e99999999999999999999", "1e-99999999999999999999", "0e99999", "0.000000000000000000001",
	}
	r := rand.New(rand.NewPCG(53, 22))
	for range 200_000 {
		var b strings.Builder
		if r.IntN(4) == 0 {
			b.WriteByte("-+"[r.IntN(2)])
		}
		n := 1 + r.IntN(20)
		dot := r.IntN(n + 2) // n+1: no dot
		for i := range n {
			if i == dot {
				b.WriteByte('.')
			}
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		if dot == n {
			b.WriteByte('.')
		}
		if r.IntN(2) == 0 {
			b.WriteString([]string{"e", "E", "e-", "e+"}[r.IntN(4)])
			b.WriteString(strconv.Itoa(r.IntN(40)))
		}
		tokens = append(tokens, b.String())
	}
	for _, tok := range tokens {
		i, neg := 0, false
		if tok[0] == '-' || tok[0] == '+' {
			i, neg = 1, tok[0] == '-'
		}
		num := readNumber(tok, i)
		if num.end != len(tok) {
			t.Fatalf("readNumber(%q) ends at %d", tok, num.end)
		}
		got, ok := parseNumber(tok, num, neg)
		want, err := strconv.ParseFloat(tok, 64)
		if ok != (err == nil) || ok && math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%q: got %v %v (%#x), ParseFloat %v %v (%#x)", tok, got, ok, math.Float64bits(got), want, err, math.Float64bits(want))
		}
	}
}
