package wall

import (
	"time"

	tea "charm.land/bubbletea/v2"
)

// What the tests of package wall_test (the soak benchmark) read of a wall's insides.

// PaneCounts is one pane's line counts.
type PaneCounts struct {
	Name string
	// Received is the entries the ring was given since the wall opened (its next
	// seq), dividers included; Dividers is the dividers among those held.
	Received, Dividers int64
	// Held is the entries the ring holds now.
	Held  int64
	Ended bool
}

// Counts returns the line counts of every pane.
func (m *Model) Counts() []PaneCounts {
	out := make([]PaneCounts, len(m.panes))
	for i, p := range m.panes {
		c := PaneCounts{Name: p.name(), Received: p.ring.n, Held: p.ring.len(), Ended: p.ended}
		for seq := p.ring.first; seq < p.ring.n; seq++ {
			if p.ring.at(seq).divider() {
				c.Dividers++
			}
		}
		out[i] = c
	}
	return out
}

// HeldLines calls yield with each line pane i holds, oldest first (dividers skipped).
func (m *Model) HeldLines(i int, yield func(stderr bool, text string)) {
	r := m.panes[i].ring
	for seq := r.first; seq < r.n; seq++ {
		if e := r.at(seq); !e.divider() {
			yield(e.stderr(), e.text)
		}
	}
}

// AllEnded reports whether every pane's stream has ended ("end of logs").
func (m *Model) AllEnded() bool { return m.ended }

// BatchLines returns the number of committed lines in msg when it is a batch of the
// feed (pending lines, a progress bar's frames, are not lines of the files), and the
// time the oldest of them was read from the replica (zero without lines).
func BatchLines(msg tea.Msg) (n int, oldest time.Time, ok bool) {
	b, ok := msg.(batchMsg)
	if !ok {
		return 0, time.Time{}, false
	}
	for _, ls := range b.lines {
		for _, l := range ls {
			if !l.Pending {
				n++
			}
		}
		if len(ls) > 0 && (oldest.IsZero() || ls[0].Time.Before(oldest)) {
			oldest = ls[0].Time
		}
	}
	return n, oldest, true
}

// Search starts a search for query, as typing it in the search field does.
func (m *Model) Search(query string) tea.Cmd {
	m.find.query = query
	return m.research()
}

// Matches is the number of matches found so far, and whether the search of the
// rings (running) or of the logs on disk (disk) is still under way.
func (m *Model) Matches() (n int, running, disk bool) { return m.find.total() }

// MaxInFlight is the budget of the bytes of lines read and not yet in the rings.
const MaxInFlight = maxInFlight

// InFlight returns the bytes of lines the current feed has in flight (read, not yet
// in the rings), and the most it ever had.
func (m *Model) InFlight() (now, peak int64) {
	if m.room == nil {
		return 0, 0
	}
	return m.room.used.Load(), m.room.peak.Load()
}
