package wall

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/common"
)

// Layout knobs.
const (
	// minPaneWidth and minPaneHeight are the smallest pane worth drawing: a title and
	// three lines of 24 columns. More replicas than fit go on further pages.
	minPaneWidth  = 24
	minPaneHeight = 4
	// logAspect is how many columns per row a log pane wants to look balanced.
	logAspect = 4
	// stampWidth is the width of a timestamp column, "15:04:05.000 ".
	stampWidth = 13
)

// tilings are the pane counts a page is tiled for, each with its grid shapes (columns
// x rows). The shape whose panes are "squarest" for logs wins: a cell is about twice
// as tall as wide, and a log line wants about twice as many columns as a pane wants
// rows, so a pane of 4 columns per row counts as square.
var tilings = []struct {
	n      int
	shapes [][2]int
}{
	{1, [][2]int{{1, 1}}},
	{2, [][2]int{{2, 1}, {1, 2}}},
	{4, [][2]int{{2, 2}, {4, 1}, {1, 4}}},
	{6, [][2]int{{3, 2}, {2, 3}}},
	{8, [][2]int{{4, 2}, {2, 4}}},
	{9, [][2]int{{3, 3}}},
	{12, [][2]int{{4, 3}, {3, 4}}},
	{16, [][2]int{{4, 4}}},
}

// grid returns the best shape for n panes in w x h, and whether the panes are big
// enough.
func grid(n, w, h int) (cols, rows int, ok bool) {
	for _, t := range tilings {
		if t.n < n {
			continue
		}
		best := -1
		for _, s := range t.shapes {
			cw, ch := w/s[0], h/s[1]
			if cw < minPaneWidth || ch < minPaneHeight {
				continue
			}
			if score := min(cw/logAspect, ch); score > best {
				best, cols, rows = score, s[0], s[1]
			}
		}
		return cols, rows, best >= 0
	}
	return 0, 0, false
}

// perPageFor is how many panes a page of w x h holds.
func perPageFor(w, h int) int {
	per := 1
	for _, t := range tilings {
		if _, _, ok := grid(t.n, w, h); ok {
			per = t.n
		}
	}
	return per
}

// area is the size of the pane area: the body less the header and the summary.
func (m *Model) area() (w, h int) {
	return m.Ctx.Width, max(1, m.Ctx.Height-1-m.summaryHeight())
}

func (m *Model) perPage() int {
	w, h := m.area()
	return perPageFor(w, h)
}

func (m *Model) summaryHeight() int {
	if !m.summary || !m.status.State.Terminal() || len(m.panes) == 0 {
		return 0
	}
	return min(len(m.panes)+1, max(2, m.Ctx.Height/3))
}

// View draws the header, the panes (or the merged view, or the zoomed pane) and the
// summary.
func (m *Model) View() string {
	t := m.Ctx.Theme
	if m.err != nil {
		return t.Accent.Render(m.Title()) + "\n" + t.Fail.Render(m.err.Error())
	}
	if len(m.panes) == 0 {
		if m.haveApp {
			return t.Accent.Render(m.Title()) + "\n" + t.Muted.Render("this app has no replicas")
		}
		return t.Muted.Render("reading the app…")
	}
	if m.panes[m.focus].hidden {
		m.moveFocus(1)
	}
	W, H := m.area()
	var body []string
	m.rects = m.rects[:0]
	switch {
	case m.merged:
		m.rects = append(m.rects, rect{p: -1, x: 0, y: 1, w: W, h: H})
		body = m.drawMerged(W, H)
	case m.zoom:
		m.rects = append(m.rects, rect{p: m.focus, x: 0, y: 1, w: W, h: H})
		body = m.drawPane(m.focus, W, H)
	default:
		body = m.drawGrid(W, H)
	}
	var b strings.Builder
	b.WriteString(common.PadRight(m.header(), m.Ctx.Width))
	for _, l := range body {
		b.WriteByte('\n')
		b.WriteString(l)
	}
	if sh := m.summaryHeight(); sh > 0 {
		for _, l := range m.drawSummary(sh) {
			b.WriteByte('\n')
			b.WriteString(common.PadRight(l, m.Ctx.Width))
		}
	}
	return b.String()
}

// header is the first line: the app, the mode, following, and the search.
func (m *Model) header() string {
	t := m.Ctx.Theme
	if m.savePrompt {
		m.saveInput.SetWidth(m.Ctx.Width - 12)
		return m.saveInput.View(t) + t.Muted.Render("  enter saves · esc cancels")
	}
	if m.typing {
		m.input.SetWidth(max(10, m.Ctx.Width-40))
		return m.input.View(t) + "  " + m.searchInfo()
	}
	parts := []string{t.Accent.Render(m.h.AppID)}
	if m.haveApp {
		parts = append(parts, t.State(m.status.State, m.status.State.String()))
	}
	vis := m.visible()
	parts = append(parts, fmt.Sprintf("%d replicas", len(m.panes)))
	if hidden := len(m.panes) - len(vis); hidden > 0 {
		parts = append(parts, fmt.Sprintf("%d hidden (X shows)", hidden))
	}
	switch {
	case m.merged:
		parts = append(parts, "merged")
	case m.zoom:
		parts = append(parts, "zoomed on "+m.panes[m.focus].name())
	default:
		if per := m.perPage(); len(vis) > per {
			at := 0
			for i, p := range vis {
				if p == m.focus {
					at = i
				}
			}
			parts = append(parts, fmt.Sprintf("page %d/%d ([ ])", at/per+1, (len(vis)+per-1)/per))
		}
	}
	s, _ := m.current()
	switch {
	case m.ended:
		parts = append(parts, "end of logs")
	case s != nil && s.follow:
		parts = append(parts, "following")
	default:
		parts = append(parts, t.Warning.Render("paused (f follows)"))
	}
	if s != nil && s.selecting {
		parts = append(parts, t.Warning.Render("selecting: ↑/↓ extend · y copies · esc"))
	}
	if m.query != "" || m.searchErr != nil {
		parts = append(parts, m.searchInfo())
	}
	return strings.Join(parts, t.Muted.Render(" · "))
}

// searchInfo describes the search: the query, its mode and the match count.
func (m *Model) searchInfo() string {
	t := m.Ctx.Theme
	if m.searchErr != nil {
		return t.Fail.Render("bad regex: " + m.searchErr.Error())
	}
	var flags []string
	if m.regex {
		flags = append(flags, "regex")
	}
	if m.caseSens {
		flags = append(flags, "case")
	}
	if m.only {
		flags = append(flags, fmt.Sprintf("only matches ±%d", m.context()))
	}
	out := ""
	if !m.typing {
		out = t.Match.Render("/"+m.query) + " "
	}
	if m.match != nil {
		n, pending := 0, false
		for _, p := range m.panes {
			n += len(p.matches)
			pending = pending || p.scanned < 0
		}
		c := plural(n, "match", "matches")
		if pending {
			c = "searching…"
		}
		out += t.Muted.Render(c)
	}
	if len(flags) > 0 {
		out += t.Muted.Render(" [" + strings.Join(flags, ", ") + "]")
	}
	return out
}

// drawGrid tiles the visible panes of the focused pane's page.
func (m *Model) drawGrid(W, H int) []string {
	vis := m.visible()
	per := perPageFor(W, H)
	at := 0
	for i, p := range vis {
		if p == m.focus {
			at = i
		}
	}
	page := vis[at/per*per : min(len(vis), at/per*per+per)]
	cols, rows, ok := grid(len(page), W, H)
	if !ok {
		cols, rows = 1, 1
		page = []int{m.focus}
	}
	out := make([]string, H)
	for r := range rows {
		y0, y1 := r*H/rows, (r+1)*H/rows
		cells := make([][]string, cols)
		widths := make([]int, cols)
		for c := range cols {
			x0, x1 := c*W/cols, (c+1)*W/cols
			w := x1 - x0
			if c > 0 {
				w-- // the separator
			}
			widths[c] = w
			i := r*cols + c
			if i < len(page) {
				x := x0
				if c > 0 {
					x++
				}
				m.rects = append(m.rects, rect{p: page[i], x: x, y: 1 + y0, w: w, h: y1 - y0})
				cells[c] = m.drawPane(page[i], w, y1-y0)
			}
		}
		sep := m.Ctx.Theme.Muted.Render("│")
		for y := y0; y < y1; y++ {
			var b strings.Builder
			for c := range cols {
				if c > 0 {
					b.WriteString(sep)
				}
				if cells[c] != nil {
					b.WriteString(cells[c][y-y0])
				} else {
					b.WriteString(strings.Repeat(" ", widths[c]))
				}
			}
			out[y] = b.String()
		}
	}
	return out
}

// title is a pane's title line: role/k, state, exit code, restarts, lines per second,
// and the badges (new lines while paused, dropped lines, matches).
func (m *Model) title(i int, w int) string {
	t := m.Ctx.Theme
	p := m.panes[i]
	focused := i == m.focus && !m.merged
	mark := "  "
	if focused {
		mark = t.Accent.Render("▸ ")
	}
	parts := []string{mark + t.Prefix(i, p.name())}
	if p.known {
		parts = append(parts, t.State(p.st.State, p.st.State.String()))
		if p.st.ExitCode != nil {
			parts = append(parts, fmt.Sprintf("exit %d", *p.st.ExitCode))
		}
		if p.st.Restarts > 0 {
			parts = append(parts, fmt.Sprintf("↻%d", p.st.Restarts))
		}
	}
	if p.rate > 0 && !p.ended {
		parts = append(parts, fmt.Sprintf("%s/s", count(int64(p.rate+0.5))))
	}
	k := m.walker(p.view, []int{i})
	if !p.view.follow {
		if n := k.count(); n > 0 {
			parts = append(parts, t.Warning.Render(fmt.Sprintf("+%s new", count(n))))
		} else {
			parts = append(parts, t.Warning.Render("paused"))
		}
	}
	if p.view.streams != sched.Combined {
		parts = append(parts, string(p.view.streams))
	}
	if m.match != nil {
		parts = append(parts, t.Match.Render(plural(len(p.matches), "match", "matches")))
	}
	if p.ring.first > 0 {
		parts = append(parts, t.Muted.Render(fmt.Sprintf("%s dropped", count(p.ring.first))))
	}
	if p.err != nil {
		parts = append(parts, t.Fail.Render(p.err.Error()))
	}
	s := strings.Join(parts, " ")
	if focused {
		return common.PadRight(s, w)
	}
	return common.PadRight(s, w)
}

// drawPane draws pane i in w x h: its title and its lines.
func (m *Model) drawPane(i, w, h int) []string {
	out := make([]string, 0, h)
	out = append(out, m.title(i, w))
	p := m.panes[i]
	k := m.walker(p.view, []int{i})
	out = append(out, m.drawLines(k, w, h-1, false)...)
	return out
}

// drawMerged draws the merged view of the visible panes.
func (m *Model) drawMerged(W, H int) []string {
	t := m.Ctx.Theme
	vis := m.visible()
	k := m.walker(m.mview, vis)
	head := []string{t.Accent.Render("merged") + " " + t.Muted.Render(fmt.Sprintf("%d panes in time order", len(vis)))}
	if !m.mview.follow {
		if n := k.count(); n > 0 {
			head = append(head, t.Warning.Render(fmt.Sprintf("+%s new", count(n))))
		} else {
			head = append(head, t.Warning.Render("paused"))
		}
	}
	if m.mview.streams != sched.Combined {
		head = append(head, string(m.mview.streams))
	}
	out := []string{common.PadRight("  "+strings.Join(head, " "), W)}
	return append(out, m.drawLines(k, W, H-1, true)...)
}

// prefixWidth is the width of the role/k prefixes of the merged view.
func (m *Model) prefixWidth() int {
	w := 0
	for _, p := range m.panes {
		w = max(w, len(p.name()))
	}
	return w + 1
}

// textWidth is the width left for text in a pane w wide.
func (m *Model) textWidth(s *scroller, w int) int {
	tw := w - 1
	if s != nil && s.stamps {
		tw -= stampWidth
	}
	if s == m.mview {
		tw -= m.prefixWidth()
	}
	return max(1, tw)
}

// drawLines draws the rows of walker k's window, each exactly w wide.
func (m *Model) drawLines(k *walker, w, h int, merged bool) []string {
	t := m.Ctx.Theme
	tw := m.textWidth(k.s, w)
	lines, skip, _ := k.window(h, tw)
	rows := make([]string, 0, h+8)
	var selA, selB key
	if k.s.selecting {
		selA, selB = k.keyOf(k.s.mark.p, k.s.mark.seq), k.keyOf(k.s.cursor.p, k.s.cursor.seq)
		if selB.less(selA) {
			selA, selB = selB, selA
		}
	}
	for li, r := range lines {
		p := m.panes[r.p]
		e := p.ring.at(r.seq)
		var lead string
		gutter := " "
		if e.stderr() {
			gutter = t.Stderr("▌")
		}
		selected := false
		if k.s.selecting {
			kk := k.keyOf(r.p, r.seq)
			selected = !kk.less(selA) && !selB.less(kk)
			if selected {
				gutter = t.Accent.Render("▶")
			}
		}
		lead = gutter
		if k.s.stamps {
			lead += t.Muted.Render(e.when().Local().Format("15:04:05.000")) + " "
		}
		if merged {
			lead += t.Prefix(r.p, fmt.Sprintf("%-*s", m.prefixWidth(), p.name()))
		}
		var text string
		switch {
		case e.divider():
			text = t.Muted.Render(m.dividerText(p, e))
		case selected:
			text = t.Selected.Render(plainText(e.text))
		case m.match != nil:
			cur := m.haveCur && m.cur == r
			text = highlight(e.text, m.match, func(s string) string { return t.Match.Render(s) }, cur,
				func(s string) string { return t.Selected.Render(s) })
		case e.stderr() && !strings.Contains(e.text, "\x1b"):
			text = t.Stderr(e.text)
		default:
			text = e.text
		}
		var parts []string
		if k.s.wrap && !e.divider() {
			parts = strings.Split(ansi.Hardwrap(text, tw, true), "\n")
		} else {
			parts = []string{ansi.Truncate(text, tw, "…")}
		}
		if li == 0 && skip > 0 && skip < len(parts) {
			parts = parts[skip:]
		}
		for pi, part := range parts {
			l := lead
			if pi > 0 {
				l = strings.Repeat(" ", ansi.StringWidth(lead))
			}
			rows = append(rows, common.PadRight(l+part+"\x1b[0m", w))
		}
	}
	if len(rows) > h {
		rows = rows[len(rows)-h:]
	}
	blank := strings.Repeat(" ", w)
	if len(rows) == 0 && h > 0 {
		msg := "no lines yet"
		if m.onlyMatches() {
			msg = "no matching lines"
		} else if k.s.streams != sched.Combined {
			msg = "no " + string(k.s.streams) + " lines"
		}
		rows = append(rows, common.PadRight(" "+t.Muted.Render(msg), w))
	}
	for len(rows) < h {
		rows = append(rows, blank)
	}
	return rows
}

// dividerText is what a retry divider says: the attempt it starts and how the one
// before ended. That comes from the replica's recorded attempts; exits covers a
// scheduler that records none (local_docker) or a run dropped from them.
func (m *Model) dividerText(p *pane, e *entry) string {
	s := fmt.Sprintf("── attempt %d", e.attempt+1)
	prev := int(e.attempt) - 1
	if a, ok := p.st.Attempt(prev); ok && a.ExitCode != nil {
		s += fmt.Sprintf(", previous exit %d", *a.ExitCode)
	} else if code, ok := p.exits[prev]; ok {
		s += fmt.Sprintf(", previous exit %d", code)
	}
	return s + " ──"
}

// drawSummary lists each replica's ending: exit code, duration, restarts and its last
// stderr line.
func (m *Model) drawSummary(h int) []string {
	t := m.Ctx.Theme
	out := []string{t.Accent.Render("Summary") + " " + t.State(m.status.State, m.status.State.String()) +
		t.Muted.Render(" (i hides)")}
	for i, p := range m.panes {
		if len(out) >= h {
			break
		}
		exit := "-"
		if p.st.ExitCode != nil {
			exit = fmt.Sprint(*p.st.ExitCode)
		}
		dur := "-"
		if !p.st.Started.IsZero() && !p.st.Ended.IsZero() {
			dur = p.st.Ended.Sub(p.st.Started).Round(100 * time.Millisecond).String()
		}
		last := plainText(p.lastStderr)
		if last == "" {
			last = "(no stderr)"
		}
		st := p.st.State
		if !p.known {
			st = spec.UnknownState
		}
		out = append(out, fmt.Sprintf("  %s  %s  exit %s  %s  restarts %d  %s",
			t.Prefix(i, fmt.Sprintf("%-*s", m.prefixWidth(), p.name())), t.State(st, fmt.Sprintf("%-9s", st.String())),
			exit, dur, p.st.Restarts, t.Muted.Render("last stderr: "+last)))
	}
	return out
}

// paneAt returns the pane drawn at body position (x, y).
func (m *Model) paneAt(x, y int) (int, bool) {
	for _, r := range m.rects {
		if r.p >= 0 && x >= r.x && x < r.x+r.w && y >= r.y && y < r.y+r.h {
			return r.p, true
		}
	}
	return 0, false
}

// plural says "1 match", "2 matches".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
