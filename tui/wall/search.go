package wall

import (
	"context"
	"regexp"
	"sort"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/tui/common"
)

// searchYield is how many lines a search job reads between checks of its context: a
// query replaced by the next keystroke stops within a few hundred microseconds.
const searchYield = 4096

// contextSteps are the lines of context the context key cycles through, around each
// match when only matching lines are shown.
var contextSteps = [...]int{0, 1, 3, 5, 10}

// matcher tells whether a line matches the search and where.
type matcher struct {
	re   *regexp.Regexp // for highlights, and for matching regexes and non-ASCII
	lit  string         // a literal query, lowered when folding
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
		return indexFold(s, m.lit) >= 0
	}
	return strings.Contains(s, m.lit)
}

// indexFold is strings.Index ignoring ASCII case, for a lowercase ASCII needle: it
// looks for the first byte in both cases with IndexByte (vectorized) and compares the
// rest by hand.
func indexFold(s, needle string) int {
	if needle == "" {
		return 0
	}
	c0 := needle[0]
	up := c0
	if c0 >= 'a' && c0 <= 'z' {
		up = c0 - 'a' + 'A'
	}
	for i := 0; i+len(needle) <= len(s); {
		j := strings.IndexByte(s[i:], c0)
		if up != c0 {
			if k := strings.IndexByte(s[i:], up); k >= 0 && (j < 0 || k < j) {
				j = k
			}
		}
		if j < 0 {
			return -1
		}
		i += j
		if i+len(needle) > len(s) {
			return -1
		}
		if equalFold(s[i+1:i+len(needle)], needle[1:]) {
			return i
		}
		i++
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

// searchMsg is the result of a search job: the matching seqs of each pane among the
// lines it held when the job started (up to upto).
type searchMsg struct {
	common.ViewID
	gen     int
	matches [][]int64
	upto    []int64
}

// searchJob searches snapshots of every pane's ring off the UI loop.
func searchJob(ctx context.Context, id common.ViewID, gen int, m *matcher, snaps []snapshot) tea.Cmd {
	return func() tea.Msg {
		res := searchMsg{ViewID: id, gen: gen, matches: make([][]int64, len(snaps)), upto: make([]int64, len(snaps))}
		for i := range snaps {
			s := &snaps[i]
			res.upto[i] = s.last
			var out []int64
			for seq := s.first; seq < s.last; seq++ {
				if (seq-s.first)%searchYield == 0 && ctx.Err() != nil {
					return nil
				}
				if e := s.at(seq); !e.divider() && m.match(e.text) {
					out = append(out, seq)
				}
			}
			res.matches[i] = out
		}
		return res
	}
}

// searchAll is searchJob run in place: what the benchmarks and small panes use.
func searchAll(m *matcher, snaps []snapshot) int {
	n := 0
	for i := range snaps {
		s := &snaps[i]
		for seq := s.first; seq < s.last; seq++ {
			if e := s.at(seq); !e.divider() && m.match(e.text) {
				n++
			}
		}
	}
	return n
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

// searchFrom returns the index of the first element of xs greater than x.
func upperBound(xs []int64, x int64) int {
	return sort.Search(len(xs), func(i int) bool { return xs[i] > x })
}

// lowerBound returns the index of the first element of xs at least x.
func lowerBound(xs []int64, x int64) int {
	return sort.Search(len(xs), func(i int) bool { return xs[i] >= x })
}
