package metrics

import (
	"math"
	"strings"
)

// maxColumns bounds the columns of a header line.
const maxColumns = 24

// table reads a header line of column names, or a row of values under the last one:
// columns right-aligned, two spaces or more apart, as Ultralytics prints them (a row
// may be a tqdm bar's description, before its `: 100%|`).
func (e *Extractor) table(s string, p *Parsed) {
	if i := strings.Index(s, "%|"); i >= 0 {
		c := strings.LastIndexByte(s[:i], ':')
		if c < 0 {
			return
		}
		s = s[:c]
	} else if len(p.Samples) > 0 || p.HasStep {
		return
	}
	var cols [maxColumns]string
	n := 0
	for i := 0; i < len(s); {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i == len(s) {
			break
		}
		if n > 0 && (i < 2 || s[i-2] != ' ') || n == maxColumns {
			return // one space apart: prose, not columns
		}
		j := i
		for j < len(s) && s[j] != ' ' {
			j++
		}
		cols[n] = s[i:j]
		n++
		i = j
	}
	if n < 4 {
		return
	}
	header := true
	for _, c := range cols[:n] {
		if !isLetter(c[0]) && c[0] != '(' {
			header = false
			break
		}
	}
	if header {
		p.header = p.header[:0]
		for _, c := range cols[:n] {
			c = strings.Trim(c, "()")
			if k := strings.IndexByte(c, '('); k >= 0 {
				c = c[k+1:] // Box(P is P
			}
			var b [MaxNameLen]byte
			if len(c) > MaxNameLen {
				c = c[:MaxNameLen]
			}
			lw, _ := appendLower(b[:0], c)
			p.header = append(p.header, p.intern(lw))
		}
		p.headerLocal = p.Local
		return
	}
	if len(p.header) != n || p.headerLocal != p.Local {
		return
	}
	for k, c := range cols[:n] {
		if !isDigit(c[0]) && !(c[0] == '.' || c[0] == '-') {
			continue // a label: all, person
		}
		v := value{sep: ':'}
		ok := readValue(c, 0, &v, false)
		if !ok || v.ratio || v.end != len(c) {
			continue // 1/100 is the epoch
		}
		name := []byte(p.header[k])
		if info := e.words.lookup(name, headOf(name)); info.flags&flagConfigured != 0 && info.kind == kindStep {
			if !p.HasStep && v.v >= 0 && v.v == math.Trunc(v.v) && v.v < 1<<53 {
				p.Step, p.HasStep = int64(v.v), true
			}
			continue
		}
		e.add(p, name, v.v, v.unit)
		if len(p.Samples) >= MaxValuesPerLine {
			return
		}
	}
}
