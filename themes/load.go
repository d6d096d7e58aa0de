package themes

import (
	"errors"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/engine/spec"
)

// The builtin theme names.
const (
	Dark         = "dark"
	Light        = "light"
	HighContrast = "high-contrast"
	// AutoName asks for dark or light from the terminal's background.
	AutoName = "auto"
)

// Names lists the builtin themes, the default first.
func Names() []string { return []string{Dark, Light, HighContrast} }

// Builtin returns the builtin theme called name.
func Builtin(name string) (*Theme, bool) {
	p, ok := builtinPalette(name)
	if !ok {
		return nil, false
	}
	return New(name, p), true
}

func builtinPalette(name string) (Palette, bool) {
	switch name {
	case Dark:
		return darkPalette, true
	case Light:
		return lightPalette, true
	case HighContrast, "highcontrast", "high_contrast":
		return highContrastPalette, true
	}
	return Palette{}, false
}

// Default is the theme used when nothing else is known: dark.
func Default() *Theme { t, _ := Builtin(Dark); return t }

// ForBackground picks the builtin theme that reads well on a dark or light background.
func ForBackground(dark bool) *Theme {
	if dark {
		return Default()
	}
	t, _ := Builtin(Light)
	return t
}

// ErrUnknownTheme is wrapped when a theme name is neither builtin nor a file.
var ErrUnknownTheme = errors.New("unknown theme")

// maxFile bounds a theme file: a few dozen colors.
const maxFile = 64 << 10

// CheckName accepts the name of a theme: a builtin, "auto", or the name of a user
// theme (letters, digits, '-' and '_'), never a path: a settings file saying
// `theme = "../../etc/passwd"` must not make wick open that file.
func CheckName(name string) error {
	if _, ok := builtinPalette(name); ok || name == AutoName || name == "" {
		return nil
	}
	if !isBareKey(name) {
		return fmt.Errorf("theme %q: not a theme name (a builtin: %s; or NAME of a user theme NAME.toml, letters, digits, '-' and '_')",
			name, strings.Join(Names(), ", "))
	}
	return nil
}

// Load returns the theme called name: a builtin, or the user theme dir/NAME.toml.
// A name that is not a name (a path) is refused without opening anything; the file
// must be a regular file (a link to one is followed) of at most 64 KiB.
func Load(name, dir string) (*Theme, error) {
	if t, ok := Builtin(name); ok {
		return t, nil
	}
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, fmt.Errorf("%w %q (builtins: %s)", ErrUnknownTheme, name, strings.Join(Names(), ", "))
	}
	path := filepath.Join(dir, name+".toml")
	data, err := safefs.ReadUserFile(path, maxFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w %q: not builtin (%s) and no %s%s", ErrUnknownTheme, name,
			strings.Join(Names(), ", "), path, spec.DidYouMean(name, Names()))
	}
	if err != nil {
		return nil, fmt.Errorf("theme %q: %w", name, err)
	}
	t, err := Parse(name, string(data))
	if err != nil {
		return nil, fmt.Errorf("theme file %s:%w", path, err)
	}
	return t, nil
}

// Parse reads a theme file:
//
//	# my.toml: start from a builtin, then override colors
//	base = "dark"
//	accent = "#ff79c6"
//	succeeded = "10"
//	prefixes = ["#8be9fd", "#50fa7b"]
//
// Colors are "#rrggbb", "#rgb" or ANSI numbers 0-255. An unknown key or a bad color is
// an error naming the line. Errors start with the line number so that callers can
// prefix the file name.
func Parse(name, data string) (*Theme, error) {
	entries, err := ParseTOML(data)
	if err != nil {
		return nil, err
	}
	p := darkPalette
	for _, e := range entries {
		if e.Key == "base" && e.Section == "" {
			s, ok := e.Value.(string)
			if !ok {
				return nil, fmt.Errorf("line %d: base must be a string", e.Line)
			}
			if p, ok = builtinPalette(s); !ok {
				return nil, fmt.Errorf("line %d: base %q is not a builtin theme (%s)", e.Line, s, strings.Join(Names(), ", "))
			}
		}
	}
	p.Prefixes = append([]color.Color(nil), p.Prefixes...)
	known := append(Keys(), "base", prefixesKey)
	for _, e := range entries {
		if e.Section != "" {
			return nil, fmt.Errorf("line %d: theme files have no sections (found [%s])", e.Line, e.Section)
		}
		switch e.Key {
		case "base":
			continue
		case prefixesKey:
			list, ok := e.Value.([]string)
			if !ok || len(list) == 0 {
				return nil, fmt.Errorf("line %d: prefixes must be a non-empty array of colors", e.Line)
			}
			p.Prefixes = p.Prefixes[:0]
			for _, s := range list {
				c, err := ParseColor(s)
				if err != nil {
					return nil, fmt.Errorf("line %d: prefixes: %v", e.Line, err)
				}
				p.Prefixes = append(p.Prefixes, c)
			}
			continue
		}
		ref := paletteRef(&p, e.Key)
		if ref == nil {
			return nil, fmt.Errorf("line %d: unknown key %q%s", e.Line, e.Key, spec.DidYouMean(e.Key, known))
		}
		s, ok := e.Value.(string)
		if !ok {
			return nil, fmt.Errorf("line %d: %s: a color must be a quoted string, e.g. \"#7aa2f7\"", e.Line, e.Key)
		}
		c, err := ParseColor(s)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: %v", e.Line, e.Key, err)
		}
		*ref = c
	}
	return New(name, p), nil
}

func paletteRef(p *Palette, key string) *color.Color {
	for _, k := range colorKeys {
		if k.name == key {
			return k.ref(p)
		}
	}
	return nil
}

// isBareKey reports whether s is a non-empty run of letters, digits, '_' and '-'.
func isBareKey(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
			return false
		}
	}
	return true
}
