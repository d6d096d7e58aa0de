package apps

import (
	"strconv"
	"strings"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/render"
	"github.com/wick-dev/wick/tui/widget"
)

// The list's ERROR column says why, as `wick list`'s does: a failed app's root cause
// (render.AppError: "rank 3: RuntimeError: ...", "python/0: exit code 3") and a
// running app's hang alarm, which the list's alarm reading checks (alarms.go). It is
// shown while an app the list shows has one, last, and is the first column to give
// room: down to errRoom cells before the others give any, then down to errMin before
// DURATION goes and the app id is cut, then to a few cells. A cut cause keeps its
// start, which names the rank and the exception; describe shows it whole.
const (
	errHeader = "ERROR"
	errRoom   = 28
	errMin    = 16
)

// errorCell is the ERROR cell of app a: its hang alarm while it runs (hangs), else
// what `wick list` prints.
func (m *Model) errorCell(a *spec.AppStatus) string {
	if hg := m.hangs[a.Handle]; hg != nil && a.State == spec.Running {
		return render.Escape(hangCell(hg, m.now))
	}
	return render.AppError(a, render.Plain{})
}

// hangCell is a hang alarm in a few cells, who first ("hang: rank 1 stopped first,
// at step 2 · quiet 6m10s"): spec.Hang.Message says it in full, in describe and the
// wall's header.
func hangCell(h *spec.Hang, now time.Time) string {
	quiet := now.Sub(h.Since).Round(time.Second)
	var b strings.Builder
	b.WriteString("hang: ")
	switch {
	case len(h.Ranks) > 0:
		b.WriteString(strings.Join(h.Ranks, ", ") + " stopped first")
		if h.Step >= 0 {
			b.WriteString(", at step " + itoa(h.Step))
		}
	case h.Step >= 0:
		b.WriteString("every rank at step " + itoa(h.Step))
	default:
		b.WriteString("no output or new step")
	}
	b.WriteString(" · quiet " + render.Duration(quiet))
	return b.String()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// addErrorColumn adds the ERROR column to the table's headers and rows when an app it
// shows has an error or a hang alarm, and records its index (-1 when it has none).
func (m *Model) addErrorColumn(rows [][]string) {
	m.errCol = -1
	cells := make([]string, len(m.rows))
	shown := false
	for r, i := range m.rows {
		if i < 0 {
			continue // a sweep's row
		}
		if cells[r] = m.errorCell(&m.apps[i]); cells[r] != "" {
			shown = true
		}
	}
	if !shown {
		return
	}
	m.table.Headers = append(m.table.Headers, errHeader)
	m.errCol = len(m.table.Headers) - 1
	for r := range rows {
		rows[r] = append(rows[r], cells[r])
	}
}

// usageCol is the CPU/RSS column's index, -1 when it is not shown.
func (m *Model) usageCol() int {
	n := len(render.AppHeaders)
	if len(m.table.Headers) > n && m.table.Headers[n] != errHeader {
		return n
	}
	return -1
}

// errSteps are the narrowing steps of the ERROR column, before (first) and after
// (then) those of the other columns; none when it is not shown.
func (m *Model) errSteps() (first, then []widget.Step) {
	if m.errCol < 0 {
		return nil, nil
	}
	return []widget.Step{{Col: m.errCol, Min: errRoom}}, []widget.Step{{Col: m.errCol, Min: errMin}}
}
