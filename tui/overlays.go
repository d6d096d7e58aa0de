package tui

import (
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/wick-dev/wick/tui/common"
)

// helpOverlay is the `?` overlay: every action of the active view, then the global ones, with
// all their keys. Any key closes it.
type helpOverlay struct{}

func (*helpOverlay) key(*Model, tea.KeyPressMsg) (tea.Cmd, bool) { return nil, true }

func (*helpOverlay) view(m *Model) string {
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
		case isMove(a.Name):
			moving = append(moving, a)
		default:
			own = append(own, a)
		}
	}
	// One column with every key and the action names when it fits; else two
	// columns (this view | moving and everywhere) with the first keys only.
	all := append(append(append([]common.Action{}, own...), moving...), global...)
	twoCols := len(all)+8 > m.height-2
	keys := func(a common.Action) string {
		ks := a.Binding.Keys()
		if twoCols && len(ks) > 2 {
			ks = ks[:2]
		}
		return strings.Join(ks, " ")
	}
	keyW := 0
	for _, a := range all {
		keyW = max(keyW, len(keys(a)))
	}
	section := func(lines []string, title string, acts []common.Action) []string {
		if len(acts) == 0 {
			return lines
		}
		if len(lines) > 0 {
			lines = append(lines, "")
		}
		lines = append(lines, t.TableHead.Render(title))
		for _, a := range acts {
			l := t.HelpKey.Render(common.PadRight(keys(a), keyW)) + "  " + common.PadRight(a.Help(), 20)
			if !twoCols && a.Name != a.Help() {
				l += " " + t.Muted.Render(a.Name)
			}
			lines = append(lines, l)
		}
		return lines
	}
	foot := t.Muted.Render("any key closes · : runs an action by name")
	left := section(nil, "This view ("+m.active().Title()+")", own)
	if !twoCols {
		lines := section(section(left, "Moving", moving), "Everywhere", global)
		return t.Box.Render(strings.Join(lines, "\n") + "\n\n" + foot)
	}
	right := section(section(nil, "Moving", moving), "Everywhere", global)
	body := lipgloss.JoinHorizontal(lipgloss.Top, strings.Join(left, "\n"), "   ", strings.Join(right, "\n"))
	return t.Box.Render(body + "\n\n" + foot)
}

// isMove reports whether an action moves the cursor or scrolls.
func isMove(name string) bool {
	switch name {
	case common.ActUp, common.ActDown, common.ActPageUp, common.ActPageDown, common.ActTop, common.ActBottom:
		return true
	}
	return false
}

// keysOf lists every key of an action.
func keysOf(a common.Action) string { return strings.Join(a.Binding.Keys(), " ") }

// palette is the `:` command palette: the actions of the active view, fuzzily
// filtered by name and help; Enter runs the selected one by name.
type palette struct {
	in      common.Input
	cur     common.Cursor
	matches []common.Action
}

// paletteRows is how many actions the palette lists at once.
const paletteRows = 10

func newPalette() *palette {
	p := &palette{in: common.NewInput(": ")}
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
		s, _, ok := common.Fuzzy(q, a.Name)
		if !ok {
			if s, _, ok = common.Fuzzy(q, a.Help()); !ok {
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
	switch k.Keystroke() {
	case "esc", "ctrl+c":
		return nil, true
	case "enter":
		p.filter(m)
		if p.cur.Index < len(p.matches) {
			name := p.matches[p.cur.Index].Name
			m.over = nil
			return m.run(name), m.over == nil
		}
		return nil, true
	case "up", "ctrl+p", "shift+tab":
		p.cur.Do(common.ActUp, len(p.matches), paletteRows)
	case "down", "ctrl+n", "tab":
		p.cur.Do(common.ActDown, len(p.matches), paletteRows)
	default:
		if p.in.Update(k) {
			p.cur = common.Cursor{}
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
		line := common.PadRight(a.Name, 14) + "  " + common.PadRight(a.Help(), 26) + "  " + keysOf(a)
		line = common.PadRight(line, width-4)
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
	a, ok := m.ctx.Actions.Match(k, common.KindConfirm)
	switch {
	case ok && a.Name == common.ActYes:
		return c.yes, true
	case ok && a.Name == common.ActNo, k.Keystroke() == "ctrl+c":
		return common.Notify("nothing done"), true
	}
	return nil, false
}

func (c *confirm) view(m *Model) string {
	t := m.ctx.Theme
	yes, _ := m.ctx.Actions.Get(common.ActYes, common.KindConfirm)
	no, _ := m.ctx.Actions.Get(common.ActNo, common.KindConfirm)
	return t.Box.Render(t.Warning.Render(c.prompt) + "\n\n" +
		t.HelpKey.Render(keysOf(yes)) + " " + t.HelpDesc.Render("yes") + "   " +
		t.HelpKey.Render(keysOf(no)) + " " + t.HelpDesc.Render("no"))
}
