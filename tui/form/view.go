package form

import (
	"strings"

	"github.com/wick-dev/wick/tui/widget"
)

// Layout of the form.
const (
	headLines  = 2  // the component's name and a blank line
	footLines  = 3  // a rule, the focused field's help, the form's error
	minLabel   = 22 // labels are cut beyond this, or a fifth of the width if wider
	inputWidth = 48 // widest text input
	afterRoom  = 14 // what a field's type or error has, at least, after its input
)

// line is one line of the form body and the field it belongs to (-1: a heading).
type line struct {
	text  string
	field int
}

func (m *Model) bodyHeight() int { return max(1, m.Ctx.Height-headLines-footLines) }

// lines lays out the headings and fields.
func (m *Model) lines() []line {
	t := m.Ctx.Theme
	// The label column has one width for the screen, whatever the fields: switching
	// scheduler (whose run options have longer or shorter names) must not shift the
	// whole form.
	labelW := max(minLabel, m.Ctx.Width/5)
	// Beside the input: the mark and the required star, the gaps and the borders (9),
	// and the type or an error (afterRoom). At 80 columns an image name
	// (ghcr.io/pytorch/torchx:0.8.0dev0) fits whole.
	inW := max(10, min(inputWidth, m.Ctx.Width-labelW-9-afterRoom))
	var out []line
	sec := section(-1)
	for i, f := range m.fields {
		if f.sec != sec {
			sec = f.sec
			out = append(out, line{text: t.TableHead.Render(m.heading(sec)), field: -1})
		}
		focused := i == m.focus
		mark := "  "
		if focused {
			mark = t.Accent.Render("▸ ")
		}
		req := " "
		if f.required {
			req = t.Warning.Render("*")
		}
		label := widget.PadRight(f.name, labelW)
		if focused {
			label = t.Accent.Render(label)
		}
		var cell string
		switch f.kind {
		case kBool:
			box := "[ ]"
			if f.on {
				box = "[x]"
			}
			cell = widget.PadRight(box, inW+2)
		case kChoice:
			cell = m.choiceView(f, focused)
		default:
			f.input.SetWidth(inW)
			cell = t.Muted.Render("│") + widget.PadRight(f.input.View(t), inW+1) + t.Muted.Render("│")
		}
		after := t.Dim(f.typeLabel()) // sweep.go
		if f.err != "" {
			after = t.Error("✗ " + f.err)
		}
		out = append(out, line{text: mark + req + label + "  " + cell + "  " + after, field: i})
	}
	return out
}

func (m *Model) heading(s section) string {
	switch s {
	case secArgs:
		return "Arguments"
	case secScheduler:
		return "Scheduler"
	}
	return "Run options · " + m.scheduler()
}

func (m *Model) choiceView(f *field, focused bool) string {
	t := m.Ctx.Theme
	var parts []string
	for i, c := range f.choices {
		if i == f.choice {
			c = "◂ " + c + " ▸"
			if focused {
				c = t.Accent.Render(c)
			} else {
				c = t.Bold.Render(c)
			}
		} else {
			c = t.Muted.Render(c)
		}
		parts = append(parts, c)
	}
	return strings.Join(parts, "  ")
}

// fieldAt maps a body row to the field drawn there.
func (m *Model) fieldAt(y int) (int, bool) {
	ls := m.lines()
	i := y - headLines + m.offset
	if y < headLines || i < 0 || i >= len(ls) || ls[i].field < 0 {
		return 0, false
	}
	return ls[i].field, true
}

// View draws the heading, the visible fields, and the focused field's help.
func (m *Model) View() string {
	t := m.Ctx.Theme
	var b strings.Builder
	b.WriteString(t.Accent.Render(m.comp.Name))
	if m.comp.Summary != "" {
		b.WriteString("  " + t.Muted.Render(m.comp.Summary))
	}
	b.WriteString("\n\n")

	ls := m.lines()
	h := m.bodyHeight()
	// Keep the focused field (and its heading) in view.
	for i, l := range ls {
		if l.field == m.focus {
			if i < m.offset {
				m.offset = max(0, i-1)
			}
			if i >= m.offset+h {
				m.offset = i - h + 1
			}
		}
	}
	m.offset = max(0, min(m.offset, len(ls)-h))
	end := min(len(ls), m.offset+h)
	for i := m.offset; i < end; i++ {
		b.WriteString(ls[i].text + "\n")
	}
	for i := end - m.offset; i < h; i++ {
		b.WriteByte('\n')
	}
	b.WriteString(t.Muted.Render(strings.Repeat("─", m.Ctx.Width)) + "\n")
	f := m.fields[m.focus]
	help := f.help
	if help == "" {
		help = f.typ
	}
	b.WriteString(t.Muted.Render(firstLine(help)) + "\n")
	if m.formErr != "" {
		b.WriteString(t.Fail.Render(m.formErr))
	} else {
		// At 80 columns the long hint lost its end, the legend of the "*" mark.
		hint := "enter: preview the dry run · tab/↑↓: move · space/←→: toggle and choose · * required"
		if widget.Width(hint) > m.Ctx.Width {
			hint = "enter: dry run · tab/↑↓: move · space/←→: choose · * required"
		}
		b.WriteString(t.Muted.Render(hint))
	}
	return b.String()
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
