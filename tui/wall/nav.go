package wall

import (
	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/tui/common"
)

// Moving about the wall: focus, pages, scrolling and following.

// layoutAction answers the actions on which panes are shown and how: focus, pages,
// zoom, the merged view and hidden panes; esc leaves the zoomed or merged view.
func (m *Model) layoutAction(action common.ActionName) (tea.Cmd, bool) {
	switch action {
	case common.ActBack:
		switch {
		case m.zoom:
			m.zoom = false
		case m.merged:
			m.merged = false
		default:
			return nil, false
		}
	case ActReplica:
		m.moveFocus(1)
	case ActPrevReplica:
		m.moveFocus(-1)
	case ActZoom:
		m.zoom, m.merged = !m.zoom, false
	case ActMerged:
		m.merged, m.zoom = !m.merged, false
	case ActHide:
		if len(m.visible()) == 1 {
			return common.Notify("the last pane stays"), true
		}
		m.panes[m.focus].hidden = true
		m.moveFocus(1)
	case ActShowAll:
		for _, p := range m.panes {
			p.hidden = false
		}
	case ActNextPage, ActPrevPage:
		m.turnPage(action == ActNextPage)
	default:
		return nil, false
	}
	return nil, true
}

// navAction answers the actions that move in the current view: scrolling, and
// following (G follows every pane, as F does).
func (m *Model) navAction(action common.ActionName) (tea.Cmd, bool) {
	s, _ := m.current()
	switch action {
	case ActFollow:
		m.setFollow(s, !s.follow)
	case ActFollowAll:
		m.followAll()
	case common.ActUp:
		return m.scroll(-1), true
	case common.ActDown:
		return m.scroll(1), true
	case common.ActPageUp:
		return m.scroll(-m.pageLines()), true
	case common.ActPageDown:
		return m.scroll(m.pageLines()), true
	case common.ActBottom:
		if s.selecting {
			return m.scroll(1 << 30), true
		}
		m.followAll()
	default:
		return nil, false
	}
	return nil, true
}

// setFollow turns following on or off; following again forgets the lines read back.
func (m *Model) setFollow(s *scroller, on bool) {
	k := m.walkerOf(s) // pins the anchors at the end while following
	s.follow = on
	if on {
		s.selecting = false
		m.forget(s, k.srcs)
	}
}

// followAll makes every pane and the merged view follow (F, G).
func (m *Model) followAll() {
	for _, p := range m.panes {
		m.setFollow(p.view, true)
	}
	m.setFollow(m.mview, true)
}

// pageLines is how far a page up or down moves: the current view's height, less the
// line kept for context.
func (m *Model) pageLines() int {
	h, _ := m.geometry()
	return max(1, h-1)
}

// paused lists the visible panes that do not follow.
func (m *Model) paused() []int {
	var out []int
	for _, i := range m.visible() {
		if !m.panes[i].view.follow {
			out = append(out, i)
		}
	}
	return out
}

// walkerOf returns a walker over the panes of scroller s.
func (m *Model) walkerOf(s *scroller) *walker {
	if s == m.mview {
		return m.walker(s, m.visible())
	}
	for i, p := range m.panes {
		if p.view == s {
			return m.walker(s, []int{i})
		}
	}
	return m.walker(s, nil)
}

// moveFocus focuses the next (d > 0) or previous visible pane.
func (m *Model) moveFocus(d int) {
	vis := m.visible()
	if len(vis) == 0 {
		return
	}
	at := 0
	for i, p := range vis {
		if p == m.focus {
			at = i
		}
	}
	if m.panes[m.focus].hidden {
		m.focus = vis[0]
		return
	}
	m.focus = vis[((at+d)%len(vis)+len(vis))%len(vis)]
}

// turnPage focuses the first pane of the next or previous page.
func (m *Model) turnPage(next bool) {
	vis := m.visible()
	per := m.perPage()
	if per <= 0 || len(vis) <= per {
		return
	}
	at := 0
	for i, p := range vis {
		if p == m.focus {
			at = i
		}
	}
	pages := (len(vis) + per - 1) / per
	pg := at / per
	if next {
		pg = (pg + 1) % pages
	} else {
		pg = (pg - 1 + pages) % pages
	}
	m.focus = vis[pg*per]
	m.zoom = false
}

// scroll moves the current scroller (or its selection cursor) by n lines; scrolling
// up past the oldest line held reads older lines back from the logs.
func (m *Model) scroll(n int) tea.Cmd {
	s, _ := m.current()
	if s == nil {
		return nil
	}
	m.moved()
	k := m.walkerOf(s)
	h, tw := m.geometry()
	if s.selecting {
		m.moveCursor(k, n, h, tw)
		return nil
	}
	if s == m.mview {
		if n < 0 {
			s.follow = false
		}
		return m.mergedMove(n)
	}
	if n < 0 {
		s.follow = false
		if moved := k.up(-n, h, tw); moved < -n {
			return m.readBackIfTop(s)
		}
		return nil
	}
	if moved := k.down(n); moved < n {
		return m.readOnIfBottom(s)
	}
	return nil
}

// moveCursor moves the selection cursor by n lines and scrolls to keep it shown.
func (m *Model) moveCursor(k *walker, n, h, tw int) {
	s := k.s
	cur := s.cursor
	if n > 0 {
		a := k.anchorsAt(cur)
		a[cur.p] = cur.seq + 1
		moved := 0
		k.forward(a, func(r ref) bool { cur = r; moved++; return moved < n })
	} else {
		moved := 0
		k.backward(k.anchorsAt(cur), func(r ref) bool { cur = r; moved++; return moved < -n })
	}
	s.cursor = cur
	// Keep the cursor in the window.
	lines, _, _ := k.window(h, tw)
	if len(lines) > 0 && k.keyOf(cur.p, cur.seq).less(k.keyOf(lines[0].p, lines[0].seq)) {
		copy(s.anchor, k.anchorsAt(cur))
		s.anchor[cur.p] = cur.seq + 1
		k.down(max(0, h-1))
	} else if len(lines) > 0 && k.keyOf(lines[len(lines)-1].p, lines[len(lines)-1].seq).less(k.keyOf(cur.p, cur.seq)) {
		copy(s.anchor, k.anchorsAt(cur))
		s.anchor[cur.p] = cur.seq + 1
	}
}

// geometry is the height and text width of the current scroller, as last drawn.
func (m *Model) geometry() (h, tw int) { return m.geometryOf(m.currentScroller()) }

// geometryOf is the height and text width of scroller s, as last drawn.
func (m *Model) geometryOf(s *scroller) (h, tw int) {
	for _, r := range m.rects {
		if s == m.mview && r.p < 0 || r.p >= 0 && r.p < len(m.panes) && m.panes[r.p].view == s {
			return max(1, r.h-1), m.textWidth(s, r.w)
		}
	}
	return max(1, m.Ctx.Height-2), max(10, m.Ctx.Width-2)
}

func (m *Model) currentScroller() *scroller { s, _ := m.current(); return s }
