package widget

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Pager scrolls a block of pre-rendered lines. Only the visible lines are cut to width
// when drawn, so a long rendering (a 64-replica dry run) costs the same to draw as a
// short one. With Wrap on, a line wider than the view goes on over the next rows
// (indented under its start) instead of being cut with "…": the rows are made once per
// width and content, not per frame.
type Pager struct {
	lines  []string
	offset int
	// Wrap folds long lines onto the next rows; off, they are cut to the width.
	Wrap bool

	// width is the width of the last View; rows are lines as drawn at that width.
	width     int
	rows      []string
	rowsWidth int
}

// SetText replaces the content, keeping the scroll position where possible.
func (p *Pager) SetText(s string) { p.SetLines(strings.Split(strings.TrimRight(s, "\n"), "\n")) }

// SetLines replaces the content, keeping the scroll position where possible.
func (p *Pager) SetLines(lines []string) { p.lines, p.rows = lines, nil }

// Len is the number of lines.
func (p *Pager) Len() int { return len(p.lines) }

// Offset is the first visible row.
func (p *Pager) Offset() int { return p.offset }

// SetWrap turns wrapping on or off, keeping the line at the top of the view in view.
func (p *Pager) SetWrap(on bool) {
	if on == p.Wrap {
		return
	}
	top := p.lineAt(p.offset)
	p.Wrap, p.rows = on, nil
	p.offset = p.rowOf(top)
}

// view is the rows as drawn at the last width: the lines, or them wrapped.
func (p *Pager) view() []string {
	if !p.Wrap || p.width <= 0 {
		return p.lines
	}
	if p.rows == nil || p.rowsWidth != p.width {
		p.rows, p.rowsWidth = wrapLines(p.lines, p.width), p.width
	}
	return p.rows
}

// lineAt is the line that row i of the view shows (a wrapped line's rows all show it).
func (p *Pager) lineAt(row int) int {
	if !p.Wrap || p.width <= 0 {
		return row
	}
	n := 0
	for i, l := range p.lines {
		n += len(wrapLine(l, p.width))
		if row < n {
			return i
		}
	}
	return len(p.lines)
}

// rowOf is the first row of line i in the view.
func (p *Pager) rowOf(line int) int {
	if !p.Wrap || p.width <= 0 {
		return line
	}
	n := 0
	for i := 0; i < line && i < len(p.lines); i++ {
		n += len(wrapLine(p.lines[i], p.width))
	}
	return n
}

// wrapLines folds every line to width.
func wrapLines(lines []string, width int) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		out = append(out, wrapLine(l, width)...)
	}
	return out
}

// wrapLine folds one line to width: at spaces where it can, hard where a word is
// longer than the row; the rows after the first are indented under the line's text
// (its leading spaces and a list's "- ") so that a folded value reads as one.
func wrapLine(l string, width int) []string {
	if ansi.StringWidth(l) <= width {
		return []string{l}
	}
	plain := ansi.Strip(l)
	indent := len(plain) - len(strings.TrimLeft(plain, " "))
	if strings.HasPrefix(plain[indent:], "- ") {
		indent += 2
	}
	indent += 2
	if indent > width/2 {
		indent = 0
	}
	// Every row at the width of the indented ones: the first ends a little early.
	rows := foldWords(l, width-indent)
	pad := strings.Repeat(" ", indent)
	for i := 1; i < len(rows); i++ {
		rows[i] = pad + rows[i]
	}
	return rows
}

// foldWords folds l into rows of at most limit cells, breaking at spaces only (not at
// hyphens, as ansi.Wrap does: a flag such as --rdzv_id stays whole); a word longer than
// a row is cut hard. Styles (SGR sequences hold no spaces) travel with their words.
func foldWords(l string, limit int) []string {
	var rows []string
	var row strings.Builder
	w := 0
	flush := func() {
		rows = append(rows, row.String())
		row.Reset()
		w = 0
	}
	for i, word := range strings.Split(l, " ") {
		ww := ansi.StringWidth(word)
		if i > 0 {
			// A word that fits a row starts a row rather than be cut; a longer one
			// fills this row first.
			if w > 0 && w+1+ww > limit && ww <= limit {
				flush()
			} else {
				row.WriteByte(' ')
				w++
			}
		}
		for ww > limit-w {
			n := limit - w
			if n <= 0 {
				flush()
				continue
			}
			row.WriteString(ansi.Cut(word, 0, n))
			flush()
			word = ansi.Cut(word, n, ww)
			ww = ansi.StringWidth(word)
		}
		row.WriteString(word)
		w += ww
	}
	flush()
	return rows
}

// Scroll moves the view by delta rows, within [0, rows-height].
func (p *Pager) Scroll(delta, height int) {
	p.offset = max(0, min(p.offset+delta, len(p.view())-height))
}

// Do makes the move named move (Up, Down, ...); it reports false for any other name.
func (p *Pager) Do(move string, height int) bool {
	switch move {
	case Up:
		p.Scroll(-1, height)
	case Down:
		p.Scroll(1, height)
	case PageUp:
		p.Scroll(-max(1, height-1), height)
	case PageDown:
		p.Scroll(max(1, height-1), height)
	case Top:
		p.offset = 0
	case Bottom:
		p.Scroll(len(p.view()), height)
	default:
		return false
	}
	return true
}

// View draws the visible rows, each cut (or, with Wrap, folded) to width.
func (p *Pager) View(width, height int) string {
	if width != p.width {
		top := p.lineAt(p.offset)
		p.width = width
		p.offset = p.rowOf(top)
	}
	rows := p.view()
	p.Scroll(0, height)
	end := min(len(rows), p.offset+height)
	var b strings.Builder
	for i := p.offset; i < end; i++ {
		if i > p.offset {
			b.WriteByte('\n')
		}
		b.WriteString(ansi.Truncate(rows[i], width, "…"))
	}
	return b.String()
}

// Position describes the scroll position in rows, e.g. "12-40/180", or "" when it all
// fits.
func (p *Pager) Position(height int) string {
	rows := p.view()
	if len(rows) <= height {
		return ""
	}
	return itoa(p.offset+1) + "-" + itoa(min(len(rows), p.offset+height)) + "/" + itoa(len(rows))
}
