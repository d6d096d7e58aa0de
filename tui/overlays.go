package tui

import (
	"fmt"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/widget"
)

// helpOverlay is the `?` overlay: every action of the active view, then the global ones, with
// all their keys. When it is taller than the screen, the moving keys scroll it; any
// other key closes it.
type helpOverlay struct {
	offset int // first line shown
	lines  int // lines of the last drawing, for scrolling
	room   int // lines that fit
}

func (h *helpOverlay) key(m *Model, k tea.KeyPressMsg) (tea.Cmd, bool) {
	if h.lines <= h.room {
		return nil, true
	}
	a, ok := m.ctx.Actions.Match(k, m.active().Kind())
	if !ok {
		return nil, true
	}
	last := h.lines - h.room
	switch a.Name {
	case widget.Up:
		h.offset = max(0, h.offset-1)
	case widget.Down:
		h.offset = min(last, h.offset+1)
	case widget.PageUp:
		h.offset = max(0, h.offset-h.room)
	case widget.PageDown:
		h.offset = min(last, h.offset+h.room)
	case widget.Top:
		h.offset = 0
	case widget.Bottom:
		h.offset = last
	default:
		return nil, true
	}
	return nil, false
}

func (h *helpOverlay) view(m *Model) string {
	t := m.ctx.Theme
	kind := m.active().Kind()
	var own, moving, global []common.Action
	for _, a := range m.ctx.Actions.For(kind) {
		if m.active().Typing() {
			// Text keys type into the focused field: list only the others.
			b, ok := common.WhileTyping(a.Binding)
			if !ok {
				continue
			}
			a.Binding = b
		}
		switch {
		case a.Global():
			global = append(global, a)
		case common.IsMove(a.Name):
			moving = append(moving, a)
		default:
			own = append(own, a)
		}
	}
	// A key the view's own actions take (space marks in the app list) does not also
	// page down: each key is listed with the one meaning it has here.
	taken := map[string]bool{}
	for _, a := range own {
		for _, k := range a.Binding.Keys() {
			taken[k] = true
		}
	}
	kept := moving[:0]
	for _, a := range moving {
		var keys []string
		for _, k := range a.Binding.Keys() {
			if !taken[k] {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			continue
		}
		a.Binding.SetKeys(keys...)
		kept = append(kept, a)
	}
	moving = kept
	all := append(append(append([]common.Action{}, own...), moving...), global...)
	keyW, helpW := 0, 0
	for _, a := range all {
		keyW = max(keyW, len(keysOf(a)))
		helpW = max(helpW, widget.Width(a.Help()))
	}
	// The box's border and padding take 4 columns; the descriptions get what the keys
	// leave of the screen, not a fixed half.
	inner := max(20, m.width-8)
	keyW = min(keyW, inner/3)
	helpW = min(helpW, inner-keyW-2)
	nameW := 0
	for _, a := range all {
		nameW = max(nameW, len(a.Name))
	}
	withNames := keyW+2+helpW+2+nameW <= inner
	var lines []string
	section := func(title string, acts []common.Action) {
		if len(acts) == 0 {
			return
		}
		if len(lines) > 0 {
			lines = append(lines, "")
		}
		lines = append(lines, t.TableHead.Render(title))
		for _, a := range acts {
			// A description wider than its column wraps under itself rather than lose
			// its end (at 80 columns: what space and z do, the sort keys).
			help := strings.Split(ansi.Wordwrap(a.Help(), helpW, ""), "\n")
			for i, h := range help {
				help[i] = widget.PadRight(h, helpW)
			}
			l := t.HelpKey.Render(widget.PadRight(keysOf(a), keyW)) + "  " + help[0]
			if withNames && string(a.Name) != a.Help() {
				// The action's name: what the palette runs and [keys] rebinds.
				l += "  " + t.Muted.Render(string(a.Name))
			}
			lines = append(lines, l)
			for _, h := range help[1:] {
				lines = append(lines, strings.Repeat(" ", keyW+2)+h)
			}
		}
	}
	section("This view ("+m.active().Title()+")", own)
	if n, ok := m.active().(interface{ HelpNote() string }); ok {
		lines = append(lines, "")
		for _, l := range strings.Split(ansi.Wordwrap(n.HelpNote(), inner, ""), "\n") {
			lines = append(lines, t.Muted.Render(l))
		}
	}
	section("Moving", moving)
	section("Everywhere", global)
	h.room = max(3, m.height-4) // the box: two borders, a blank line and the foot
	h.lines = len(lines)
	h.offset = min(h.offset, max(0, h.lines-h.room))
	foot := "any key closes · : runs an action by name"
	if h.lines > h.room {
		lines = lines[h.offset:min(len(lines), h.offset+h.room)]
		foot = fmt.Sprintf("↑/↓ pgup/pgdn scroll (%d-%d of %d) · any other key closes", h.offset+1, h.offset+len(lines), h.lines)
	}
	return t.Box.Render(strings.Join(lines, "\n") + "\n\n" + t.Muted.Render(foot))
}

// keysOf lists every key of an action.
func keysOf(a common.Action) string { return strings.Join(a.Binding.Keys(), " ") }

// palette is the `:` command palette: the actions of the active view, fuzzily
// filtered by name and help; Enter runs the selected one by name.
type palette struct {
	in      widget.Input
	cur     widget.Cursor
	matches []common.Action
}

// paletteRows is how many actions the palette lists at once.
const paletteRows = 10

func newPalette() *palette {
	p := &palette{in: widget.NewInput(": ")}
	p.in.Placeholder = "action name"
	p.in.Focus()
	return p
}

func (p *palette) filter(m *Model) {
	q := p.in.Value()
	type scored struct {
		a     common.Action
		score int
	}
	var hits []scored
	for _, a := range m.ctx.Actions.For(m.active().Kind()) {
		if a.Name == common.ActPalette || slices.ContainsFunc(hits, func(s scored) bool { return s.a.Name == a.Name }) {
			continue
		}
		s, _, ok := widget.Fuzzy(q, string(a.Name))
		if !ok {
			if s, _, ok = widget.Fuzzy(q, a.Help()); !ok {
				continue
			}
			s /= 2
		}
		hits = append(hits, scored{a, s})
	}
	slices.SortStableFunc(hits, func(x, y scored) int { return y.score - x.score })
	p.matches = p.matches[:0]
	for _, h := range hits {
		p.matches = append(p.matches, h.a)
	}
	p.cur.Clamp(len(p.matches), paletteRows)
}

func (p *palette) key(m *Model, k tea.KeyPressMsg) (tea.Cmd, bool) {
	var name common.ActionName
	if a, ok := m.ctx.Actions.Match(k, kindPalette); ok {
		name = a.Name
	}
	switch name {
	case actClosePalette:
		return nil, true
	case actRunAction:
		p.filter(m)
		if p.cur.Index < len(p.matches) {
			chosen := p.matches[p.cur.Index].Name
			// The palette closes first; the action may open another overlay (help),
			// which must stay open.
			m.over = nil
			cmd := m.run(chosen)
			return cmd, m.over == nil
		}
		return nil, true
	case common.ActUp, common.ActDown:
		p.cur.Do(string(name), len(p.matches), paletteRows)
	default:
		if p.in.Update(k) {
			p.cur = widget.Cursor{}
		}
	}
	p.filter(m)
	return nil, false
}

func (p *palette) view(m *Model) string {
	t := m.ctx.Theme
	p.filter(m)
	width := min(70, m.width-4)
	p.in.SetWidth(width - 6)
	var b strings.Builder
	b.WriteString(p.in.View(t))
	end := min(len(p.matches), p.cur.Offset+paletteRows)
	for i := p.cur.Offset; i < end; i++ {
		a := p.matches[i]
		desc := a.Help()
		if desc == string(a.Name) {
			desc = "" // the name says it all: no echo of it
		}
		line := widget.PadRight(string(a.Name), 16) + "  " + widget.PadRight(desc, 30) + "  " + keysOf(a)
		line = widget.PadRight(line, width-4)
		if i == p.cur.Index {
			b.WriteString("\n" + t.Selected.Render(line))
		} else {
			b.WriteString("\n" + line)
		}
	}
	if len(p.matches) == 0 {
		b.WriteString("\n" + t.Muted.Render("no action matches"))
	}
	return t.Box.Render(b.String())
}

// confirm asks a yes/no question before running yes.
type confirm struct {
	prompt string
	yes    tea.Cmd
}

func (c *confirm) key(m *Model, k tea.KeyPressMsg) (tea.Cmd, bool) {
	a, ok := m.ctx.Actions.Match(k, kindConfirm)
	switch {
	case ok && a.Name == actYes:
		return c.yes, true
	case ok && a.Name == actNo:
		return common.Notify("nothing done"), true
	}
	return nil, false
}

func (c *confirm) view(m *Model) string {
	t := m.ctx.Theme
	yes, _ := m.ctx.Actions.Get(actYes, kindConfirm)
	no, _ := m.ctx.Actions.Get(actNo, kindConfirm)
	// The question is folded to the screen (a box of it, border and padding, and a
	// column either side): a cancel's handle alone is 40 columns, and a box wider than
	// the screen was cut, question and border, at 80 columns.
	prompt := c.prompt
	if w := m.width - 8; w > 0 && ansi.StringWidth(prompt) > w {
		prompt = ansi.Wrap(prompt, w, "")
	}
	return t.Box.Render(t.Warning.Render(prompt) + "\n\n" +
		t.HelpKey.Render(keysOf(yes)) + " " + t.HelpDesc.Render("yes") + "   " +
		t.HelpKey.Render(keysOf(no)) + " " + t.HelpDesc.Render("no"))
}
