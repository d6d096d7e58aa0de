package wall

import (
	"time"

	tea "charm.land/bubbletea/v2"
)

// What the read-back benchmark (package wall_test) reads and does of a wall's insides.

// ShowLine shows line seq of pane p, read at time t, in the current view, as moving
// to a match there does: read back from the logs when it is not held.
func (m *Model) ShowLine(p int, seq int64, t time.Time) tea.Cmd {
	return m.show(ref{p, seq}, t.UnixNano())
}

// ToHeldTop puts the current view at the first lines it holds, reading nothing: the
// next move up reads back.
func (m *Model) ToHeldTop() {
	s, _ := m.current()
	s.follow = false
	h, tw := m.geometry()
	m.walkerOf(s).top(h, tw)
}

// Merged reports whether the merged view is shown; Zoomed, a zoomed pane.
func (m *Model) Merged() bool { return m.merged }

// Zoomed reports whether a pane is zoomed.
func (m *Model) Zoomed() bool { return m.zoom }

// Reading reports whether a read of the logs for a pane or the merged view is under
// way.
func (m *Model) Reading() bool {
	for _, b := range m.back.busy {
		if b {
			return true
		}
	}
	return m.mb.reading()
}
