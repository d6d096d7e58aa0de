package widget

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Pager scrolls a block of pre-rendered lines. Only the visible lines are cut to width
// when drawn, so a long rendering (a 64-replica dry run) costs the same to draw as a
// short one.
type Pager struct {
	lines  []string
	offset int
}

// SetText replaces the content, keeping the scroll position where possible.
func (p *Pager) SetText(s string) { p.SetLines(strings.Split(strings.TrimRight(s, "\n"), "\n")) }

// SetLines replaces the content, keeping the scroll position where possible.
func (p *Pager) SetLines(lines []string) { p.lines = lines }

// Len is the number of lines.
func (p *Pager) Len() int { return len(p.lines) }

// Offset is the first visible line.
func (p *Pager) Offset() int { return p.offset }

// Scroll moves the view by delta lines, within [0, Len-height].
func (p *Pager) Scroll(delta, height int) {
	p.offset = max(0, min(p.offset+delta, len(p.lines)-height))
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
		p.Scroll(len(p.lines), height)
	default:
		return false
	}
	return true
}

// View draws the visible lines, each cut to width.
func (p *Pager) View(width, height int) string {
	p.Scroll(0, height)
	end := min(len(p.lines), p.offset+height)
	var b strings.Builder
	for i := p.offset; i < end; i++ {
		if i > p.offset {
			b.WriteByte('\n')
		}
		b.WriteString(ansi.Truncate(p.lines[i], width, "…"))
	}
	return b.String()
}

// Position describes the scroll position, e.g. "12-40/180", or "" when it all fits.
func (p *Pager) Position(height int) string {
	if len(p.lines) <= height {
		return ""
	}
	return itoa(p.offset+1) + "-" + itoa(min(len(p.lines), p.offset+height)) + "/" + itoa(len(p.lines))
}
