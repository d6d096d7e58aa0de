package render

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Table lays out rows under headers in aligned columns separated by two spaces. Cells
// may hold ANSI colors; widths are measured without them. The last column is not padded.
func Table(headers []string, rows [][]string, st Styler) string {
	widths := make([]int, len(headers))
	for i, h := range headers {
		widths[i] = ansi.StringWidth(h)
	}
	for _, r := range rows {
		for i, c := range r {
			if i < len(widths) {
				widths[i] = max(widths[i], ansi.StringWidth(c))
			}
		}
	}
	var b strings.Builder
	line := func(cells []string, style func(string) string) {
		for i, c := range cells {
			if i > 0 {
				b.WriteString("  ")
			}
			b.WriteString(style(c))
			if i < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-ansi.StringWidth(c)))
			}
		}
		b.WriteByte('\n')
	}
	line(headers, st.Header)
	for _, r := range rows {
		line(r, func(s string) string { return s })
	}
	return b.String()
}
