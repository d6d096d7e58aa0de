package widget

import (
	"github.com/charmbracelet/x/ansi"
)

// Table lays out rows of cells in aligned columns and draws any window of them. Cell
// widths are measured once, when the rows are set; drawing cuts and pads only the rows
// asked for, so a table of thousands of rows costs what its visible rows cost.
type Table struct {
	Headers []string
	rows    [][]string
	natural []int // widest cell per column
	// Shrink lists the columns that give up width first when the table is too wide, in
	// order, each down to ShrinkMin (a NAME before a HANDLE); then every column, right
	// to left, down to a few cells.
	Shrink []int
	// ShrinkMin is the narrowest a column of Shrink is made in the first pass.
	ShrinkMin int
	// KeepEnd lists the columns whose cells are cut at the start ("…" + tail) rather
	// than at the end: a handle keeps its app id, the part that tells apps apart.
	KeepEnd []int
}

// SetRows replaces the rows (cells may hold ANSI styles) and measures them.
func (t *Table) SetRows(rows [][]string) {
	t.rows = rows
	t.natural = make([]int, len(t.Headers))
	for i, h := range t.Headers {
		t.natural[i] = Width(h)
	}
	for _, r := range rows {
		for i, c := range r {
			if i < len(t.natural) {
				t.natural[i] = max(t.natural[i], Width(c))
			}
		}
	}
}

// Len is the number of rows.
func (t *Table) Len() int { return len(t.rows) }

// Row returns the cells of row i.
func (t *Table) Row(i int) []string { return t.rows[i] }

// Widths fits the columns into width: columns keep their natural widths, and the Flex
// column (then the others, right to left) shrinks when they do not fit.
func (t *Table) Widths(width int) []int {
	w := append([]int(nil), t.natural...)
	total := func() int {
		s := 2 * max(0, len(w)-1)
		for _, x := range w {
			s += x
		}
		return s
	}
	const minCol = 4
	over := total() - width
	for _, c := range t.Shrink {
		if over <= 0 {
			break
		}
		if c < len(w) {
			cut := min(over, max(0, w[c]-max(t.ShrinkMin, minCol)))
			w[c] -= cut
			over -= cut
		}
	}
	for i := len(w) - 1; over > 0 && i >= 0; i-- {
		cut := min(over, max(0, w[i]-minCol))
		w[i] -= cut
		over -= cut
	}
	return w
}

// Header draws the header line with the given widths, styled by style.
func (t *Table) Header(widths []int, style func(string) string) string {
	return style(Columns(t.Headers, widths))
}

// Line draws row i with the given widths.
func (t *Table) Line(i int, widths []int) string { return t.Cells(t.rows[i], widths) }

// Cells draws cells (row i's, or the same styled) with the given widths, cutting the
// KeepEnd columns at their start.
func (t *Table) Cells(cells []string, widths []int) string {
	copied := false
	for _, k := range t.KeepEnd {
		if k >= len(cells) || k >= len(widths) {
			continue
		}
		if over := Width(cells[k]) - widths[k]; over > 0 {
			if !copied {
				cells, copied = append([]string(nil), cells...), true
			}
			cells[k] = ansi.TruncateLeft(cells[k], over+1, "…")
		}
	}
	return Columns(cells, widths)
}

// Width is the display width of s. Plain ASCII, the common case of table cells, is
// measured without the grapheme segmentation ansi.StringWidth does.
func Width(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || c < 0x20 {
			return ansi.StringWidth(s)
		}
	}
	return len(s)
}
