package wall

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/tui/common"
)

// Do runs an action of the action table on the wall.
func (m *Model) Do(action string) (tea.Cmd, bool) {
	if len(m.panes) == 0 {
		return nil, action != common.ActBack
	}
	s, _ := m.current()
	switch action {
	case common.ActBack:
		switch {
		case m.savePrompt:
			m.savePrompt = false
			m.saveInput.Blur()
		case m.typing:
			m.typing = false
			m.input.Blur()
			m.query = ""
			return m.research(), true
		case s.selecting:
			s.selecting = false
		case m.zoom:
			m.zoom = false
		case m.merged:
			m.merged = false
		default:
			return nil, false
		}
	case common.ActFollow:
		m.setFollow(s, !s.follow)
	case common.ActReplica:
		m.moveFocus(1)
	case common.ActPrevReplica:
		m.moveFocus(-1)
	case common.ActZoom:
		m.zoom = !m.zoom
		m.merged = false
	case common.ActMerged:
		m.merged = !m.merged
		m.zoom = false
	case common.ActHide:
		if len(m.visible()) > 1 {
			m.panes[m.focus].hidden = true
			m.moveFocus(1)
		} else {
			return common.Notify("the last pane stays"), true
		}
	case common.ActShowAll:
		for _, p := range m.panes {
			p.hidden = false
		}
	case common.ActNextPage, common.ActPrevPage:
		m.turnPage(action == common.ActNextPage)
	case common.ActWrap:
		s.wrap = !s.wrap
	case common.ActTimestamps:
		s.stamps = !s.stamps
	case common.ActStreams:
		switch s.streams {
		case sched.Stdout:
			s.streams = sched.Stderr
		case sched.Stderr:
			s.streams = sched.Combined
		default:
			s.streams = sched.Stdout
		}
	case common.ActSearch:
		m.typing = true
		m.input.SetValue(m.query)
		m.input.Focus()
	case common.ActNextMatch:
		m.nextMatch(true)
	case common.ActPrevMatch:
		m.nextMatch(false)
	case common.ActRegex:
		m.regex = !m.regex
		return m.research(), true
	case common.ActCase:
		m.caseSens = !m.caseSens
		return m.research(), true
	case common.ActOnlyMatches:
		m.only = !m.only
		if m.only && m.match == nil {
			return common.Notify("search first (/): only matching lines are shown then"), true
		}
	case common.ActContext:
		m.ctxStep = (m.ctxStep + 1) % len(contextSteps)
	case common.ActSave:
		m.savePrompt = true
		m.saveInput.SetValue(m.defaultSavePath())
		m.saveInput.Focus()
	case common.ActMark:
		if s.selecting {
			s.selecting = false
			break
		}
		k := m.walkerOf(s)
		h, tw := m.geometry()
		lines, _, _ := k.window(h, tw)
		if len(lines) == 0 {
			return nil, true
		}
		s.follow = false
		s.selecting = true
		s.mark, s.cursor = lines[len(lines)-1], lines[len(lines)-1]
	case common.ActCopy:
		return m.copySelection(s), true
	case common.ActSummary:
		m.summary = !m.summary
	case common.ActRefresh:
		for _, p := range m.panes {
			p.ring = newRing(m.opts.RingLines)
			p.attempt, p.matches, p.scanned = 0, nil, 0
			p.ended, p.err = false, nil
		}
		m.ended = false
		return tea.Batch(m.open(), m.research()), true
	case common.ActUp:
		return m.scroll(-1), true
	case common.ActDown:
		return m.scroll(1), true
	case common.ActPageUp:
		h, _ := m.geometry()
		return m.scroll(-max(1, h-1)), true
	case common.ActPageDown:
		h, _ := m.geometry()
		return m.scroll(max(1, h-1)), true
	case common.ActTop:
		if s.selecting {
			return m.scroll(-1 << 30), true
		}
		h, tw := m.geometry()
		s.follow = false
		m.walkerOf(s).top(h, tw)
		return m.readBackIfTop(s, 1), true
	case common.ActBottom:
		if s.selecting {
			return m.scroll(1 << 30), true
		}
		m.setFollow(s, true)
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
		for _, p := range k.srcs {
			m.panes[p].ring.forget()
		}
	}
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
	k := m.walkerOf(s)
	h, tw := m.geometry()
	if s.selecting {
		m.moveCursor(k, n, h, tw)
		return nil
	}
	if n < 0 {
		s.follow = false
		moved := k.up(-n, h, tw)
		if moved < -n {
			return m.readBackIfTop(s, -n-moved)
		}
		return nil
	}
	k.down(n)
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
func (m *Model) geometry() (h, tw int) {
	for _, r := range m.rects {
		if m.merged && r.p < 0 || !m.merged && r.p == m.focus {
			return max(1, r.h-1), m.textWidth(m.currentScroller(), r.w)
		}
	}
	return max(1, m.Ctx.Height-2), max(10, m.Ctx.Width-2)
}

func (m *Model) currentScroller() *scroller { s, _ := m.current(); return s }

// typed handles the keys of the search and save fields.
func (m *Model) typed(msg tea.Msg) tea.Cmd {
	if m.savePrompt {
		if k, ok := msg.(tea.KeyPressMsg); ok && k.Keystroke() == "enter" {
			m.savePrompt = false
			m.saveInput.Blur()
			return m.save(m.saveInput.Value())
		}
		m.saveInput.Update(msg)
		return nil
	}
	if !m.typing {
		return nil
	}
	if k, ok := msg.(tea.KeyPressMsg); ok && k.Keystroke() == "enter" {
		m.typing = false
		m.input.Blur()
		if m.match != nil && !m.haveCur {
			m.nextMatch(false)
		}
		return nil
	}
	if m.input.Update(msg) {
		m.query = m.input.Value()
		m.haveCur = false
		return m.research()
	}
	return nil
}

// research starts the search of every pane for the current query.
func (m *Model) research() tea.Cmd {
	if m.stopSearch != nil {
		m.stopSearch()
		m.stopSearch = nil
	}
	m.searchGen++
	m.searchErr = nil
	for _, p := range m.panes {
		p.matches, p.scanned = nil, 0
	}
	if m.query == "" {
		m.match = nil
		return nil
	}
	mt, err := newMatcher(m.query, m.regex, m.caseSens)
	if err != nil {
		m.match, m.searchErr = nil, err
		return nil
	}
	m.match = mt
	snaps := make([]snapshot, len(m.panes))
	for i, p := range m.panes {
		snaps[i] = p.ring.snapshot(p.ring.first)
		p.scanned = -1 // until the job answers
	}
	ctx, cancel := context.WithCancel(m.Ctx.Ctx)
	m.stopSearch = cancel
	return searchJob(ctx, m.ID(), m.searchGen, mt, snaps)
}

// searched takes a search job's matches and searches the lines that came since.
func (m *Model) searched(msg searchMsg) {
	if msg.gen != m.searchGen || m.match == nil {
		return
	}
	for i, p := range m.panes {
		if i >= len(msg.matches) {
			break
		}
		ms := msg.matches[i]
		p.matches = ms[lowerBound(ms, p.ring.first):]
		p.scanned = msg.upto[i]
		m.matchNew(p, p.scanned)
	}
}

// matchNew searches the lines of p from seq from on, when the search is up to date
// until there.
func (m *Model) matchNew(p *pane, from int64) {
	if m.match == nil || p.scanned != from {
		return
	}
	for seq := max(from, p.ring.first); seq < p.ring.n; seq++ {
		if e := p.ring.at(seq); !e.divider() && m.match.match(e.text) {
			p.matches = append(p.matches, seq)
		}
	}
	p.scanned = p.ring.n
}

// nextMatch moves to the next (or previous) match in time order across the visible
// panes, wrapping around, and shows it.
func (m *Model) nextMatch(forward bool) {
	if m.match == nil {
		return
	}
	panes := m.visible()
	k := m.walker(m.mview, nil)
	var curKey key
	if m.haveCur && m.cur.p < len(m.panes) && m.cur.seq >= m.panes[m.cur.p].ring.first && m.cur.seq < m.panes[m.cur.p].ring.n {
		curKey = k.keyOf(m.cur.p, m.cur.seq)
	} else if forward {
		curKey = key{t: -1 << 62}
	} else {
		curKey = key{t: 1 << 62}
	}
	best, found := ref{}, false
	var bestKey key
	pick := func(wrap bool) {
		for _, pi := range panes {
			p := m.panes[pi]
			for _, seq := range m.candidates(p, pi, curKey, forward, wrap) {
				kk := k.keyOf(pi, seq)
				if !found || forward && kk.less(bestKey) || !forward && bestKey.less(kk) {
					best, bestKey, found = ref{pi, seq}, kk, true
				}
			}
		}
	}
	pick(false)
	if !found {
		pick(true)
	}
	if !found {
		return
	}
	m.cur, m.haveCur = best, true
	h, tw := m.geometry()
	if m.merged {
		m.walkerOf(m.mview).reveal(best, h, tw)
		return
	}
	m.focus = best.p
	h, tw = m.geometry()
	m.walkerOf(m.panes[best.p].view).reveal(best, h, tw)
}

// candidates returns the match of pane p nearest after (or before) cur in time
// order, or with wrap the first (or last) one.
func (m *Model) candidates(p *pane, pi int, cur key, forward, wrap bool) []int64 {
	ms := p.matches
	if len(ms) == 0 {
		return nil
	}
	if wrap {
		if forward {
			return ms[:1]
		}
		return ms[len(ms)-1:]
	}
	k := m.walker(m.mview, nil)
	i := 0
	// The first match whose key is after cur (keys grow with seq within a pane).
	lo, hi := 0, len(ms)
	for lo < hi {
		mid := (lo + hi) / 2
		if cur.less(k.keyOf(pi, ms[mid])) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	i = lo
	if forward {
		if i < len(ms) {
			if kk := k.keyOf(pi, ms[i]); kk == cur && i+1 < len(ms) {
				return ms[i+1 : i+2]
			}
			return ms[i : i+1]
		}
		return nil
	}
	for i--; i >= 0; i-- {
		if k.keyOf(pi, ms[i]) != cur {
			return ms[i : i+1]
		}
	}
	return nil
}

// fetchedMsg carries lines read back from before a pane's ring.
type fetchedMsg struct {
	common.ViewID
	p     int
	first int64 // the ring's first seq when asked
	skip  int   // lines at the end that the ring already holds
	lines []sched.Line
	err   error
}

// readBackIfTop reads lines before the ring of the current pane back from the logs
// when the view is at its top and older lines were dropped.
func (m *Model) readBackIfTop(s *scroller, _ int) tea.Cmd {
	if m.merged || m.focus >= len(m.panes) {
		return nil
	}
	p := m.panes[m.focus]
	if p.fetching || p.ring.first == 0 || p.ring.len() == 0 || p.ring.back >= int64(p.ring.limit) {
		return nil
	}
	p.fetching = true
	first := p.ring.at(p.ring.first)
	t := first.time
	same := 0
	for seq := p.ring.first; seq < p.ring.n && p.ring.at(seq).time == t; seq++ {
		if !p.ring.at(seq).divider() {
			same++
		}
	}
	id, b, parent, h, fi := m.ID(), m.Ctx.Backend, m.Ctx.Ctx, m.h, m.focus
	role, k, firstSeq := p.role, p.k, p.ring.first
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, 30*time.Second)
		defer cancel()
		msg := fetchedMsg{ViewID: id, p: fi, first: firstSeq, skip: same}
		it, err := b.LogLines(ctx, h, role, k, sched.LogOptions{Until: time.Unix(0, t+1), Tail: readBack + same})
		if err != nil {
			msg.err = err
			return msg
		}
		defer it.Close()
		for {
			l, err := it.Next(ctx)
			if err != nil {
				break
			}
			msg.lines = append(msg.lines, l)
		}
		return msg
	}
}

// fetched puts lines read back in front of a ring.
func (m *Model) fetched(msg fetchedMsg) {
	if msg.p >= len(m.panes) {
		return
	}
	p := m.panes[msg.p]
	p.fetching = false
	if msg.err != nil || p.ring.first != msg.first {
		return
	}
	lines := msg.lines
	lines = lines[:max(0, len(lines)-msg.skip)]
	if room := int64(p.ring.limit) - p.ring.back; int64(len(lines)) > room {
		lines = lines[int64(len(lines))-room:]
	}
	if len(lines) == 0 {
		return
	}
	es := make([]entry, 0, len(lines))
	for i, l := range lines {
		if i > 0 && l.Attempt > lines[i-1].Attempt {
			es = append(es, entry{time: l.Time.UnixNano(), attempt: int32(l.Attempt), flags: flagDivider})
		}
		es = append(es, makeEntry(l))
	}
	p.ring.prepend(es)
	if m.match != nil && p.scanned >= 0 {
		var front []int64
		for seq := p.ring.first; seq < msg.first; seq++ {
			if e := p.ring.at(seq); !e.divider() && m.match.match(e.text) {
				front = append(front, seq)
			}
		}
		p.matches = append(front, p.matches...)
	}
}

// selection returns the lines between the mark and the cursor of s, oldest first.
func (m *Model) selection(s *scroller) []ref {
	k := m.walkerOf(s)
	a, b := s.mark, s.cursor
	if k.keyOf(b.p, b.seq).less(k.keyOf(a.p, a.seq)) {
		a, b = b, a
	}
	last := k.keyOf(b.p, b.seq)
	var out []ref
	from := k.anchorsAt(a)
	k.forward(from, func(r ref) bool {
		if last.less(k.keyOf(r.p, r.seq)) {
			return false
		}
		out = append(out, r)
		return true
	})
	return out
}

// lineText is a line as saved or copied: plain text, with the role/k prefix in the
// merged view.
func (m *Model) lineText(r ref, prefix bool) string {
	p := m.panes[r.p]
	e := p.ring.at(r.seq)
	text := plainText(e.text)
	if e.divider() {
		text = m.dividerText(p, e)
	}
	if prefix {
		return p.name() + " | " + text
	}
	return text
}

// copySelection copies the selected lines to the clipboard through OSC 52.
func (m *Model) copySelection(s *scroller) tea.Cmd {
	if !s.selecting {
		return common.Notify("select lines first (v, then ↑/↓), then y copies them")
	}
	refs := m.selection(s)
	var b strings.Builder
	for i, r := range refs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(m.lineText(r, m.merged))
	}
	s.selecting = false
	return tea.Batch(tea.SetClipboard(b.String()), common.Notify(fmt.Sprintf("copied %d lines to the clipboard", len(refs))))
}

// defaultSavePath names the file the save prompt offers.
func (m *Model) defaultSavePath() string {
	what := "merged"
	if !m.merged {
		p := m.panes[m.focus]
		what = p.role + "-" + fmt.Sprint(p.k)
	}
	if m.onlyMatches() {
		what += "-matches"
	}
	return m.h.AppID + "-" + what + ".log"
}

// save writes the lines of the current view (the focused pane or the merged view,
// filtered as shown) to path.
func (m *Model) save(path string) tea.Cmd {
	path = strings.TrimSpace(path)
	if path == "" {
		return nil
	}
	s, srcs := m.current()
	k := m.walker(s, srcs)
	from := make([]int64, len(m.panes))
	for _, p := range srcs {
		from[p] = m.panes[p].ring.first
	}
	var b strings.Builder
	n := 0
	k.forward(from, func(r ref) bool {
		b.WriteString(m.lineText(r, m.merged))
		b.WriteByte('\n')
		n++
		return true
	})
	data := b.String()
	return func() tea.Msg {
		if dir := filepath.Dir(path); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return common.NoticeMsg{Text: "save: " + err.Error(), Err: true}
			}
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			return common.NoticeMsg{Text: "save: " + err.Error(), Err: true}
		}
		return common.NoticeMsg{Text: fmt.Sprintf("saved %d lines to %s", n, path)}
	}
}
