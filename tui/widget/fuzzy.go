package widget

import (
	"unicode"
	"unicode/utf8"
)

// Fuzzy scores how well pattern matches s as a subsequence, ignoring case, and returns
// the byte offsets of the matched characters. Consecutive matches, matches at the start
// of a word (after '.', '_', '-', '/', ' ') and at the start of s score higher, as in
// fzf, so "ue" ranks utils.echo above utils.python-exe. An empty pattern matches
// everything with score 0.
func Fuzzy(pattern, s string) (score int, pos []int, ok bool) {
	if pattern == "" {
		return 0, nil, true
	}
	pi := 0
	pr, pw := utf8.DecodeRuneInString(pattern)
	prev := rune(0)
	last := -2
	for i, r := range s {
		if pi < len(pattern) && unicode.ToLower(r) == unicode.ToLower(pr) {
			bonus := 1
			switch {
			case i == 0:
				bonus += 8
			case isBoundary(prev):
				bonus += 6
			}
			if last == i-utf8.RuneLen(prev) {
				bonus += 5
			}
			score += bonus
			pos = append(pos, i)
			last = i
			pi += pw
			if pi < len(pattern) {
				pr, pw = utf8.DecodeRuneInString(pattern[pi:])
			}
		}
		prev = r
	}
	if pi < len(pattern) {
		return 0, nil, false
	}
	// Prefer shorter strings among equal matches.
	return score*100 - len(s), pos, true
}

func isBoundary(r rune) bool {
	return r == '.' || r == '_' || r == '-' || r == '/' || r == ' ' || r == ':'
}

// Highlight styles the bytes of s at pos with hl, the rest with rest.
func Highlight(s string, pos []int, hl, rest func(string) string) string {
	if len(pos) == 0 {
		return rest(s)
	}
	var out []byte
	start := 0
	j := 0
	for i, r := range s {
		if j < len(pos) && pos[j] == i {
			if start < i {
				out = append(out, rest(s[start:i])...)
			}
			out = append(out, hl(string(r))...)
			start = i + utf8.RuneLen(r)
			j++
		}
	}
	if start < len(s) {
		out = append(out, rest(s[start:])...)
	}
	return string(out)
}
