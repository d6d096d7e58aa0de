package apps

import (
	"strings"

	"github.com/wick-dev/wick/tui/render"
	"github.com/wick-dev/wick/tui/widget"
)

// The list has two layouts. The wide one shows every column as `wick list` does, the
// whole handle first. When that does not fit (80 or 100 columns), the narrow one
// shows the handle as a short tag of its scheduler and the app id (the session and
// "://" go: describe shows the whole handle). Its NAME column shows only the names
// the app id does not start with (a Slurm job id), and goes when there are none.
// Then it gives up, in order, NAME's width down to nameRoom, the CPU/RSS column,
// NAME's width down to nameMin, DURATION (a running app's is its AGE), and the app
// id's middle (its start, the app's name and a sweep's values, and its last cells
// stay). A sweep's row runs its counts over the columns after its id rather than cut
// them.

// nameRoom is the width NAME gives up to before the CPU/RSS column goes.
const nameRoom = 12

// nameMin is the narrowest NAME is made before other columns give way.
const nameMin = 8

// handleMin is the narrowest the narrow layout's handle column is made: the tag, the
// start of the app id and its last cells.
const handleMin = 18

// schedHead heads the tag part of the narrow layout's handle column.
const schedHead = "SCHED"

// setNarrow makes the narrow layout's table from the wide one's rows and headers.
func (m *Model) setNarrow(rows [][]string) {
	tags := make([]string, len(rows))
	tw := len(schedHead)
	m.legend = m.legend[:0]
	seen := map[string]bool{}
	for r, i := range m.rows {
		if i < 0 {
			continue
		}
		sched, _, _ := strings.Cut(rows[r][render.AppColHandle], "://")
		tags[r] = render.SchedTag(sched)
		tw = max(tw, widget.Width(tags[r]))
		if tags[r] != sched && !seen[sched] {
			seen[sched] = true
			m.legend = append(m.legend, tags[r]+"="+sched)
		}
	}
	names := false
	narrow := make([][]string, len(rows))
	for r, row := range rows {
		narrow[r] = append([]string(nil), row...)
		i := m.rows[r]
		if i < 0 { // a sweep's row: its id, then its counts
			narrow[r][render.AppColHandle] = row[render.AppColHandle] + "  " + row[render.AppColName]
			narrow[r][render.AppColName] = ""
			// Its DURATION and EXIT are "-": blank, they do not read as its own.
			narrow[r][render.AppColDuration], narrow[r][render.AppColExit] = "", ""
			continue
		}
		h, cell := row[render.AppColHandle], row[render.AppColName]
		id := h[strings.LastIndex(h, "/")+1:]
		name := render.Escape(m.apps[i].Name)
		marks, ok := strings.CutSuffix(cell, name)
		if !ok {
			marks, name = "", cell
		}
		if name == "" || id == name || strings.HasPrefix(id, name+"-") {
			name = "" // the app id says it
		} else {
			names = true
		}
		narrow[r][render.AppColHandle] = widget.PadRight(tags[r], tw) + " " + marks + id
		narrow[r][render.AppColName] = name
	}
	heads := append([]string(nil), m.table.Headers...)
	short := map[int][2]string{
		render.AppColHandle:   {"HANDLE", widget.PadRight(schedHead, tw) + " APP ID"},
		render.AppColRunning:  {"RUNNING", "RUN"},
		render.AppColDuration: {"DURATION", "DUR"},
	}
	for c, s := range short {
		heads[c] = s[1] + strings.TrimPrefix(heads[c], s[0])
	}
	m.narrow.Headers = heads
	m.narrow.SetRowsSpill(narrow, render.AppColHandle, m.isGroup)
	m.narrow.Hide = nil
	if !names {
		m.narrow.Hide = []int{render.AppColName}
	}
	first, then := m.errSteps()
	steps := append(first, widget.Step{Col: render.AppColName, Min: nameRoom})
	if c := m.usageCol(); c >= 0 {
		steps = append(steps, widget.Step{Col: c, Drop: true})
	}
	steps = append(steps, widget.Step{Col: render.AppColName, Min: nameMin})
	steps = append(steps, then...)
	m.narrow.Steps = append(steps,
		widget.Step{Col: render.AppColDuration, Drop: true},
		widget.Step{Col: render.AppColHandle, Min: handleMin})
	m.narrow.CutMiddle = []int{render.AppColHandle}
}

// fit chooses the layout for width columns: the wide one when it fits with no more
// than NAME shrunk, and ERROR down to errRoom, else the narrow one.
func (m *Model) fit(width int) (t *widget.Table, widths []int, narrow bool) {
	w := m.table.Widths(width)
	nat := m.table.Natural()
	ok := true
	for c := range w {
		switch {
		case c == render.AppColName:
		case c == m.errCol && w[c] >= min(nat[c], errRoom):
		case w[c] != nat[c]:
			ok = false
		}
	}
	if ok {
		return &m.table, m.growError(w, nat, width), false
	}
	return &m.narrow, m.growError(m.narrow.Widths(width), m.narrow.Natural(), width), true
}

// growError gives the ERROR column the room that widths w leave in width, up to its
// widest cell (nat): the columns that gave way for it (DURATION) do not come back.
func (m *Model) growError(w, nat []int, width int) []int {
	c := m.errCol
	if c < 0 || c >= len(w) || w[c] == widget.Hidden {
		return w
	}
	used, n := 0, 0
	for _, x := range w {
		if x != widget.Hidden {
			used += x
			n++
		}
	}
	used += 2 * max(0, n-1)
	if room := width - used; room > 0 {
		w[c] += min(room, max(0, nat[c]-w[c]))
	}
	return w
}
