package render

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// tabWidth is the distance between tab stops.
const tabWidth = 8

// Sanitize makes a log line safe to draw on a terminal: SGR color sequences are kept,
// every other escape sequence (cursor movement, screen and line erasure, titles,
// hyperlinks, device queries) is dropped, a '\r' rewrite collapses to the text after
// the last carriage return (a tqdm bar shows its latest state), tabs become spaces,
// other control characters and invalid UTF-8 become U+FFFD, and the result is cut at
// maxBytes when it is positive. The common case, a line of printable text, is returned
// as is without allocating. The log wall and `wick log` on a terminal share it.
func Sanitize(s string, maxBytes int) string {
	if clean(s, maxBytes) {
		return s
	}
	// Collapse carriage returns: the last non-empty segment is what a terminal shows
	// last (a trailing '\r' redraws nothing).
	if strings.IndexByte(s, '\r') >= 0 {
		t := strings.TrimRight(s, "\r")
		if i := strings.LastIndexByte(t, '\r'); i >= 0 {
			t = t[i+1:]
		}
		s = t
	}
	cut := 0
	if maxBytes > 0 && len(s) > maxBytes {
		cut = len(s) - maxBytes
		s = s[:maxBytes]
	}
	var b strings.Builder
	b.Grow(len(s))
	col, sgr := 0, false
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == 0x1b:
			n, keep := escapeSeq(s[i:])
			if keep {
				b.WriteString(s[i : i+n])
				sgr = true
			}
			i += n
			continue
		case c == '\t':
			n := tabWidth - col%tabWidth
			b.WriteString("        "[:n])
			col += n
		case c < 0x20 || c == 0x7f:
			b.WriteRune(utf8.RuneError)
			col++
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			col++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size <= 1 || r >= 0x80 && r < 0xa0 {
				// Invalid UTF-8, or a C1 control (CSI and OSC in their 8-bit forms).
				if size < 1 {
					size = 1
				}
				b.WriteRune(utf8.RuneError)
				col++
				i += size
				continue
			}
			b.WriteString(s[i : i+size])
			col++
			i += size
			continue
		}
		i++
	}
	if sgr {
		b.WriteString("\x1b[0m")
	}
	if cut > 0 {
		b.WriteString(" … [" + strconv.Itoa(cut) + " more bytes]")
	}
	return b.String()
}

// clean reports whether s is drawable as is: printable ASCII or valid UTF-8 without
// control characters, and not too long.
func clean(s string, maxBytes int) bool {
	if maxBytes > 0 && len(s) > maxBytes {
		return false
	}
	ascii := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f {
			return false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if ascii {
		return true
	}
	for _, r := range s {
		if r == utf8.RuneError || r >= 0x80 && r < 0xa0 {
			return false
		}
	}
	return true
}

// escapeSeq measures the escape sequence at the start of s (s[0] is ESC) and reports
// whether it is an SGR sequence (colors and text attributes), the only kind kept.
// An unterminated sequence runs to the end of s.
func escapeSeq(s string) (n int, keep bool) {
	if len(s) < 2 {
		return len(s), false
	}
	switch s[1] {
	case '[': // CSI: parameters and intermediates, then a final byte 0x40-0x7e.
		for i := 2; i < len(s); i++ {
			c := s[i]
			if c >= 0x40 && c <= 0x7e {
				return i + 1, c == 'm' && sgrParams(s[2:i])
			}
			if c < 0x20 || c > 0x3f {
				// Not a CSI byte: the sequence is malformed; drop what was read.
				return i, false
			}
		}
		return len(s), false
	case ']', 'P', 'X', '^', '_': // OSC, DCS, SOS, PM, APC: up to BEL or ST.
		for i := 2; i < len(s); i++ {
			switch {
			case s[i] == 0x07:
				return i + 1, false
			case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
				return i + 2, false
			}
		}
		return len(s), false
	case '(', ')', '*', '+', '#', '%': // charset selection and friends: one more byte.
		return min(3, len(s)), false
	}
	return 2, false
}

// sgrParams reports whether p is a plain SGR parameter list (digits, ';' and ':').
func sgrParams(p string) bool {
	for i := 0; i < len(p); i++ {
		if c := p[i]; (c < '0' || c > '9') && c != ';' && c != ':' {
			return false
		}
	}
	return true
}

// Escape returns s for printing on one line among other text: control characters
// (newlines included), C1 controls and invalid UTF-8 are written as Go escapes (\x1b,
// \n, \u009b), so a name, label or error read from a state file, a Docker label or a
// component file cannot move the cursor, retitle the terminal or inject input. Clean
// text is returned as is.
func Escape(s string) string { return escape(s, false) }

// EscapeText is Escape for multi-line text (help): newlines and tabs are kept.
func EscapeText(s string) string { return escape(s, true) }

func escape(s string, text bool) string {
	bad := func(r rune, size int) bool {
		if text && (r == '\n' || r == '\t') {
			return false
		}
		return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r == utf8.RuneError && size <= 1
	}
	ok := true
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if bad(r, size) {
			ok = false
			break
		}
		i += size
	}
	if ok {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case !bad(r, size):
			b.WriteString(s[i : i+size])
		case r == utf8.RuneError:
			b.WriteString(`\x` + strconv.FormatInt(int64(s[i])|0x100, 16)[1:])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}
