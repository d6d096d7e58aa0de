// Package themes holds wick's palettes and the lipgloss styles the UI draws with: the
// builtin dark (default), light and high-contrast themes, a plain theme for NO_COLOR,
// and user theme files. A Theme is also a render.Styler, so the shared renderers color
// their output with it.
package themes

import (
	"image/color"
	"strings"
	"unicode/utf8"

	"charm.land/lipgloss/v2"

	"github.com/wick-dev/wick/engine/spec"
)

// Theme is a palette and the styles made from it. It is immutable once built and safe
// to share.
type Theme struct {
	// Name is the builtin name, the user theme's name, or "plain".
	Name string
	// Palette holds the colors the styles were made from.
	Palette Palette

	// Styles of the UI's chrome and widgets.
	Title     lipgloss.Style // the title bar
	Crumb     lipgloss.Style // the breadcrumb inside it
	StatusBar lipgloss.Style // the status line
	Notice    lipgloss.Style // a message in the status line
	Warning   lipgloss.Style // a question awaiting an answer
	Fail      lipgloss.Style // an error message
	HelpKey   lipgloss.Style // a key in the help bar and overlay
	HelpDesc  lipgloss.Style // its description
	HelpSep   lipgloss.Style // the separator between help items
	Selected  lipgloss.Style // the selected row of a list
	Box       lipgloss.Style // overlays and dialogs: a bordered box
	Pane      lipgloss.Style // side panes: a left border
	Muted     lipgloss.Style // hints, placeholders, secondary text
	Accent    lipgloss.Style // the focused label, titles
	Match     lipgloss.Style // characters matched by a filter
	Bold      lipgloss.Style // emphasis without color
	TableHead lipgloss.Style // column headers

	header, key, value, dim, stderr, errText lipgloss.Style
	stderrSGR                                sgr
	states                                   [spec.UnknownState + 1]lipgloss.Style
	prefixes                                 []lipgloss.Style
	plain                                    bool
}

// fg returns a style with foreground c, or no foreground when c is nil.
func fg(c color.Color) lipgloss.Style {
	s := lipgloss.NewStyle()
	if c != nil {
		s = s.Foreground(c)
	}
	return s
}

// New builds a theme from a palette.
func New(name string, p Palette) *Theme {
	t := &Theme{Name: name, Palette: p}
	t.header = fg(p.Header).Bold(true)
	t.key = fg(p.Key)
	t.value = fg(p.Value)
	t.dim = fg(p.Muted)
	t.stderr = fg(p.Stderr)
	t.stderrSGR = sgrOf(t.stderr)
	t.errText = fg(p.Error)
	for s := range t.states {
		t.states[s] = fg(p.stateColor(spec.AppState(s)))
	}
	t.states[spec.Failed] = t.states[spec.Failed].Bold(true)
	for _, c := range p.Prefixes {
		t.prefixes = append(t.prefixes, fg(c))
	}

	t.Title = fg(p.Accent).Bold(true)
	t.Crumb = fg(p.Muted)
	t.StatusBar = fg(p.Muted)
	t.Notice = fg(p.Fg)
	t.Warning = fg(p.Warning).Bold(true)
	t.Fail = fg(p.Error)
	t.HelpKey = fg(p.Accent)
	t.HelpDesc = fg(p.Muted)
	t.HelpSep = fg(p.Border)
	t.Selected = fg(p.SelectionFg)
	if p.SelectionBg != nil {
		t.Selected = t.Selected.Background(p.SelectionBg)
	} else {
		t.Selected = t.Selected.Reverse(true)
	}
	t.Box = lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).Padding(0, 1)
	t.Pane = lipgloss.NewStyle().Border(lipgloss.NormalBorder(), false, false, false, true).PaddingLeft(1)
	if p.Border != nil {
		t.Box = t.Box.BorderForeground(p.Border)
		t.Pane = t.Pane.BorderForeground(p.Border)
	}
	t.Muted = fg(p.Muted)
	t.Accent = fg(p.Accent).Bold(true)
	t.Match = fg(p.Match).Bold(true)
	t.Bold = lipgloss.NewStyle().Bold(true)
	t.TableHead = fg(p.Header).Bold(true)
	return t
}

func (p Palette) stateColor(s spec.AppState) color.Color {
	switch s {
	case spec.Submitted, spec.Pending:
		return p.Pending
	case spec.Running:
		return p.Running
	case spec.Succeeded:
		return p.Succeeded
	case spec.Failed:
		return p.Failed
	case spec.Cancelled:
		return p.Cancelled
	}
	return p.Unknown
}

// Plain is the theme without colors, for NO_COLOR and dumb terminals: the renderers
// print as render.Plain does, and the selection is shown in reverse video.
func Plain() *Theme {
	t := New("plain", Palette{})
	t.plain = true
	t.Match = lipgloss.NewStyle().Underline(true)
	t.Accent = lipgloss.NewStyle().Bold(true)
	return t
}

// IsPlain reports whether the theme draws without colors.
func (t *Theme) IsPlain() bool { return t.plain }

// Header colors a section or column header.
func (t *Theme) Header(s string) string {
	if t.plain {
		return s
	}
	return t.header.Render(s)
}

// Key colors the key of a key: value line.
func (t *Theme) Key(s string) string {
	if t.plain {
		return s
	}
	return t.key.Render(s)
}

// Value colors the value of a key: value line.
func (t *Theme) Value(s string) string {
	if t.plain {
		return s
	}
	return t.value.Render(s)
}

// Dim colors secondary text.
func (t *Theme) Dim(s string) string {
	if t.plain {
		return s
	}
	return t.dim.Render(s)
}

// State colors s in the color of the app state st.
func (t *Theme) State(st spec.AppState, s string) string {
	if t.plain || st < 0 || int(st) >= len(t.states) {
		return s
	}
	return t.states[st].Render(s)
}

// Prefix colors a role/k log prefix with the i-th color of the rotation.
func (t *Theme) Prefix(i int, s string) string {
	if t.plain || len(t.prefixes) == 0 {
		return s
	}
	return t.prefixes[((i%len(t.prefixes))+len(t.prefixes))%len(t.prefixes)].Render(s)
}

// Stderr colors a stderr line.
func (t *Theme) Stderr(s string) string {
	if t.plain {
		return s
	}
	return t.stderrSGR.render(t.stderr, s)
}

// sgr is what a one-line style's rendering puts around plain text: lipgloss's Render
// of a foreground-only style costs about a microsecond a call, and the wall colors
// every stderr line of every pane on screen each frame (tqdm bars are stderr; at 16
// replicas of demo.train, 2.7% of the wall's CPU).
type sgr struct {
	open, close string
	ok          bool
}

// sgrOf is st's opening and closing sequences, from its rendering of one letter.
func sgrOf(st lipgloss.Style) sgr {
	r := st.Render("x")
	i := strings.IndexByte(r, 'x')
	if i < 0 || strings.Count(r, "x") != 1 {
		return sgr{}
	}
	return sgr{open: r[:i], close: r[i+1:], ok: true}
}

// render is st.Render(s), byte for byte (TestStderrAsLipgloss), without lipgloss
// for text of printable characters only: lipgloss does the same to each of them
// (no width, padding, border or tab is set); anything else goes to lipgloss.
func (g sgr) render(st lipgloss.Style, s string) string {
	if !g.ok || s == "" || !printable(s) {
		return st.Render(s)
	}
	return g.open + s + g.close
}

// printable reports whether s is valid UTF-8 without control characters (C0, DEL,
// C1) and without tabs, which lipgloss expands.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r >= 0x80 && r <= 0x9f {
			return false
		}
	}
	return true
}

// Error colors an error message.
func (t *Theme) Error(s string) string {
	if t.plain {
		return s
	}
	return t.errText.Render(s)
}
