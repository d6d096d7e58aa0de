package tui

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/themes"
	"github.com/wick-dev/wick/tui/common"
)

// Settings are the UI settings of ~/.config/wick/config.toml:
//
//	theme = "light"            # dark, light, high-contrast, auto, or a user theme
//
//	[keys]                     # override the keys of actions (see `?` in the UI)
//	quit = ["q", "ctrl+q"]
//	logs = "L"
type Settings struct {
	// Theme names the theme; "" or "auto" picks dark or light from the terminal.
	Theme string
	// Keys maps action names to their keys.
	Keys map[string][]string
}

// DefaultSettingsPath is $XDG_CONFIG_HOME/wick/config.toml, else
// ~/.config/wick/config.toml.
func DefaultSettingsPath(getenv func(string) string) string {
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "wick", "config.toml")
}

// ThemesDir is where user themes live: the themes folder beside the settings file.
func ThemesDir(settingsPath string) string {
	return filepath.Join(filepath.Dir(settingsPath), "themes")
}

// LoadSettings reads the settings file at path; a missing file gives the zero
// Settings. Unknown keys, and actions the UI does not have, are errors naming the line.
func LoadSettings(path string) (Settings, error) {
	var s Settings
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	entries, err := themes.ParseTOML(string(data))
	if err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	actions := common.NewRegistry().Names()
	for _, e := range entries {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%s: line %d: %s", path, e.Line, fmt.Sprintf(format, args...))
		}
		switch {
		case e.Section == "" && e.Key == "theme":
			v, ok := e.Value.(string)
			if !ok {
				return s, bad("theme must be a string, e.g. theme = \"light\"")
			}
			s.Theme = v
		case e.Section == "":
			return s, bad("unknown key %q%s", e.Key, spec.DidYouMean(e.Key, []string{"theme"}))
		case e.Section == "keys":
			var keys []string
			switch v := e.Value.(type) {
			case string:
				keys = []string{v}
			case []string:
				keys = v
			default:
				return s, bad("keys of %s must be a string or an array of strings", e.Key)
			}
			if !contains(actions, e.Key) {
				return s, bad("unknown action %q%s", e.Key, spec.DidYouMean(e.Key, actions))
			}
			if len(keys) == 0 {
				return s, bad("action %s has no keys", e.Key)
			}
			if s.Keys == nil {
				s.Keys = map[string][]string{}
			}
			s.Keys[e.Key] = keys
		default:
			return s, bad("unknown section [%s] (want [keys])", e.Section)
		}
	}
	return s, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// pickTheme chooses the theme: none at all under NO_COLOR (or TERM=dumb); else the
// flag, then the settings file; "" or "auto" starts dark and follows the terminal's
// background once it answers.
func pickTheme(flag string, s Settings, dir string, getenv func(string) string) (t *themes.Theme, auto bool, err error) {
	if getenv("NO_COLOR") != "" || getenv("TERM") == "dumb" {
		return themes.Plain(), false, nil
	}
	name := flag
	if name == "" {
		name = s.Theme
	}
	if name == "" || name == themes.AutoName {
		return themes.Default(), true, nil
	}
	t, err = themes.Load(name, dir)
	return t, false, err
}
