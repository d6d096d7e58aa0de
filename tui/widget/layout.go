package widget

import (
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// Fit cuts or pads s to exactly width columns and height lines, so that a view never
// breaks the layout whatever it draws.
func Fit(s string, width, height int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > height {
		lines = lines[:height]
	}
	var b strings.Builder
	for i := 0; i < height; i++ {
		if i > 0 {
			b.WriteByte('\n')
		}
		if i < len(lines) {
			b.WriteString(PadRight(lines[i], width))
		} else {
			b.WriteString(strings.Repeat(" ", width))
		}
	}
	return b.String()
}

// PadRight cuts or pads one line to exactly width columns.
func PadRight(line string, width int) string {
	w := Width(line)
	if w > width {
		return ansi.Truncate(line, width, "…")
	}
	return line + strings.Repeat(" ", width-w)
}

// Overlay draws box centered over bg (width x height, as Fit returns it).
func Overlay(bg, box string, width, height int) string {
	bgLines := strings.Split(bg, "\n")
	boxLines := strings.Split(box, "\n")
	bw := 0
	for _, l := range boxLines {
		bw = max(bw, ansi.StringWidth(l))
	}
	bw = min(bw, width)
	x := max(0, (width-bw)/2)
	y := max(0, (height-len(boxLines))/2)
	for i, l := range boxLines {
		row := y + i
		if row >= len(bgLines) {
			break
		}
		line := bgLines[row]
		left := ansi.Truncate(line, x, "")
		left += strings.Repeat(" ", x-ansi.StringWidth(left))
		right := ansi.TruncateLeft(line, x+bw, "")
		bgLines[row] = left + "\x1b[0m" + PadRight(l, bw) + "\x1b[0m" + right
	}
	return strings.Join(bgLines, "\n")
}

// Columns lays out cells in columns of the given widths (the last one takes the rest),
// separated by two spaces, cutting cells that do not fit and leaving out the Hidden.
func Columns(cells []string, widths []int) string {
	var b strings.Builder
	first := true
	for i, c := range cells {
		if i < len(widths) && widths[i] == Hidden {
			continue
		}
		if !first {
			b.WriteString("  ")
		}
		first = false
		switch {
		case i < len(widths) && i < len(cells)-1:
			b.WriteString(PadRight(c, widths[i]))
		case i < len(widths):
			b.WriteString(ansi.Truncate(c, widths[i], "…"))
		default:
			b.WriteString(c)
		}
	}
	return b.String()
}

// Renderer adapts a lipgloss style to a func(string) string.
func Renderer(st lipgloss.Style) func(string) string {
	return func(s string) string { return st.Render(s) }
}

// Reflow joins the lines of each paragraph of s (paragraphs are separated by blank
// lines) so that text wrapped for a terminal of one width can be wrapped again to
// another. Indented lines (lists, examples) keep their line breaks.
func Reflow(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	var b strings.Builder
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case i == 0:
		case t == "" || strings.TrimSpace(lines[i-1]) == "":
			b.WriteByte('\n')
		case strings.HasPrefix(l, " ") || strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* "):
			b.WriteByte('\n')
		default:
			b.WriteByte(' ')
		}
		if strings.HasPrefix(l, " ") && t != "" {
			b.WriteString(l)
		} else {
			b.WriteString(t)
		}
	}
	return b.String()
}
