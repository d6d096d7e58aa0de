package wall

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/themes"
	"github.com/wick-dev/wick/tui/render"
	"github.com/wick-dev/wick/tui/widget"
)

// Layout knobs.
const (
	// minPaneWidth and minPaneHeight are the smallest pane worth drawing: a title and
	// three lines of 40 columns (narrower, a log line is mostly cut: a user reads fewer
	// panes better than many slivers). More replicas than fit go on further pages.
	minPaneWidth  = 40
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
	w, h := m.tileArea()
	return perPageFor(w, h)
}

// tileArea is the size the panes are tiled for: the body less the header, whether or
// not the summary shows, so that the layout does not jump when the app ends and the
// summary takes its rows (the panes are shorter then, not rearranged).
func (m *Model) tileArea() (w, h int) {
	return m.Ctx.Width, max(1, m.Ctx.Height-1)
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
	W, H := m.area()
	var body []string
	m.rects = m.rects[:0]
	switch {
	case m.mx.chart:
		body = m.drawChart(W, H)
	case m.merged:
		m.rects = append(m.rects, rect{p: -1, x: 0, y: 1, w: W, h: H})
		body = m.drawMerged(W, H)
	case m.zoom:
		m.rects = append(m.rects, rect{p: m.focus, x: 0, y: 1, w: W, h: H})
		body = m.drawPane(m.focus, W, H)
	default:
		body = m.drawGrid(W, H)
	}
	m.markDrawn()
	var b strings.Builder
	b.WriteString(widget.PadRight(m.header(), m.Ctx.Width))
	for _, l := range body {
		b.WriteByte('\n')
		b.WriteString(l)
	}
	if sh := m.summaryHeight(); sh > 0 {
		for _, l := range m.drawSummary(sh) {
			b.WriteByte('\n')
			b.WriteString(widget.PadRight(l, m.Ctx.Width))
		}
	}
	return b.String()
}

// header is the first line: the app, the mode, following, and the search.
func (m *Model) header() string {
	t := m.Ctx.Theme
	if m.saving.open {
		m.saving.input.SetWidth(m.Ctx.Width - 12)
		return m.saving.input.View(t) + t.Muted.Render("  enter saves · esc cancels")
	}
	if m.find.typing {
		m.find.input.SetWidth(max(10, m.Ctx.Width-40))
		return m.find.input.View(t) + "  " + m.find.info(t)
	}
	parts := []string{t.Accent.Render(m.h.AppID)}
	// why is the app's error, or why it waits: the longest part, it gets the room the
	// others leave (a long error ate the replica count, the search and paused).
	var why string
	var whyStyle func(...string) string
	if m.haveApp {
		parts = append(parts, t.State(m.status.State, m.status.State.String()))
		if e := m.appError(); e != "" {
			why, whyStyle = e, t.Fail.Render
		} else if m.status.State == spec.Pending && m.status.Msg != "" {
			// Why the app waits, as its scheduler says (Slurm: "pending: Resources").
			why, whyStyle = render.Escape(render.FirstLine(m.status.Msg)), t.Warning.Render
		}
	}
	rest := m.headerRest()
	sep := t.Muted.Render(" · ")
	if why != "" {
		fixed := widget.Width(strings.Join(append(parts, rest...), " · ")) + len(" · ")
		if room := m.Ctx.Width - fixed; room >= minWhy {
			parts = append(parts, whyStyle(widget.Truncate(why, room, "…")))
		}
	}
	return strings.Join(append(parts, rest...), sep)
}

// minWhy is the narrowest room an app's error gets in the wall's header; with less it
// is left to the summary below the panes.
const minWhy = 12

// headerRest is the header after the app and its state: the panes, the mode, follow,
// selecting and the search.
func (m *Model) headerRest() []string {
	t := m.Ctx.Theme
	var parts []string
	vis := m.visible()
	parts = append(parts, m.paneCount())
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
	case m.merged && m.mview.follow:
		parts = append(parts, "following")
	case m.merged:
		parts = append(parts, t.Warning.Render("paused (f follows)"))
	default:
		// Follow is per pane: "following" only when every pane shown follows.
		parts = append(parts, m.followInfo())
	}
	if s != nil && s.selecting {
		parts = append(parts, t.Warning.Render("selecting: ↑/↓ extend · y copies · esc"))
	}
	if m.find.query != "" || m.find.err != nil {
		parts = append(parts, m.find.info(t))
	}
	return parts
}

// followInfo says which panes are paused: none ("following"), all, or their names.
func (m *Model) followInfo() string {
	t := m.Ctx.Theme
	paused := m.paused()
	switch {
	case len(paused) == 0:
		return "following"
	case len(m.visible()) == 1:
		return t.Warning.Render("paused (f follows)")
	case len(paused) == len(m.visible()) && len(paused) > 1:
		return t.Warning.Render("all panes paused (F follows all)")
	}
	const most = 3
	names := make([]string, 0, most+1)
	for j, i := range paused {
		if j == most {
			names = append(names, fmt.Sprintf("+%d more", len(paused)-most))
			break
		}
		names = append(names, m.panes[i].name())
	}
	return t.Warning.Render("paused: " + strings.Join(names, ", ") + " (F follows all)")
}

// drawGrid tiles the visible panes of the focused pane's page.
func (m *Model) drawGrid(W, H int) []string {
	vis := m.visible()
	TW, TH := m.tileArea()
	per := perPageFor(TW, TH)
	at := 0
	for i, p := range vis {
		if p == m.focus {
			at = i
		}
	}
	page := vis[at/per*per : min(len(vis), at/per*per+per)]
	cols, rows, ok := grid(len(page), TW, TH)
	if ok && H/rows < 2 {
		// The summary leaves too few rows for this shape: tile for what is left.
		cols, rows, ok = grid(len(page), W, H)
	}
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
	switch {
	case p.rank >= 0:
		parts = append(parts, t.Muted.Render(fmt.Sprintf("%s/%d", p.role, p.k)))
	case p.node:
		parts = append(parts, t.Muted.Render("node"))
	}
	if p.known {
		parts = append(parts, t.State(p.st.State, p.st.State.String()))
		if p.st.ExitCode != nil {
			parts = append(parts, fmt.Sprintf("exit %d", *p.st.ExitCode))
		}
		if p.st.Restarts > 0 {
			parts = append(parts, fmt.Sprintf("↻%d", p.st.Restarts))
		}
	}
	if m.stoppedFirst(p) {
		parts = append(parts, t.Fail.Render("stopped first"))
	}
	// The rate and the usage (the GPU use first) give way, whole, to what follows
	// them (paused, matches, an error) when the pane is narrow (two panes at 80
	// columns): usage cut to "RSS 12.0…" said nothing true.
	rate, use := -1, -1
	if p.rate > 0 && !p.ended {
		rate = len(parts)
		parts = append(parts, fmt.Sprintf("%s/s", count(int64(p.rate+0.5))))
	}
	if u := m.usageBadge(p); u != "" {
		use = len(parts)
		parts = append(parts, t.Muted.Render(u))
	}
	gpu := -1
	if g := m.gpuBadge(p); g != "" {
		gpu = len(parts)
		parts = append(parts, t.Muted.Render(g))
	}
	if !p.view.follow {
		if b := behind(t, m.walker(p.view, []int{i}).count(), p.ended); b != "" {
			parts = append(parts, b)
		}
	}
	if p.view.streams != sched.Combined {
		parts = append(parts, string(p.view.streams))
	}
	if m.find.match != nil {
		parts = append(parts, t.Match.Render(plural(len(m.find.matchesOf(i)), "match", "matches")))
	}
	if sh := p.shown(); sh.first > 0 {
		parts = append(parts, t.Muted.Render(fmt.Sprintf("%s older lines on disk", count(sh.first))))
	}
	if p.err != nil {
		parts = append(parts, t.Fail.Render(p.err.Error()))
	}
	for _, k := range []int{gpu, use, rate} {
		if k >= 0 && widget.Width(strings.Join(parts, " ")) > w {
			parts[k] = ""
		}
	}
	parts = slices.DeleteFunc(parts, func(s string) bool { return s == "" })
	if b := m.metricBadge(i, w-widget.Width(strings.Join(parts, " "))-1); b != "" {
		parts = append(parts, b)
	}
	return widget.PadRight(strings.Join(parts, " "), w)
}

// behind is the badge of a view that does not follow: "+N new" lines came since it
// stopped, or "paused" with none; for a stream that has ended nothing more comes, so
// the lines under the view are "+N below" (a finished pane said "+1.2k new"), and
// there is nothing to pause.
func behind(t *themes.Theme, n int64, ended bool) string {
	switch {
	case ended && n > 0:
		return t.Muted.Render(fmt.Sprintf("+%s below", count(n)))
	case ended:
		return ""
	case n > 0:
		return t.Warning.Render(fmt.Sprintf("+%s new", count(n)))
	}
	return t.Warning.Render("paused")
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
		if b := behind(t, k.count(), m.ended); b != "" {
			head = append(head, b)
		}
	}
	if m.mview.streams != sched.Combined {
		head = append(head, string(m.mview.streams))
	}
	if n := m.mergedOlder(); n > 0 {
		head = append(head, t.Muted.Render(fmt.Sprintf("%s older lines on disk", count(n))))
	}
	if m.mb.reading() {
		head = append(head, t.Muted.Render("reading the logs…"))
	}
	if m.mb.err != nil {
		head = append(head, t.Fail.Render(m.mb.err.Error()))
	}
	out := []string{widget.PadRight("  "+strings.Join(head, " "), W)}
	return append(out, m.drawLines(k, W, H-1, true)...)
}

// prefixWidth is the width of the role/k prefixes of the merged view.
func (m *Model) prefixWidth() int {
	// Measured once for a set of panes: it is asked for in every row of the merged
	// view, and a wall has up to thousands of panes.
	if len(m.panes) == 0 {
		return 1
	}
	if m.prefix.n != len(m.panes) || m.prefix.first != m.panes[0] {
		w := 0
		for _, p := range m.panes {
			w = max(w, len(p.name()))
		}
		m.prefix.n, m.prefix.first, m.prefix.w = len(m.panes), m.panes[0], w+1
	}
	return m.prefix.w
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
	tw := m.textWidth(k.s, w)
	pend := m.pending(k, h)
	lines, skip, _ := k.window(h-len(pend), tw)
	rows := make([]string, 0, h+8)
	sel := selectionOf(k)
	rc := &k.s.rows
	key := rowKey{w: w, tw: tw, stamps: k.s.stamps, wrap: k.s.wrap, merged: merged, theme: m.Ctx.Theme}
	if merged {
		key.prefix = m.prefixWidth()
	}
	rc.begin(key)
	// A line's rows depend on its entry and the key alone, unless it is selected, a
	// divider (its attempt's end) or the search marks matches.
	plain := m.find.match == nil
	for li, r := range lines {
		e := k.ring(r.p).at(r.seq)
		selected := sel.has(k.keyOf(r.p, r.seq))
		cache := plain && !selected && !e.divider()
		drawn, ok := []string(nil), false
		if cache {
			drawn, ok = rc.get(r, e)
		}
		if !ok {
			drawn = m.lineRowsDrawn(k, r, e, selected, merged, w, tw)
			if cache {
				rc.put(r, e, drawn)
			}
		}
		if li == 0 && skip > 0 && skip < len(drawn) {
			drawn = drawn[skip:]
		}
		rows = append(rows, drawn...)
	}
	rc.end()
	if len(rows) > h-len(pend) {
		rows = rows[len(rows)-(h-len(pend)):]
	}
	for _, r := range pend {
		rows = append(rows, m.pendingRow(k, r, w, tw, merged))
	}
	if len(rows) == 0 && h > 0 {
		rows = append(rows, widget.PadRight(" "+m.Ctx.Theme.Muted.Render(m.noLines(k.s)), w))
	}
	blank := strings.Repeat(" ", w)
	for len(rows) < h {
		rows = append(rows, blank)
	}
	return rows
}

// lineRowsDrawn is line r's rows as drawn in a view w wide (tw for the text): its
// lead, its text cut or wrapped, each row reset and padded to w.
func (m *Model) lineRowsDrawn(k *walker, r ref, e *entry, selected, merged bool, w, tw int) []string {
	lead := m.lineLead(k, r, e, selected, merged)
	parts := m.lineRows(k.s, m.styledText(r, e, selected), e, tw)
	for pi, part := range parts {
		l := lead
		if pi > 0 {
			l = strings.Repeat(" ", widget.Width(lead))
		}
		parts[pi] = widget.PadRight(l+part+"\x1b[0m", w)
	}
	return parts
}

// rowCache keeps the rows a view drew of its lines in its last frame, so that the
// next frame draws them again without measuring, cutting and padding them: following
// a replica at 20 lines/s, a pane has a new line or two a frame and the rest only move
// up. It holds the rows of one frame (those of the frame before are dropped as the
// next ends), and a line's rows are taken again only while the line's entry (its
// text, time and flags) and how the view draws (rowKey) are the same.
type rowCache struct {
	key       rowKey
	prev, cur map[ref]cachedRows
}

// rowKey is what a line's rows depend on besides its entry.
type rowKey struct {
	w, tw, prefix        int
	stamps, wrap, merged bool
	theme                *themes.Theme
}

// cachedRows are a line's rows, with the entry they were drawn from.
type cachedRows struct {
	text  string
	time  int64
	flags uint32
	rows  []string
}

// begin starts a frame drawn the way key says; rows of another key are dropped.
func (c *rowCache) begin(key rowKey) {
	if c.cur == nil {
		c.prev, c.cur = map[ref]cachedRows{}, map[ref]cachedRows{}
	}
	if key != c.key {
		clear(c.prev)
		c.key = key
	}
}

// get returns the rows line r was drawn as in the last frame, if its entry is e's.
func (c *rowCache) get(r ref, e *entry) ([]string, bool) {
	cr, ok := c.prev[r]
	if !ok || cr.time != e.time || cr.flags != e.flags || cr.text != e.text {
		return nil, false
	}
	c.cur[r] = cr
	return cr.rows, true
}

// put keeps the rows line r (entry e) was drawn as in this frame.
func (c *rowCache) put(r ref, e *entry, rows []string) {
	c.cur[r] = cachedRows{text: e.text, time: e.time, flags: e.flags, rows: rows}
}

// end ends the frame: its rows are the ones the next frame may take.
func (c *rowCache) end() {
	c.prev, c.cur = c.cur, c.prev
	clear(c.cur)
}

// span is the selection of a scroller, from its first line to its last; on is false
// when it has none.
type span struct {
	on   bool
	a, b key
}

func selectionOf(k *walker) span {
	if !k.s.selecting {
		return span{}
	}
	a, b := k.keyOf(k.s.mark.p, k.s.mark.seq), k.keyOf(k.s.cursor.p, k.s.cursor.seq)
	if b.less(a) {
		a, b = b, a
	}
	return span{on: true, a: a, b: b}
}

// has reports whether the line of key kk is selected.
func (s span) has(kk key) bool { return s.on && !kk.less(s.a) && !s.b.less(kk) }

// lineLead is what comes before a line's text: a gutter marking stderr (or the
// selection), its time when timestamps are on, and its pane in the merged view.
func (m *Model) lineLead(k *walker, r ref, e *entry, selected, merged bool) string {
	t := m.Ctx.Theme
	lead := " "
	switch {
	case selected:
		lead = t.Accent.Render("▶")
	case e.stderr():
		lead = t.Stderr("▌")
	}
	if k.s.stamps {
		lead += t.Muted.Render(e.when().Local().Format("15:04:05.000")) + " "
	}
	if merged {
		lead += t.Prefix(r.p, fmt.Sprintf("%-*s", m.prefixWidth(), m.panes[r.p].name()))
	}
	return lead
}

// styledText is line r's text as drawn: a divider's words, the selection's plain text,
// the search's matches marked (the current one apart), or stderr's color.
func (m *Model) styledText(r ref, e *entry, selected bool) string {
	t := m.Ctx.Theme
	switch {
	case e.divider():
		return t.Muted.Render(m.dividerText(m.panes[r.p], e))
	case selected:
		return t.Selected.Render(plainText(e.text))
	case m.find.match != nil:
		cur := m.find.haveCur && m.find.cur == r
		return highlight(e.text, m.find.match, func(s string) string { return t.Match.Render(s) }, cur,
			func(s string) string { return t.Selected.Render(s) })
	case e.stderr() && !strings.Contains(e.text, "\x1b"):
		return t.Stderr(e.text)
	}
	return e.text
}

// lineRows cuts a line's text to rows of tw cells: wrapped when s wraps, else one
// row, cut with an ellipsis (a long line says how long it is).
func (m *Model) lineRows(s *scroller, text string, e *entry, tw int) []string {
	switch {
	case s.wrap && !e.divider():
		return strings.Split(ansi.Hardwrap(text, tw, true), "\n")
	case e.long():
		// One row: the start of the line, and how long it is.
		note := m.Ctx.Theme.Muted.Render(longNote(e))
		return []string{widget.Truncate(text, max(1, tw-widget.Width(note)), "…") + note}
	}
	return []string{widget.Truncate(text, tw, "…")}
}

// noLines says why a view shows no line.
func (m *Model) noLines(s *scroller) string {
	switch {
	case m.find.onlyMatches():
		return "no matching lines"
	case s.streams != sched.Combined:
		return "no " + string(s.streams) + " lines"
	}
	return "no lines yet"
}

// pendingLine is a line still being written, of pane p.
type pendingLine struct {
	p int
	e *entry
}

// pending lists the lines still being written that view k shows below its lines:
// while it follows, each stream's of each pane that passes the stream filter, in
// time order, at most h-1 of them.
func (m *Model) pending(k *walker, h int) []pendingLine {
	if !k.s.follow || k.s.selecting || m.find.onlyMatches() || h < 2 {
		return nil
	}
	var out []pendingLine
	for _, p := range k.srcs {
		for _, e := range m.panes[p].pend {
			if e != nil && k.streamOK(e) {
				out = append(out, pendingLine{p, e})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b pendingLine) int { return cmp.Compare(a.e.time, b.e.time) })
	if len(out) > h-1 {
		out = out[len(out)-(h-1):]
	}
	return out
}

// longNote says that a long line is shown by its start, and how long it is when
// known.
func longNote(e *entry) string {
	what := "line over 16 KB"
	if n := e.size(); n > 0 {
		what = "line of " + render.Bytes(uint64(n))
	}
	return " [" + what + ": the rest is in the logs]"
}

// pendingMark is the gutter of a line still being written.
const pendingMark = "⋯"

// pendingRow draws a line still being written: marked in the gutter, cut to one row,
// and saying so when the replica wrote more of it than is held.
func (m *Model) pendingRow(k *walker, r pendingLine, w, tw int, merged bool) string {
	t := m.Ctx.Theme
	lead := t.Warning.Render(pendingMark)
	if k.s.stamps {
		lead += t.Muted.Render(r.e.when().Local().Format("15:04:05.000")) + " "
	}
	if merged {
		lead += t.Prefix(r.p, fmt.Sprintf("%-*s", m.prefixWidth(), m.panes[r.p].name()))
	}
	text := r.e.text
	if r.e.stderr() && !strings.Contains(text, "\x1b") {
		text = t.Stderr(text)
	}
	if r.e.long() {
		note := t.Muted.Render(longNote(r.e))
		text = widget.Truncate(text, max(1, tw-widget.Width(note)), "…") + note
	}
	return widget.PadRight(lead+widget.Truncate(text, tw, "…")+"\x1b[0m", w)
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
	head := t.Accent.Render("Summary") + " " + t.State(m.status.State, m.status.State.String())
	if e := m.appError(); e != "" {
		head += " " + t.Fail.Render("error: "+e)
	}
	out := []string{head + t.Muted.Render(" (i hides)")}
	// The cells of each row, plain, so that each column is padded to its widest.
	type row struct {
		i                                  int
		st                                 spec.AppState
		state, exit, dur, restarts, metric string
		last                               string
	}
	var rows []row
	var wState, wExit, wDur, wRestarts, wMetric int
	for i, p := range m.panes {
		if len(out)+len(rows) >= h {
			break
		}
		exit := "exit -"
		if p.st.ExitCode != nil {
			exit = fmt.Sprintf("exit %d", *p.st.ExitCode)
		}
		dur := "-"
		if !p.st.Started.IsZero() && !p.st.Ended.IsZero() {
			dur = render.Duration(p.st.Ended.Sub(p.st.Started))
		}
		last := plainText(p.lastStderr)
		if last == "" {
			last = "(no stderr)"
		}
		st := p.st.State
		if !p.known {
			st = spec.UnknownState
		}
		r := row{i: i, st: st, state: st.String(), exit: exit, dur: dur,
			restarts: fmt.Sprintf("restarts %d", p.st.Restarts), metric: m.metricSummary(i), last: last}
		wState, wExit, wDur = max(wState, widget.Width(r.state)), max(wExit, widget.Width(r.exit)), max(wDur, widget.Width(r.dur))
		wRestarts, wMetric = max(wRestarts, widget.Width(r.restarts)), max(wMetric, widget.Width(r.metric))
		rows = append(rows, r)
	}
	pad := func(s string, w int) string { return s + strings.Repeat(" ", max(0, w-widget.Width(s))) }
	for _, r := range rows {
		line := "  " + t.Prefix(r.i, pad(m.panes[r.i].name(), m.prefixWidth())) + "  " + t.State(r.st, pad(r.state, wState)) +
			"  " + pad(r.exit, wExit) + "  " + pad(r.dur, wDur) + "  " + pad(r.restarts, wRestarts) + "  "
		if wMetric > 0 {
			line += pad(r.metric, wMetric) + "  "
		}
		out = append(out, line+t.Muted.Render("last stderr: "+r.last))
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
