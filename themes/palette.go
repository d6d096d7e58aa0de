package themes

import (
	"fmt"
	"image/color"
	"strconv"
	"strings"

	"charm.land/lipgloss/v2"
)

// Palette is a theme's colors by purpose. A nil color means "the terminal's default".
type Palette struct {
	Fg, Muted, Accent, Border       color.Color
	SelectionBg, SelectionFg, Match color.Color
	Header, Key, Value              color.Color
	Error, Stderr, Warning          color.Color
	// The colors of app and replica states.
	Pending, Running, Succeeded, Failed, Cancelled, Unknown color.Color
	// Prefixes rotate through the role/k prefixes of log lines.
	Prefixes []color.Color
}

// colorKeys maps the keys of a theme file to the palette's fields, in the order the
// documentation lists them.
var colorKeys = []struct {
	name string
	help string
	ref  func(*Palette) *color.Color
}{
	{"fg", "ordinary text", func(p *Palette) *color.Color { return &p.Fg }},
	{"muted", "secondary text, hints, borders of idle panes", func(p *Palette) *color.Color { return &p.Muted }},
	{"accent", "titles, the focused field, key names in help", func(p *Palette) *color.Color { return &p.Accent }},
	{"border", "box borders", func(p *Palette) *color.Color { return &p.Border }},
	{"selection_bg", "background of the selected row", func(p *Palette) *color.Color { return &p.SelectionBg }},
	{"selection_fg", "text of the selected row", func(p *Palette) *color.Color { return &p.SelectionFg }},
	{"match", "characters matched by a filter", func(p *Palette) *color.Color { return &p.Match }},
	{"header", "section and column headers", func(p *Palette) *color.Color { return &p.Header }},
	{"key", "keys of key: value renderings", func(p *Palette) *color.Color { return &p.Key }},
	{"value", "values of key: value renderings", func(p *Palette) *color.Color { return &p.Value }},
	{"error", "errors", func(p *Palette) *color.Color { return &p.Error }},
	{"stderr", "stderr lines", func(p *Palette) *color.Color { return &p.Stderr }},
	{"warning", "warnings and confirmations", func(p *Palette) *color.Color { return &p.Warning }},
	{"pending", "SUBMITTED and PENDING", func(p *Palette) *color.Color { return &p.Pending }},
	{"running", "RUNNING", func(p *Palette) *color.Color { return &p.Running }},
	{"succeeded", "SUCCEEDED", func(p *Palette) *color.Color { return &p.Succeeded }},
	{"failed", "FAILED", func(p *Palette) *color.Color { return &p.Failed }},
	{"cancelled", "CANCELLED", func(p *Palette) *color.Color { return &p.Cancelled }},
	{"unknown", "UNKNOWN and UNSUBMITTED", func(p *Palette) *color.Color { return &p.Unknown }},
}

// prefixesKey is the theme file key of Palette.Prefixes (an array of colors).
const prefixesKey = "prefixes"

// Keys lists the keys a theme file may set, besides "base" and "prefixes".
func Keys() []string {
	names := make([]string, len(colorKeys))
	for i, k := range colorKeys {
		names[i] = k.name
	}
	return names
}

// ParseColor reads "#rrggbb", "#rgb" or an ANSI color number 0-255.
func ParseColor(s string) (color.Color, error) {
	bad := fmt.Errorf("%q is not a color (want \"#rrggbb\", \"#rgb\" or an ANSI number 0-255)", s)
	if strings.HasPrefix(s, "#") {
		hex := s[1:]
		if len(hex) != 3 && len(hex) != 6 {
			return nil, bad
		}
		if _, err := strconv.ParseUint(hex, 16, 32); err != nil {
			return nil, bad
		}
		return lipgloss.Color(s), nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 255 {
		return nil, bad
	}
	return lipgloss.Color(s), nil
}

func mustColors(hexes ...string) []color.Color {
	out := make([]color.Color, len(hexes))
	for i, h := range hexes {
		out[i] = lipgloss.Color(h)
	}
	return out
}

// The builtin palettes.
var (
	darkPalette = Palette{
		Fg: lipgloss.Color("#c8d0e0"), Muted: lipgloss.Color("#6b7390"), Accent: lipgloss.Color("#7aa2f7"),
		Border: lipgloss.Color("#3b4261"), SelectionBg: lipgloss.Color("#2e3c64"), SelectionFg: lipgloss.Color("#e6ebff"),
		Match: lipgloss.Color("#ff9e64"), Header: lipgloss.Color("#bb9af7"), Key: lipgloss.Color("#7dcfff"),
		Value: lipgloss.Color("#c8d0e0"), Error: lipgloss.Color("#f7768e"), Stderr: lipgloss.Color("#e0af68"),
		Warning: lipgloss.Color("#e0af68"), Pending: lipgloss.Color("#e0af68"), Running: lipgloss.Color("#7aa2f7"),
		Succeeded: lipgloss.Color("#9ece6a"), Failed: lipgloss.Color("#f7768e"), Cancelled: lipgloss.Color("#a9b1d6"),
		Unknown:  lipgloss.Color("#6b7390"),
		Prefixes: mustColors("#7dcfff", "#bb9af7", "#9ece6a", "#e0af68", "#ff9e64", "#73daca", "#f7768e", "#7aa2f7"),
	}
	lightPalette = Palette{
		Fg: lipgloss.Color("#2e3440"), Muted: lipgloss.Color("#6c7086"), Accent: lipgloss.Color("#1e66f5"),
		Border: lipgloss.Color("#bcc0cc"), SelectionBg: lipgloss.Color("#d0dcf8"), SelectionFg: lipgloss.Color("#11111b"),
		Match: lipgloss.Color("#d20f39"), Header: lipgloss.Color("#8839ef"), Key: lipgloss.Color("#04708a"),
		Value: lipgloss.Color("#2e3440"), Error: lipgloss.Color("#c4112e"), Stderr: lipgloss.Color("#b35900"),
		Warning: lipgloss.Color("#b35900"), Pending: lipgloss.Color("#b35900"), Running: lipgloss.Color("#1e66f5"),
		Succeeded: lipgloss.Color("#2a7a12"), Failed: lipgloss.Color("#c4112e"), Cancelled: lipgloss.Color("#5c5f77"),
		Unknown:  lipgloss.Color("#8c8fa1"),
		Prefixes: mustColors("#04708a", "#8839ef", "#2a7a12", "#b35900", "#d20f39", "#179299", "#1e66f5", "#ea76cb"),
	}
	// highContrastPalette uses the 16 basic ANSI colors at full strength, so that it
	// follows the terminal's own (accessible) palette, whatever its background.
	highContrastPalette = Palette{
		Fg: nil, Muted: lipgloss.Color("7"), Accent: lipgloss.Color("11"),
		Border: lipgloss.Color("15"), SelectionBg: lipgloss.Color("11"), SelectionFg: lipgloss.Color("0"),
		Match: lipgloss.Color("14"), Header: lipgloss.Color("15"), Key: lipgloss.Color("14"),
		Value: nil, Error: lipgloss.Color("9"), Stderr: lipgloss.Color("11"),
		Warning: lipgloss.Color("11"), Pending: lipgloss.Color("11"), Running: lipgloss.Color("14"),
		Succeeded: lipgloss.Color("10"), Failed: lipgloss.Color("9"), Cancelled: lipgloss.Color("13"),
		Unknown:  lipgloss.Color("7"),
		Prefixes: mustColors("14", "13", "10", "11", "12", "9"),
	}
)
