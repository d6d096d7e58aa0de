package widget

import (
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Table lays out rows of cells in aligned columns and draws any window of them. Cell
// widths are measured once, when the rows are set; drawing cuts and pads only the rows
// asked for, so a table of thousands of rows costs what its visible rows cost.
type Table struct {
	Headers []string
	rows    [][]string
	natural []int // widest cell per column
	// spillCol is the column of the rows drawn with Spill, and spillWidth their widest
	// cell of it (see SetRowsSpill).
	spillCol, spillWidth int
	// Steps are what the columns give up, in order, when the table is too wide: a
	// column shrunk down to a width, or left out; then every column, right to left,
	// down to a few cells. A column left out has the width Hidden.
	Steps []Step
	// KeepEnd lists the columns whose cells are cut at the start ("…" + tail) rather
	// than at the end: a handle keeps its app id, the part that tells apps apart.
	KeepEnd []int
	// Hide lists the columns left out whatever the width.
	Hide []int
	// SpillGrow gives the spilling rows' column (SetRowsSpill) the room left over, up
	// to their widest cell, so that they need not spill.
	SpillGrow bool
	// CutMiddle lists the columns whose cells are cut in the middle: their start (a
	// scheduler and the app's name) and the last few cells (the app id's random tail)
	// both stay.
	CutMiddle []int
}

// Step is one thing a column gives up when the table is too wide: shrink down to Min
// cells, or, with Drop, go.
type Step struct {
	Col  int
	Min  int
	Drop bool
}

// Hidden is the width of a column left out (Step.Drop); Columns draws nothing of it.
const Hidden = -1

// minCol is the narrowest the last pass of Widths cuts a column.
const minCol = 4

// SetRows replaces the rows (cells may hold ANSI styles) and measures them.
func (t *Table) SetRows(rows [][]string) { t.SetRowsSpill(rows, -1, nil) }

// SetRowsSpill is SetRows for a table some of whose rows are drawn with Spill at
// column col (spills reports which): their cells of col do not widen it, unless the
// table has room left (see Widths).
func (t *Table) SetRowsSpill(rows [][]string, col int, spills func(r int) bool) {
	t.rows = rows
	t.natural = make([]int, len(t.Headers))
	t.spillCol, t.spillWidth = col, 0
	for i, h := range t.Headers {
		t.natural[i] = Width(h)
	}
	for r, row := range rows {
		spill := spills != nil && spills(r)
		for i, c := range row {
			switch {
			case i >= len(t.natural):
			case spill && i == col:
				t.spillWidth = max(t.spillWidth, Width(c))
			default:
				t.natural[i] = max(t.natural[i], Width(c))
			}
		}
	}
}

// Len is the number of rows.
func (t *Table) Len() int { return len(t.rows) }

// Row returns the cells of row i.
func (t *Table) Row(i int) []string { return t.rows[i] }

// Widths fits the columns into width: columns keep their natural widths, and give up
// width (the Steps in order, then the others right to left) when they do not fit.
func (t *Table) Widths(width int) []int {
	w := append([]int(nil), t.natural...)
	for _, c := range t.Hide {
		if c < len(w) {
			w[c] = Hidden
		}
	}
	over := t.total(w) - width
	for _, s := range t.Steps {
		if over <= 0 {
			break
		}
		if s.Col >= len(w) || w[s.Col] == Hidden {
			continue
		}
		if s.Drop {
			over -= w[s.Col] + 2
			w[s.Col] = Hidden
			continue
		}
		cut := min(over, max(0, w[s.Col]-max(s.Min, minCol)))
		w[s.Col] -= cut
		over -= cut
	}
	for i := len(w) - 1; over > 0 && i >= 0; i-- {
		if w[i] == Hidden {
			continue
		}
		cut := min(over, max(0, w[i]-minCol))
		w[i] -= cut
		over -= cut
	}
	if c := t.spillCol; t.SpillGrow && over < 0 && c >= 0 && c < len(w) && w[c] != Hidden && w[c] == t.natural[c] {
		// Room left: the spilling rows' cells get it, so that they need not spill.
		w[c] += min(-over, max(0, t.spillWidth-w[c]))
	}
	return w
}

// Natural is the width of each column's widest cell (or header).
func (t *Table) Natural() []int { return t.natural }

// total is the width of the columns of widths w with their separators.
func (t *Table) total(w []int) int {
	s, n := 0, 0
	for _, x := range w {
		if x != Hidden {
			s += x
			n++
		}
	}
	return s + 2*max(0, n-1)
}

// Header draws the header line with the given widths, styled by style.
func (t *Table) Header(widths []int, style func(string) string) string {
	return style(Columns(t.Headers, widths))
}

// Line draws row i with the given widths.
func (t *Table) Line(i int, widths []int) string { return t.Cells(t.rows[i], widths) }

// Cells draws cells (row i's, or the same styled) with the given widths, cutting the
// KeepEnd columns at their start and the CutMiddle ones in their middle.
func (t *Table) Cells(cells []string, widths []int) string {
	return Columns(t.cut(cells, widths), widths)
}

func (t *Table) cut(cells []string, widths []int) []string {
	copied := false
	set := func(k int, s string) {
		if !copied {
			cells, copied = append([]string(nil), cells...), true
		}
		cells[k] = s
	}
	for _, k := range t.KeepEnd {
		if k >= len(cells) || k >= len(widths) {
			continue
		}
		if over := Width(cells[k]) - widths[k]; over > 0 && widths[k] > 0 {
			set(k, ansi.TruncateLeft(cells[k], over+1, "…"))
		}
	}
	for _, k := range t.CutMiddle {
		if k >= len(cells) || k >= len(widths) {
			continue
		}
		if Width(cells[k]) > widths[k] && widths[k] > 0 {
			set(k, CutMiddle(cells[k], widths[k]))
		}
	}
	return cells
}

// tailKeep is how many cells CutMiddle keeps of the end: the last four characters of
// an app id's random suffix (29^4 of them) tell two apps of one name apart.
const tailKeep = 4

// CutMiddle cuts s to width cells with "…" in its middle, keeping its end (up to
// tailKeep cells, fewer when the start would be left with less) and as much of its
// start as fits.
func CutMiddle(s string, width int) string {
	w := Width(s)
	if w <= width {
		return s
	}
	if width < 2 {
		return ansi.Truncate(s, width, "")
	}
	tail := min(tailKeep, (width-1)/3)
	head := width - 1 - tail
	return ansi.Truncate(s, head, "") + "…" + ansi.TruncateLeft(s, w-tail, "")
}

// Spill draws cells as Cells does, except that the cell of the spilling rows' column
// (SetRowsSpill), when wider
// than its column, runs over the columns after it: those it covers are left out, and
// the next ones keep their places. It is cut only at the end of the line (width).
// A group's row (a sweep's counts) says all it has to say this way.
func (t *Table) Spill(cells []string, widths []int, width int) string {
	col := t.spillCol
	if col < 0 || col >= len(cells) || col >= len(widths) || widths[col] == Hidden || Width(cells[col]) <= widths[col] {
		return t.Cells(cells, widths)
	}
	whole := cells[col]
	cells = t.cut(cells, widths)
	if cells[col] != whole {
		cells = append([]string(nil), cells...)
		cells[col] = whole
	}
	lead := Columns(cells[:col+1], append(append([]int(nil), widths[:col]...), 1<<20))
	var b strings.Builder
	b.WriteString(lead)
	at := Width(lead)
	pos := 0 // where column i starts
	for i, x := range widths {
		if x == Hidden {
			continue
		}
		if i > col && i < len(cells) && pos >= at+2 {
			b.WriteString(strings.Repeat(" ", pos-at))
			rest := Columns(cells[i:], widths[i:])
			b.WriteString(rest)
			break
		}
		pos += x + 2
	}
	return ansi.Truncate(b.String(), width, "…")
}

// Width is the display width of s. Plain ASCII, the common case of table cells, and
// ASCII styled by CSI sequences (SGR colors: the wall's lines and titles), with the
// wall's one-column glyphs (bars, borders), are measured
// without the grapheme segmentation ansi.StringWidth does, which was a quarter of the
// wall's CPU at 16 replicas; anything else (UTF-8, other controls) goes to it.
func Width(s string) int {
	if n, ok := simpleWidth(s); ok {
		return n
	}
	return ansi.StringWidth(s)
}

// Truncate is ansi.Truncate(s, w, tail), byte for byte: s cut to w columns, tail
// included, its escape sequences all kept. The strings Width measures without
// grapheme segmentation (ASCII, CSI sequences, the wall's one-column glyphs) are cut
// without it too, as each of the wall's rows is; anything else goes to
// ansi.Truncate.
func Truncate(s string, w int, tail string) string {
	n, ok := simpleWidth(s)
	tw, tok := simpleWidth(tail)
	if !ok || !tok {
		return ansi.Truncate(s, w, tail)
	}
	if n <= w {
		return s
	}
	w -= tw
	if w < 0 {
		return ""
	}
	var b strings.Builder
	b.Grow(len(s) + len(tail))
	col, cut := 0, false
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == 0x1b:
			// A whole CSI sequence (simple checked it), kept past the cut too.
			j := i + 2
			for s[j] < 0x40 {
				j++
			}
			b.WriteString(s[i : j+1])
			i = j + 1
			continue
		case !cut && col >= w:
			cut = true
			b.WriteString(tail)
		}
		size := 1
		if c >= 0x80 {
			_, size = utf8.DecodeRuneInString(s[i:])
		}
		if !cut {
			b.WriteString(s[i : i+size])
			col++
		}
		i += size
	}
	return b.String()
}

// simpleWidth is Width of s when Width measures it without ansi.StringWidth
// (printable ASCII, CSI sequences and the wall's one-column glyphs only), and false
// otherwise.
func simpleWidth(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 0x20 && c < 0x7f:
			n++
		case c == 0x1b && i+1 < len(s) && s[i+1] == '[':
			// CSI: parameters and intermediates (0x20-0x3f), then one final byte
			// (0x40-0x7e); zero width.
			j := i + 2
			for j < len(s) && s[j] >= 0x20 && s[j] <= 0x3f {
				j++
			}
			if j >= len(s) || s[j] < 0x40 || s[j] > 0x7e {
				return 0, false
			}
			i = j
		case c >= 0x80:
			// The wall's own glyphs, one column each: box drawing and block elements
			// (tqdm's bars, the panes' borders), geometric shapes (▸), … and ·. A
			// rune a mark or a variation selector could follow is not among them.
			r, size := utf8.DecodeRuneInString(s[i:])
			if !(r >= 0x2500 && r <= 0x25ff || r == 0x2026 || r == 0x00b7) || oneOfSelectors(s[i+size:]) {
				return 0, false
			}
			n++
			i += size - 1
		default:
			return 0, false
		}
	}
	return n, true
}

// oneOfSelectors reports whether s starts with a variation selector or a combining
// mark (U+FE00-FE0F, U+0300-036F, U+20D0-20FF): the rune before it is then not alone.
func oneOfSelectors(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return r >= 0xfe00 && r <= 0xfe0f || r >= 0x0300 && r <= 0x036f || r >= 0x20d0 && r <= 0x20ff
}
