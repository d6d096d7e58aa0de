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
	if p.Bar < 0 && (len(p.Samples) > 0 || p.HasStep) {
		return // a line of values, no bar's: no row
	}
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
	n := columns(s, &cols)
	if n == 0 && len(p.Samples) == 0 {
		// spaCy's `E    #       LOSS TOK2VEC  LOSS NER  ENTS_F`: names of a few words.
		if n = wordColumns(s, &cols); n > 0 && !isHeader(cols[:n]) {
			n = 0
		}
	}
	if n < 4 {
		return
	}
	if isHeader(cols[:n]) {
		p.setHeader(cols[:n])
		return
	}
	p.headerRead = true
	if len(p.header) != n || p.headerLocal != p.Local {
		return
	}
	e.row(p, cols[:n])
}

// columns splits s into cols, words two spaces or more apart, and returns how many:
// 0 when two are one space apart (prose) or there are more than maxColumns.
func columns(s string, cols *[maxColumns]string) int {
	n := 0
	for i := 0; i < len(s); {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i == len(s) {
			break
		}
		if n > 0 && (i < 2 || s[i-2] != ' ') || n == maxColumns {
			return 0 // one space apart: prose, not columns
		}
		j := i
		for j < len(s) && s[j] != ' ' {
			j++
		}
		cols[n] = s[i:j]
		n++
		i = j
	}
	return n
}

// wordColumns splits s into columns two spaces or more apart, each of at most
// maxColumnWords words one space apart, and returns how many (0 when one holds more,
// or there are more than maxColumns, or fewer than two columns are two spaces apart).
func wordColumns(s string, cols *[maxColumns]string) int {
	n, gaps := 0, 0
	for i := 0; i < len(s); {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i == len(s) {
			break
		}
		if n == maxColumns {
			return 0
		}
		j, words := i, 1
		for j < len(s) && !(s[j] == ' ' && (j+1 == len(s) || s[j+1] == ' ')) {
			if s[j] == ' ' {
				words++
			}
			j++
		}
		if words > maxColumnWords {
			return 0
		}
		if words == 1 {
			gaps++
		}
		cols[n] = s[i:j]
		n++
		i = j
	}
	if gaps < 2 {
		return 0
	}
	return n
}

// maxColumnWords bounds the words of a column's name.
const maxColumnWords = 2

// isHeader reports whether the columns are names: each starts with a letter or `(`, or
// is `#` (the number of the row: its step).
func isHeader(cols []string) bool {
	for _, c := range cols {
		if !isLetter(c[0]) && c[0] != '(' && c != "#" {
			return false
		}
	}
	return true
}

// setHeader takes the columns as the names of the values of the rows under them, in
// lowercase (`Box(P` is p), for the rows of the same local rank.
func (p *Parsed) setHeader(cols []string) {
	p.header = p.header[:0]
	p.headerGen++
	for _, c := range cols {
		c = strings.Trim(c, "()")
		if k := strings.IndexByte(c, '('); k >= 0 {
			c = c[k+1:] // Box(P is P
		}
		var b [MaxNameLen]byte
		if len(c) > MaxNameLen {
			c = c[:MaxNameLen]
		}
		lw, _ := appendLower(b[:0], c)
		for i := range lw {
			if lw[i] == ' ' {
				lw[i] = '_' // LOSS NER is loss_ner
			}
		}
		switch string(lw) {
		case "#":
			lw = append(lw[:0], "step"...) // spaCy's `#`: the row's step
		case "e", "ep":
			lw = append(lw[:0], "epoch"...) // spaCy's `E`
		}
		if q, rest := splitQualifier(lw); q != "" && len(q)+1+len(rest) <= MaxNameLen {
			// fastai's and skorch's valid_loss is val/loss, as a pair's would be
			var qb [MaxNameLen + 16]byte
			lw = append(append(append(qb[:0], q...), '/'), rest...)
		}
		p.header = append(p.header, p.intern(lw))
	}
	p.headerLocal = p.Local
}

// row takes the values of a row under the header, one per column: a step column's
// value is the line's step; labels (all, person) and counts of a total (1/100, the
// epoch) are passed over.
func (e *Extractor) row(p *Parsed, cols []string) {
	for k, c := range cols {
		if !isDigit(c[0]) && !(c[0] == '.' || c[0] == '-') && !nonFiniteWord(c) {
			continue // a label: all, person
		}
		v := value{sep: ':'}
		ok := readValue(c, 0, &v, false)
		if ok && v.ratio && p.header[k] == "epoch" && v.num < maxEpochCount {
			p.barEpoch = int64(v.num) // Ultralytics' `1/100` under Epoch: the bar's epoch
		}
		if !ok || v.ratio || v.end != len(c) {
			continue // 1/100 is the epoch
		}
		name := []byte(p.header[k])
		if p.header[k] == "epoch" && v.integer && v.v >= 0 && v.v < maxEpochCount {
			p.Epoch = int64(v.v) // fastai's and skorch's tables: a row per epoch
			continue
		}
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
	if !p.HasStep && p.Epoch >= 0 && len(p.Samples) > 0 {
		p.EpochOnly = true
	}
}

// nonFiniteWord reports whether a column is nan, inf or infinity (in any case): fastai
// prints a loss that went NaN as `nan` in its column.
func nonFiniteWord(c string) bool {
	return foldEqual(c, "nan") || foldEqual(c, "inf") || foldEqual(c, "infinity")
}
