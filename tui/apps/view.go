package apps

import (
	"fmt"
	"strings"

	"github.com/wick-dev/wick/tui/widget"
)

// headerLines are the lines above the first row: the summary and the column headers.
const headerLines = 2

// gutter marks the selected row, so that the selection shows without colors too.
const (
	gutterOn  = "▸ "
	gutterOff = "  "
)

func (m *Model) rowsHeight() int {
	h := m.Ctx.Height - headerLines
	if m.filtering || m.filter.Value() != "" {
		h--
	}
	if len(m.errs) > 0 {
		h -= len(m.errs)
	}
	return max(1, h)
}

// View draws the summary line, the header and the visible rows.
func (m *Model) View() string {
	t := m.Ctx.Theme
	width := m.Ctx.Width
	tbl, widths, narrow := m.fit(width - len(gutterOff))
	var b strings.Builder
	b.WriteString(m.summary(narrow))
	b.WriteByte('\n')
	if m.filtering || m.filter.Value() != "" {
		b.WriteString(m.filter.View(t))
		b.WriteByte('\n')
	}
	if !m.loaded {
		return b.String()
	}
	if len(m.apps) == 0 {
		b.WriteString("\n  No apps yet. Press " + t.HelpKey.Render("n") + " to launch one.")
		m.writeErrs(&b)
		return b.String()
	}
	b.WriteString(gutterOff + tbl.Header(widths, widget.Renderer(t.TableHead)))
	height := m.rowsHeight()
	m.cur.Clamp(len(m.rows), height)
	end := min(len(m.rows), m.cur.Offset+height)
	for r := m.cur.Offset; r < end; r++ {
		b.WriteByte('\n')
		if r == m.cur.Index {
			b.WriteString(t.Selected.Render(widget.PadRight(gutterOn+m.line(tbl, r, tbl.Row(r), widths), width)))
			continue
		}
		b.WriteString(gutterOff + m.line(tbl, r, m.styledRow(tbl, r, t), widths))
	}
	switch {
	case len(m.visible) > 0:
	case m.filter.Value() == "" && m.foreign > 0:
		b.WriteString("\n  " + t.Muted.Render(fmt.Sprintf("No app of this WICK_HOME yet; A shows the %d of other homes.", m.foreign)))
	default:
		b.WriteString("\n  " + t.Muted.Render("no app matches the filter"))
	}
	m.writeErrs(&b)
	return b.String()
}

// line draws row r's cells: a sweep's row runs its counts over the columns after
// them when their column is too narrow for them.
func (m *Model) line(tbl *widget.Table, r int, cells []string, widths []int) string {
	if m.rowGroup(r) != nil {
		return tbl.Spill(cells, widths, m.Ctx.Width-len(gutterOff))
	}
	return tbl.Cells(cells, widths)
}

func (m *Model) writeErrs(b *strings.Builder) {
	for _, err := range m.errs {
		b.WriteString("\n" + m.Ctx.Theme.Fail.Render("  "+err.Error()))
	}
}

func (m *Model) summary(narrow bool) string {
	t := m.Ctx.Theme
	if !m.loaded {
		// No count before the first listing: "0 apps" would be a claim, and a count that
		// then changes by one digit is all a terminal redraws of it.
		return t.Muted.Render("listing apps…")
	}
	running, pending := m.counts()
	// The count is of the apps the list shows (unfiltered): other homes' apps, hidden,
	// are counted apart.
	n := len(m.apps) - m.foreign
	s := fmt.Sprintf("%d apps", n)
	if n == 1 {
		s = "1 app"
	}
	if running > 0 {
		s += fmt.Sprintf(" · %d running", running)
	}
	if pending > 0 {
		s += fmt.Sprintf(" · %d pending", pending)
	}
	if len(m.visible) != len(m.apps)-m.foreign {
		s += fmt.Sprintf(" · %d shown", len(m.visible))
	}
	if m.foreign > 0 {
		s += fmt.Sprintf(" · %d of other homes hidden (A)", m.foreign)
	} else if m.all {
		s += " · every home"
	}
	if len(m.marked) > 0 {
		s += fmt.Sprintf(" · %d marked", len(m.marked))
	}
	if p := m.progress.Status(); p != "" {
		s += " · " + p
	}
	if narrow && len(m.legend) > 0 {
		s += " · " + strings.Join(m.legend, " ")
	}
	dir := "↓"
	if m.reverse {
		dir = "↑"
	}
	s += " · sorted by " + m.sort.String() + " " + dir
	return t.Accent.Render("Apps") + "  " + t.Muted.Render(s)
}
