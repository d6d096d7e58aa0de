package widget

import (
	"strings"
	"unicode"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/themes"
)

// Input is a one-line text field: the usual line-editing keys (←/→, home/end, ctrl+a/e,
// backspace, delete, ctrl+u/k/w, alt+←/→), pasting, horizontal scrolling, a
// placeholder, and a steady cursor (a blinking one would wake the UI twice a second
// for nothing).
type Input struct {
	Prompt      string
	Placeholder string
	// CutMiddle shows a value too wide for the input with its middle cut (a path),
	// while the cursor is at its end.
	CutMiddle bool
	value     []rune
	pos       int
	offset    int // first rune shown
	width     int // columns for the text; 0: unbounded
	focused   bool
}

// NewInput returns an empty input.
func NewInput(prompt string) Input { return Input{Prompt: prompt} }

// Value is the text.
func (in *Input) Value() string { return string(in.value) }

// SetValue replaces the text and puts the cursor at its end.
func (in *Input) SetValue(s string) {
	in.value = []rune(sanitize(s))
	in.pos = len(in.value)
}

// SetWidth sets how many columns the text may take.
func (in *Input) SetWidth(w int) { in.width = max(1, w) }

// Focus gives the input the cursor.
func (in *Input) Focus() { in.focused = true }

// Blur takes the cursor away.
func (in *Input) Blur() { in.focused = false }

// Focused reports whether the input has the cursor.
func (in *Input) Focused() bool { return in.focused }

// sanitize keeps a single line of printable text: newlines and tabs become spaces,
// other control characters go.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			return ' '
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, s)
}

// Update applies a key or a paste; it reports whether the text changed.
func (in *Input) Update(msg tea.Msg) bool {
	if !in.focused {
		return false
	}
	before := string(in.value)
	switch msg := msg.(type) {
	case tea.PasteMsg:
		in.insert(sanitize(msg.Content))
	case tea.KeyPressMsg:
		switch msg.Keystroke() {
		case "left", "ctrl+b":
			in.pos = max(0, in.pos-1)
		case "right", "ctrl+f":
			in.pos = min(len(in.value), in.pos+1)
		case "home", "ctrl+a":
			in.pos = 0
		case "end", "ctrl+e":
			in.pos = len(in.value)
		case "alt+left", "ctrl+left", "alt+b":
			in.pos = in.wordLeft()
		case "alt+right", "ctrl+right", "alt+f":
			in.pos = in.wordRight()
		case "backspace", "ctrl+h":
			if in.pos > 0 {
				in.value = append(in.value[:in.pos-1], in.value[in.pos:]...)
				in.pos--
			}
		case "delete", "ctrl+d":
			if in.pos < len(in.value) {
				in.value = append(in.value[:in.pos], in.value[in.pos+1:]...)
			}
		case "ctrl+u":
			in.value = in.value[in.pos:]
			in.pos = 0
		case "ctrl+k":
			in.value = in.value[:in.pos]
		case "ctrl+w", "alt+backspace", "ctrl+backspace":
			w := in.wordLeft()
			in.value = append(in.value[:w], in.value[in.pos:]...)
			in.pos = w
		case "alt+d", "ctrl+delete":
			w := in.wordRight()
			in.value = append(in.value[:in.pos], in.value[w:]...)
		default:
			if msg.Text != "" && msg.Mod&^tea.ModShift == 0 {
				in.insert(sanitize(msg.Text))
			}
		}
	}
	return string(in.value) != before
}

func (in *Input) insert(s string) {
	rs := []rune(s)
	v := make([]rune, 0, len(in.value)+len(rs))
	v = append(v, in.value[:in.pos]...)
	v = append(v, rs...)
	in.value = append(v, in.value[in.pos:]...)
	in.pos += len(rs)
}

func (in *Input) wordLeft() int {
	i := in.pos
	for i > 0 && unicode.IsSpace(in.value[i-1]) {
		i--
	}
	for i > 0 && !unicode.IsSpace(in.value[i-1]) {
		i--
	}
	return i
}

func (in *Input) wordRight() int {
	i := in.pos
	for i < len(in.value) && unicode.IsSpace(in.value[i]) {
		i++
	}
	for i < len(in.value) && !unicode.IsSpace(in.value[i]) {
		i++
	}
	return i
}

// View draws the prompt and the visible part of the text in the theme's colors, with
// the cursor when focused.
func (in *Input) View(t *themes.Theme) string {
	prompt := t.Muted.Render(in.Prompt)
	if in.focused {
		prompt = t.Accent.Render(in.Prompt)
	}
	cursor := lipgloss.NewStyle().Reverse(true)
	if len(in.value) == 0 {
		ph := in.Placeholder
		if in.width > 0 {
			ph = ansi.Truncate(ph, in.width, "…")
		}
		if in.focused {
			if ph == "" {
				return prompt + cursor.Render(" ")
			}
			r := []rune(ph)
			return prompt + cursor.Render(t.Muted.Render(string(r[0]))) + t.Muted.Render(string(r[1:]))
		}
		return prompt + t.Muted.Render(ph)
	}
	if v := in.middle(); v != "" {
		return prompt + v + cursor.Render(" ")
	}
	// Scroll so that the cursor stays within width.
	w := in.width
	if w <= 0 {
		w = len(in.value) + 1
	}
	if in.pos < in.offset {
		in.offset = in.pos
	}
	for in.offset < in.pos && ansi.StringWidth(string(in.value[in.offset:in.pos])) >= w {
		in.offset++
	}
	in.offset = min(in.offset, len(in.value))
	var b strings.Builder
	b.WriteString(prompt)
	used := 0
	for i := in.offset; i <= len(in.value); i++ {
		ch := " "
		if i < len(in.value) {
			ch = string(in.value[i])
		}
		cw := ansi.StringWidth(ch)
		if used+cw > w {
			break
		}
		if in.focused && i == in.pos {
			b.WriteString(cursor.Render(ch))
		} else if i < len(in.value) {
			b.WriteString(ch)
		}
		used += cw
	}
	return b.String()
}

// middle is the value cut in its middle with an ellipsis, when CutMiddle is set, the
// cursor is at the end and the value is wider than the input: a path keeps its start
// (/home/...) and its file name, rather than reading like a relative path cut from the
// left. "" otherwise.
func (in *Input) middle() string {
	w := in.width
	if !in.CutMiddle || w < 8 || in.pos != len(in.value) || ansi.StringWidth(string(in.value))+1 <= w {
		return ""
	}
	room := w - 2 // the ellipsis and the cursor
	headW := room / 3
	var head, tail []rune
	used := 0
	for _, r := range in.value {
		cw := ansi.StringWidth(string(r))
		if used+cw > headW {
			break
		}
		head = append(head, r)
		used += cw
	}
	for i := len(in.value) - 1; i >= 0; i-- {
		cw := ansi.StringWidth(string(in.value[i]))
		if used+cw > room {
			break
		}
		tail = append([]rune{in.value[i]}, tail...)
		used += cw
	}
	return string(head) + "…" + string(tail)
}

// editKeys are the keys a focused text field keeps for itself besides printable text.
var editKeys = map[string]bool{
	"backspace": true, "delete": true, "left": true, "right": true, "home": true, "end": true,
	"ctrl+a": true, "ctrl+e": true, "ctrl+u": true, "ctrl+w": true, "ctrl+k": true, "ctrl+h": true,
	"ctrl+d": true, "ctrl+b": true, "ctrl+f": true, "ctrl+v": true,
	"alt+backspace": true, "alt+b": true, "alt+f": true, "alt+d": true, "alt+left": true, "alt+right": true,
	"ctrl+left": true, "ctrl+right": true, "ctrl+backspace": true, "ctrl+delete": true,
}

// IsEditKey reports whether k is text or a line-editing key, which a focused text
// field (an Input) takes before any action.
func IsEditKey(k tea.KeyPressMsg) bool {
	if k.Text != "" && k.Mod&^tea.ModShift == 0 {
		return true
	}
	return editKeys[k.Keystroke()]
}

// IsEditKeyName reports whether a key name is text (one character, or "space") or an
// editing key.
func IsEditKeyName(k string) bool {
	return k == "space" || len([]rune(k)) == 1 || editKeys[k]
}
