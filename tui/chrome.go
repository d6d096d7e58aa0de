package tui

import (
	"fmt"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/themes"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/widget"
)

// View draws the screen: the title bar, the active view, the status line and the help
// bar, with the overlay on top; in the alternate screen, with the mouse on.
func (m *Model) View() tea.View {
	v := tea.NewView(m.Screen())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "wick"
	return v
}

// Screen is the text of the screen (View's content).
func (m *Model) Screen() (screen string) {
	if m.width == 0 || m.height == 0 {
		return ""
	}
	t := m.ctx.Theme
	defer func() {
		if r := recover(); r != nil {
			m.fault = fmt.Errorf("internal error drawing the screen: %v (please report it)", r)
			screen = center(m.width, m.height, t.Fail.Render(m.fault.Error()), t.Muted.Render("esc goes back · q quits"))
		}
	}()
	if m.width < minWidth || m.height < minHeight {
		return center(m.width, m.height,
			t.Warning.Render("wick needs a bigger terminal"),
			t.Muted.Render("at least "+itoa(minWidth)+"×"+itoa(minHeight)+", now "+itoa(m.width)+"×"+itoa(m.height)))
	}
	var b strings.Builder
	b.WriteString(m.titleBar())
	b.WriteByte('\n')
	b.WriteString(widget.Fit(m.active().View(), m.width, m.ctx.Height))
	b.WriteByte('\n')
	b.WriteString(m.statusLine())
	b.WriteByte('\n')
	b.WriteString(m.helpBar())
	screen = b.String()
	if m.over != nil {
		screen = widget.Overlay(screen, m.over.view(m), m.width, m.height)
	}
	return screen
}

// crumbSep separates the crumbs of the title bar.
const crumbSep = " › "

// crumbs are the title bar's parts: "wick", then one per view of the stack. When they
// and the hint keys do not fit (80 columns: "apps › demo-train-… › logs demo-train-…"),
// the crumbs between the first and the last become "…", the widest first: the view
// the user is in and the keys of help stay.
func (m *Model) crumbs() []string {
	out := []string{"wick"}
	for _, v := range m.stack {
		out = append(out, v.Title())
	}
	room := m.width - ansi.StringWidth(m.hintKeys()) - 1
	width := func() int {
		w := 0
		for _, c := range out {
			w += ansi.StringWidth(c)
		}
		return w + ansi.StringWidth(crumbSep)*(len(out)-1)
	}
	for width() > room {
		widest := -1
		for i := 1; i < len(out)-1; i++ {
			if out[i] != elided && (widest < 0 || ansi.StringWidth(out[i]) > ansi.StringWidth(out[widest])) {
				widest = i
			}
		}
		if widest < 0 {
			break
		}
		out[widest] = elided
	}
	return out
}

// elided stands for a crumb left out of the title bar; a click on it still goes back
// to its view.
const elided = "…"

// crumbAt returns the depth in the stack of the view whose crumb spans column x, or -1.
func crumbAt(crumbs []string, x int) int {
	col := 0
	for i, c := range crumbs {
		w := ansi.StringWidth(c)
		if i > 0 && x >= col && x < col+w {
			return i - 1
		}
		col += w + ansi.StringWidth(crumbSep)
	}
	return -1
}

func (m *Model) titleBar() string {
	t := m.ctx.Theme
	parts := m.crumbs()
	crumbs := t.Title.Render(parts[0])
	for _, c := range parts[1:] {
		crumbs += t.Crumb.Render(crumbSep) + c
	}
	right := t.Muted.Render(m.hintKeys())
	gap := m.width - ansi.StringWidth(crumbs) - ansi.StringWidth(right)
	if gap < 1 {
		return widget.PadRight(crumbs, m.width)
	}
	return crumbs + strings.Repeat(" ", gap) + right
}

// hintKeys names the keys of help and the palette in the title bar: those that work
// now. While a field has focus, "?" and ":" type into it, so only keys that do not
// type (f1, ctrl+...) are named, or none.
func (m *Model) hintKeys() string {
	var parts []string
	for _, a := range []struct {
		name common.ActionName
		what string
	}{{common.ActHelp, "help"}, {common.ActPalette, "commands"}} {
		act, ok := m.ctx.Actions.Get(a.name, m.active().Kind())
		if !ok {
			continue
		}
		b := act.Binding
		if m.active().Typing() {
			if b, ok = common.WhileTyping(b); !ok {
				continue
			}
		}
		if ks := b.Keys(); len(ks) > 0 {
			parts = append(parts, ks[0]+" "+a.what)
		}
	}
	return strings.Join(parts, "  ")
}

// positioner is a view that reports its scroll position.
type positioner interface{ Position() string }

func (m *Model) statusLine() string {
	t := m.ctx.Theme
	left := ""
	if m.notice != "" && (m.noticeView == 0 || m.noticeView == m.active().ID()) {
		if m.noticeErr {
			left = t.Fail.Render("✗ " + m.notice)
		} else {
			left = t.Notice.Render(m.notice)
		}
	}
	right := ""
	if p, ok := m.active().(positioner); ok {
		right = t.Muted.Render(p.Position())
	}
	gap := m.width - ansi.StringWidth(left) - ansi.StringWidth(right)
	if gap < 1 {
		return widget.PadRight(left, m.width)
	}
	return left + strings.Repeat(" ", gap) + right
}

// helpKey is what the help bar depends on; the bar is drawn again only when it changes.
type helpKey struct {
	kind   common.Kind
	typing bool
	width  int
	theme  *themes.Theme
	off    string // the actions the view has turned off (see offActions)
	extra  string // the bindings the view offers in context (see contextHelper)
}

// contextHelper is what a view implements whose help bar depends on where the user
// is (a sweep's row: z unfold, p chart; the wall's chart: M L E Z): those bindings
// come first in the help bar, before the view's short ones.
type contextHelper interface{ ContextHelp() []key.Binding }

// contextHelp is the active view's bindings in context, and a key naming them.
func (m *Model) contextHelp() ([]key.Binding, string) {
	v, ok := m.active().(contextHelper)
	if !ok {
		return nil, ""
	}
	bs := v.ContextHelp()
	var k strings.Builder
	for _, b := range bs {
		k.WriteString(b.Help().Key + "=" + b.Help().Desc + ";")
	}
	return bs, k.String()
}

// offer is what a view implements when some of its actions are off for now (launch,
// after a dry run failed): the help bar leaves them out.
type offer interface {
	Off(action common.ActionName) bool
}

// typingHelper is what a view implements whose keys mean something else while a text
// field has focus (enter applies the app list's filter): the help bar shows its own
// bindings then.
type typingHelper interface{ TypingHelp() []key.Binding }

// offActions names the short-help actions the active view has turned off.
func (m *Model) offActions() string {
	v, ok := m.active().(offer)
	if !ok {
		return ""
	}
	var off []string
	for _, a := range m.ctx.Actions.For(m.active().Kind()) {
		if a.Short && v.Off(a.Name) {
			off = append(off, string(a.Name))
		}
	}
	return strings.Join(off, " ")
}

func (m *Model) helpBar() string {
	extra, ek := m.contextHelp()
	k := helpKey{m.active().Kind(), m.active().Typing(), m.width, m.ctx.Theme, m.offActions(), ek}
	if k == m.helpFor && m.helpText != "" {
		return m.helpText
	}
	m.helpFor, m.helpText = k, m.drawHelpBar(extra)
	return m.helpText
}

func (m *Model) drawHelpBar(extra []key.Binding) string {
	t := m.ctx.Theme
	h := help.New()
	h.SetWidth(m.width)
	h.Styles.ShortKey = t.HelpKey
	h.Styles.ShortDesc = t.HelpDesc
	h.Styles.ShortSeparator = t.HelpSep
	h.Styles.Ellipsis = t.HelpSep
	bindings := m.ctx.Actions.ShortHelp(m.active().Kind())
	if off, ok := m.active().(offer); ok {
		bindings = bindings[:0]
		for _, a := range m.ctx.Actions.For(m.active().Kind()) {
			if a.Short && !off.Off(a.Name) {
				bindings = append(bindings, a.Binding)
			}
		}
	}
	if th, ok := m.active().(typingHelper); ok && m.active().Typing() {
		return widget.PadRight(h.ShortHelpView(th.TypingHelp()), m.width)
	}
	if len(extra) > 0 {
		// What the user can do here first; a short binding of the same key goes.
		shown := map[string]bool{}
		for _, b := range extra {
			shown[b.Help().Key] = true
		}
		rest := bindings
		bindings = append([]key.Binding(nil), extra...)
		for _, b := range rest {
			if !shown[b.Help().Key] {
				bindings = append(bindings, b)
			}
		}
	}
	if m.active().Typing() {
		var kept []key.Binding
		for _, b := range bindings {
			if b, ok := common.WhileTyping(b); ok {
				kept = append(kept, b)
			}
		}
		bindings = kept
	}
	return widget.PadRight(h.ShortHelpView(bindings), m.width)
}

func itoa(i int) string { return strconv.Itoa(i) }

// center draws lines in the middle of a width x height screen, cutting what does not
// fit.
func center(width, height int, lines ...string) string {
	out := make([]string, height)
	top := max(0, (height-len(lines))/2)
	for i, l := range lines {
		if top+i >= height {
			break
		}
		pad := max(0, (width-ansi.StringWidth(l))/2)
		out[top+i] = widget.PadRight(strings.Repeat(" ", pad)+l, width)
	}
	for i, l := range out {
		if l == "" {
			out[i] = strings.Repeat(" ", width)
		}
	}
	return strings.Join(out, "\n")
}
