package wall

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestIndexFold compares indexFold with strings.Index on lowered ASCII text, for
// needles anchored on letters, digits and spaces.
func TestIndexFold(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "aAbB 12sStTeEpP-"
	rnd := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	for _, needle := range []string{"step 1234", "ab", "a", " ", "b a", "1", "st-", "p 1", "bb bb"} {
		for range 2000 {
			s := rnd(r.IntN(40))
			if got, want := indexFold(s, needle), strings.Index(strings.ToLower(s), needle); got != want {
				t.Fatalf("indexFold(%q, %q) = %d, want %d", s, needle, got, want)
			}
		}
	}
	if got := indexFold("[rank 0] STEP 12345 loss", "step 1234"); got != 9 {
		t.Fatalf("got %d", got)
	}
}

// indexFold is indexFoldAt at the needle's own anchor, as the matcher calls it.
func indexFold(s, needle string) int { return indexFoldAt(s, needle, anchorOf(needle)) }
