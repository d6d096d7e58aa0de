package cli

import (
	"bufio"
	"io"
	"os"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/sched"
)

// eraseLine moves to the start of the terminal's line and clears it.
const eraseLine = "\r\x1b[2K"

// liveKey names one stream of one replica: each has at most one pending line.
type liveKey struct {
	role    string
	replica int
	stream  sched.Stream
}

// livePrinter prints followed log lines on a terminal with the unfinished line of a
// progress bar kept live below them: the pending line (sched.Line.Pending) most
// recently updated is drawn on the last row and rewritten in place (\r, erase line)
// as it changes; committed lines are printed above it, and the committed line that
// ends it takes its place. Pending lines are drawn only when no other line is ready
// (idle), so a burst of updates costs one redraw. Over a pipe it is not used: readers
// there are not asked for pending lines and get committed lines only.
type livePrinter struct {
	p     *linePrinter
	w     *bufio.Writer
	width func() int // columns of the terminal, 0 if unknown

	pending map[liveKey]sched.Line
	seq     map[liveKey]int // when each pending line was last updated
	n       int
	drawn   bool // a pending line is on the last row
	dirty   bool // the pending line to draw changed since it was drawn
}

func newLivePrinter(p *linePrinter, w *bufio.Writer, out io.Writer) *livePrinter {
	return &livePrinter{p: p, w: w, width: func() int { return termWidth(out) }, pending: map[liveKey]sched.Line{}, seq: map[liveKey]int{}}
}

// termWidth returns the columns of the terminal w writes to, or 0.
func termWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}

// emit takes one line from the iterators.
func (lp *livePrinter) emit(l sched.Line) error {
	key := liveKey{l.Role, l.Replica, l.Stream}
	if l.Pending {
		lp.n++
		lp.pending[key], lp.seq[key] = l, lp.n
		lp.dirty = true
		return nil
	}
	if _, ok := lp.pending[key]; ok {
		delete(lp.pending, key)
		delete(lp.seq, key)
		lp.dirty = true
	}
	lp.erase()
	return lp.p.print(l)
}

func (lp *livePrinter) erase() {
	if lp.drawn {
		lp.w.WriteString(eraseLine)
		lp.drawn = false
	}
}

// idle draws the latest pending line, if it changed or was erased, and flushes.
func (lp *livePrinter) idle() error {
	if lp.dirty || !lp.drawn && len(lp.pending) > 0 {
		lp.erase()
		lp.dirty = false
		if l, ok := lp.latest(); ok {
			lp.w.WriteString(lp.render(l))
			lp.drawn = true
		}
	}
	return lp.w.Flush()
}

// latest returns the pending line updated last.
func (lp *livePrinter) latest() (sched.Line, bool) {
	var best liveKey
	found := false
	for k := range lp.pending {
		if !found || lp.seq[k] > lp.seq[best] {
			best, found = k, true
		}
	}
	return lp.pending[best], found
}

// render formats a pending line as one row: prefix and text, cut to the terminal's
// width so that it never wraps (a wrapped row could not be rewritten in place).
func (lp *livePrinter) render(l sched.Line) string {
	prefix := lp.p.prefixOf(l.Role, l.Replica)
	if lp.p.timestamps {
		prefix = sched.Timestamp(l.Time) + " " + prefix
	}
	// The text is one \r segment; escape sequences and control bytes could move the
	// cursor, so they go (colors with them).
	text := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, ansi.Strip(l.Text))
	s := prefix + text
	if l.Cut {
		s += "…"
	}
	if w := lp.width(); w > 1 {
		s = ansi.Truncate(s, w-1, "…")
	}
	return s
}

// finish erases a pending line left on the screen: its replica ended without
// finishing it (what it wrote is in the logs).
func (lp *livePrinter) finish() error {
	lp.erase()
	return lp.w.Flush()
}
