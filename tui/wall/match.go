package wall

import (
	"regexp"
	"sort"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// matcher tells whether a line matches the search and where.
type matcher struct {
	re   *regexp.Regexp // for highlights, and for matching regexes and non-ASCII
	lit  string         // a literal query, lowered when folding
	at   int            // the byte of lit looked for first when folding (anchorOf)
	fold bool           // ASCII case-insensitive literal
	fast bool           // lit is usable
}

// newMatcher compiles a query: a literal (the default) or a regex, case-insensitive
// unless caseSensitive.
func newMatcher(query string, regex, caseSensitive bool) (*matcher, error) {
	expr := query
	if !regex {
		expr = regexp.QuoteMeta(query)
	}
	if !caseSensitive {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	m := &matcher{re: re}
	if !regex && isASCII(query) {
		m.fast, m.lit, m.fold = true, query, !caseSensitive
		if m.fold {
			m.lit = strings.ToLower(query)
			m.at = anchorOf(m.lit)
		}
	}
	return m, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// plainText is the text of a line without its color sequences.
func plainText(s string) string {
	if strings.IndexByte(s, 0x1b) >= 0 {
		return ansi.Strip(s)
	}
	return s
}

// match reports whether the line s matches.
func (m *matcher) match(s string) bool {
	s = plainText(s)
	switch {
	case !m.fast:
		return m.re.MatchString(s)
	case m.fold:
		return indexFoldAt(s, m.lit, m.at) >= 0
	}
	return strings.Contains(s, m.lit)
}

// matchEntry reports whether the line of entry e matches; text is the line as read
// (the entry keeps only the first maxLineBytes of a long line).
func (m *matcher) matchEntry(e *entry, text string) bool {
	if e.long() {
		return m.match(searchable(text))
	}
	return m.match(e.text)
}

// anchorOf picks the byte of needle that indexFoldAt looks for: the last one that is
// neither a letter (two cases to look for) nor a space (common in logs); else the
// last that is not a letter; else the first.
func anchorOf(needle string) int {
	best := -1
	for i := len(needle) - 1; i >= 0; i-- {
		c := needle[i]
		if c >= 'a' && c <= 'z' {
			continue
		}
		if c != ' ' {
			return i
		}
		if best < 0 {
			best = i
		}
	}
	return max(best, 0)
}

// indexFoldAt is strings.Index ignoring ASCII case, for a lowercase ASCII needle whose
// byte a is its anchor (anchorOf): it looks for that byte with IndexByte (vectorized;
// in both cases for a letter) and compares the whole needle there.
func indexFoldAt(s, needle string, a int) int {
	if needle == "" {
		return 0
	}
	c := needle[a]
	up := c
	if c >= 'a' && c <= 'z' {
		up = c - 'a' + 'A'
	}
	for i := a; i < len(s); {
		j := strings.IndexByte(s[i:], c)
		if up != c {
			if k := strings.IndexByte(s[i:], up); k >= 0 && (j < 0 || k < j) {
				j = k
			}
		}
		if j < 0 {
			return -1
		}
		start := i + j - a
		if start+len(needle) > len(s) {
			return -1
		}
		if equalFold(s[start:start+len(needle)], needle) {
			return start
		}
		i += j + 1
	}
	return -1
}

func equalFold(s, lower string) bool {
	for i := 0; i < len(lower); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// highlight marks the matches of m in a line's text with style.
func highlight(text string, m *matcher, style func(string) string, cur bool, curStyle func(string) string) string {
	plain := plainText(text)
	locs := m.re.FindAllStringIndex(plain, 64)
	if len(locs) == 0 {
		return text
	}
	st := style
	if cur {
		st = curStyle
	}
	var b strings.Builder
	last := 0
	for _, l := range locs {
		if l[1] == l[0] {
			continue
		}
		b.WriteString(plain[last:l[0]])
		b.WriteString(st(plain[l[0]:l[1]]))
		last = l[1]
	}
	b.WriteString(plain[last:])
	return b.String()
}

// upperBound returns the index of the first element of xs greater than x.
func upperBound(xs []int64, x int64) int {
	return sort.Search(len(xs), func(i int) bool { return xs[i] > x })
}

// lowerBound returns the index of the first element of xs at least x.
func lowerBound(xs []int64, x int64) int {
	return sort.Search(len(xs), func(i int) bool { return xs[i] >= x })
}
