package common

import (
	"strconv"

	tea "charm.land/bubbletea/v2"
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

// Do runs a movement action over n rows; it reports false for other actions.
func (c *Cursor) Do(action string, n, height int) bool {
	switch action {
	case ActUp:
		c.Index--
	case ActDown:
		c.Index++
	case ActPageUp:
		c.Index -= max(1, height-1)
	case ActPageDown:
		c.Index += max(1, height-1)
	case ActTop:
		c.Index = 0
	case ActBottom:
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
