package picker

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/tui/widget"
)

// listTop is the body row of the first component: below the filter and a blank line.
const listTop = 2

// sidePaneMin is the narrowest body that still gets a side pane; below it the list
// takes the whole width and the help shows under it.
const sidePaneMin = 90

func (m *Model) listHeight() int { return max(1, m.Ctx.Height-listTop) }

func (m *Model) listWidth() int {
	if m.Ctx.Width < sidePaneMin {
		return m.Ctx.Width
	}
	return max(30, m.Ctx.Width*2/5)
}

// View draws the filter, the list and the side pane.
func (m *Model) View() string {
	t := m.Ctx.Theme
	m.filter.SetWidth(max(10, m.listWidth()-4))
	count := ""
	if m.loaded {
		count = t.Muted.Render(fmt.Sprintf("  %d/%d", len(m.matches), len(m.all)))
	}
	top := m.filter.View(t) + count + "\n\n"
	if !m.loaded {
		return top + t.Muted.Render("  loading components…")
	}
	if m.err != nil {
		top = m.filter.View(t) + count + "\n" + t.Fail.Render(widget.PadRight("  "+m.err.Error(), m.Ctx.Width)) + "\n"
	}
	list := m.listView()
	if m.Ctx.Width < sidePaneMin {
		return top + list
	}
	lw := m.listWidth()
	pane := t.Pane.Width(m.Ctx.Width - lw - 1).Height(m.listHeight()).Render(m.sideView(m.Ctx.Width - lw - 3))
	return top + lipgloss.JoinHorizontal(lipgloss.Top, widget.Fit(list, lw, m.listHeight()), " ", widget.Fit(pane, m.Ctx.Width-lw-1, m.listHeight()))
}

func (m *Model) listView() string {
	t := m.Ctx.Theme
	if len(m.matches) == 0 {
		return t.Muted.Render("  no component matches")
	}
	width, height := m.listWidth(), m.listHeight()
	nameW := 0
	for _, mt := range m.matches {
		nameW = max(nameW, len(mt.c.Name))
	}
	nameW = min(nameW, width/2)
	m.cur.Clamp(len(m.matches), height)
	var b strings.Builder
	end := min(len(m.matches), m.cur.Offset+height)
	for i := m.cur.Offset; i < end; i++ {
		mt := m.matches[i]
		if i > m.cur.Offset {
			b.WriteByte('\n')
		}
		desc := mt.c.Summary
		if s := source(mt.c); s != "" {
			desc = "[" + s + "] " + desc
		}
		if i == m.cur.Index {
			line := "▸ " + widget.PadRight(mt.c.Name, nameW) + "  " + desc
			b.WriteString(t.Selected.Render(widget.PadRight(line, width)))
			continue
		}
		name := widget.Highlight(mt.c.Name, mt.pos, widget.Renderer(t.Match), func(s string) string { return s })
		line := "  " + widget.PadRight(name, nameW) + "  " + t.Muted.Render(desc)
		b.WriteString(widget.PadRight(line, width))
	}
	return b.String()
}

// sideView is the selected component's help and parameters, wrapped to width.
func (m *Model) sideView(width int) string {
	c := m.Selected()
	if c == nil {
		return ""
	}
	t := m.Ctx.Theme
	wrap := lipgloss.NewStyle().Width(width)
	var b strings.Builder
	b.WriteString(t.Accent.Render(c.Name))
	if c.Source != "" {
		b.WriteString(t.Muted.Render("  " + c.Source))
	}
	if c.From == components.FromTorchX {
		b.WriteString(t.Muted.Render("  from TorchX"))
	}
	b.WriteString("\n")
	if c.Summary != "" {
		b.WriteString(wrap.Render(c.Summary) + "\n")
	}
	if c.Help != "" && c.Help != c.Summary {
		b.WriteString("\n" + t.Muted.Render(wrap.Render(widget.Reflow(c.Help))) + "\n")
	}
	if len(c.Params) > 0 || c.Varargs != "" {
		b.WriteString("\n" + t.TableHead.Render("Parameters") + "\n")
	}
	for _, p := range c.Params {
		b.WriteString(paramLine(m, p) + "\n")
		if p.Help != "" {
			b.WriteString(t.Muted.Render(lipgloss.NewStyle().Width(width).PaddingLeft(4).Render(p.Help)) + "\n")
		}
	}
	if c.Varargs != "" {
		b.WriteString("  " + t.Key("-- "+c.Varargs+"...") + "\n")
		if c.VarargsHelp != "" {
			b.WriteString(t.Muted.Render(lipgloss.NewStyle().Width(width).PaddingLeft(4).Render(c.VarargsHelp)) + "\n")
		}
	}
	return b.String()
}

func paramLine(m *Model, p components.Param) string {
	t := m.Ctx.Theme
	s := "  " + t.Key("--"+p.Name) + " " + t.Dim(p.Type.String())
	switch {
	case p.Required:
		s += " " + t.Warning.Render("required")
	case p.Default != "":
		s += t.Dim(" = ") + t.Value(p.Default)
	case p.Optional:
		s += t.Dim(" (optional)")
	}
	return s
}
