package widget

import (
	"strconv"

	tea "charm.land/bubbletea/v2"
)

// The moves a Cursor and a Pager make, named as the actions of the action table that
// run them (tui/common uses these names), so a view hands its action to Do as it is.
const (
	Up       = "up"
	Down     = "down"
	PageUp   = "page-up"
	PageDown = "page-down"
	Top      = "top"
	Bottom   = "bottom"
)

// Cursor is the selection and scroll offset of a list of N rows shown Height at a
// time.
type Cursor struct {
	Index, Offset int
}

// Clamp keeps the cursor within n rows and visible within height.
func (c *Cursor) Clamp(n, height int) {
	c.Index = max(0, min(c.Index, n-1))
	height = max(1, height)
	if c.Index < c.Offset {
		c.Offset = c.Index
	}
	if c.Index >= c.Offset+height {
		c.Offset = c.Index - height + 1
	}
	c.Offset = max(0, min(c.Offset, n-height))
}

// Do makes the move named move (Up, Down, ...) over n rows; it reports false for any
// other name.
func (c *Cursor) Do(move string, n, height int) bool {
	switch move {
	case Up:
		c.Index--
	case Down:
		c.Index++
	case PageUp:
		c.Index -= max(1, height-1)
	case PageDown:
		c.Index += max(1, height-1)
	case Top:
		c.Index = 0
	case Bottom:
		c.Index = n - 1
	default:
		return false
	}
	c.Clamp(n, height)
	return true
}

// Wheel scrolls by delta rows, moving the selection along when it would leave the
// screen.
func (c *Cursor) Wheel(delta, n, height int) {
	c.Offset = max(0, min(c.Offset+delta, n-height))
	if c.Index < c.Offset {
		c.Index = c.Offset
	}
	if c.Index >= c.Offset+height {
		c.Index = c.Offset + height - 1
	}
	c.Clamp(n, height)
}

// Click selects the row at screen row y (0 is the first visible row); it reports
// whether y is on a row.
func (c *Cursor) Click(y, n int) bool {
	i := c.Offset + y
	if y < 0 || i >= n {
		return false
	}
	c.Index = i
	return true
}

// WheelStep is how many rows one notch of the mouse wheel scrolls: three, as most
// terminals and editors do.
const WheelStep = 3

// WheelDelta is how many rows a wheel notch scrolls: up is negative.
func WheelDelta(msg tea.MouseWheelMsg) int {
	if msg.Button == tea.MouseWheelUp {
		return -WheelStep
	}
	return WheelStep
}

func itoa(i int) string { return strconv.Itoa(i) }
