package metrics

import (
	"strconv"
	"strings"
	"unsafe"
)

// cleanLine returns the last drawing of a line, without escape sequences, cut to
// MaxLineBytes at a space.
func (p *Parsed) cleanLine(text string) string {
	// A progress bar redrawn with \r: its last drawing holds the latest values. Keras
	// erases with \b before its \r.
	if strings.IndexByte(text, '\r') >= 0 {
		text = strings.TrimRight(text, "\r\b")
		if i := strings.LastIndexByte(text, '\r'); i >= 0 {
			text = text[i+1:]
		}
	}
	if strings.IndexByte(text, 0x1b) >= 0 {
		p.clean = stripEscapes(p.clean[:0], text, MaxLineBytes)
		// The text is read only during Extract, and nothing read keeps a piece of it
		// (names and units are interned copies): it may be p.clean's bytes.
		text = unsafe.String(unsafe.SliceData(p.clean), len(p.clean))
	}
	if len(text) > MaxLineBytes {
		cut := strings.LastIndexByte(text[:MaxLineBytes], ' ')
		if cut < 0 {
			cut = MaxLineBytes
		}
		text = text[:cut]
	}
	return text
}

// stripEscapes appends s without its ANSI escape sequences (CSI `ESC [ ... final`,
// OSC `ESC ] ... BEL or ESC \`, and two-byte escapes) to b, stopping past max bytes
// kept.
func stripEscapes(b []byte, s string, max int) []byte {
	for i := 0; i < len(s) && len(b) <= max; {
		if s[i] != 0x1b {
			// The run of text up to the next escape, in one copy.
			k := strings.IndexByte(s[i:], 0x1b)
			if k < 0 {
				k = len(s) - i
			}
			k = min(k, max+1-len(b))
			b = append(b, s[i:i+k]...)
			i += k
			continue
		}
		i++
		if i >= len(s) {
			break
		}
		switch s[i] {
		case '[':
			i++
			for i < len(s) && (s[i] < 0x40 || s[i] > 0x7e) {
				i++
			}
			i++ // the final byte
		case ']':
			for i < len(s) && s[i] != 0x07 && !(s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\') {
				i++
			}
			if i < len(s) && s[i] == 0x1b {
				i++
			}
			i++
		default:
			i++
		}
	}
	return b
}

// localRank strips torchrun's `[N]:` or `[NAME N]:` prefix (after leading spaces)
// and returns N, or -1 when the line has none.
func localRank(s string) (string, int) {
	t := strings.TrimLeft(s, " ")
	if len(t) < 4 || t[0] != '[' {
		return s, -1
	}
	end := strings.Index(t[:min(len(t), 48)], "]:")
	if end < 2 {
		return s, -1
	}
	inner := t[1:end]
	j := len(inner)
	for j > 0 && isDigit(inner[j-1]) {
		j--
	}
	if j == len(inner) || len(inner)-j > 6 {
		return s, -1
	}
	for k := 0; k < j; k++ {
		if c := inner[k]; !isNameChar(c) && c != ' ' {
			return s, -1
		}
	}
	n, _ := strconv.Atoi(inner[j:])
	return t[end+2:], n
}
