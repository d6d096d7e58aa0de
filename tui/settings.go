package tui

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/themes"
)

// Settings are the UI settings of ~/.config/wick/config.toml:
//
//	theme = "light"            # dark, light, high-contrast, auto, or a user theme
//
//	[keys]                     # override the keys of actions (see `?` in the UI)
//	quit = ["q", "ctrl+q"]
//	logs = "L"
//
//	[metrics]                  # the numbers the log wall draws, as [wick:metrics]
//	metrics = ["loss", "lr"]   # of .torchxconfig (which wins key by key)
//	pattern.acc = 'top-1 acc (\S+)%'
//	divergence = 4
type Settings struct {
	// Theme names the theme; "" or "auto" picks dark or light from the terminal.
	Theme string
	// Keys maps action names to their keys.
	Keys map[string][]string
	// Metrics holds the [metrics] section: the keys of engine/metrics.ParseConfig.
	Metrics map[string]string
}

// UserConfigDir is the user's configuration directory: $XDG_CONFIG_HOME, else
// ~/.config. wick's settings, themes and user components live under its wick folder.
func UserConfigDir(getenv func(string) string) string {
	if dir := getenv("XDG_CONFIG_HOME"); dir != "" {
		return dir
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".config")
}

// DefaultSettingsPath is UserConfigDir/wick/config.toml.
func DefaultSettingsPath(getenv func(string) string) string {
	return filepath.Join(UserConfigDir(getenv), "wick", "config.toml")
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
	actions := newActions().Names()
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
		case e.Section == "metrics":
			var v string
			switch x := e.Value.(type) {
			case string:
				v = x
			case []string:
				v = strings.Join(x, ",")
			case int64:
				v = strconv.FormatInt(x, 10)
			default:
				return s, bad("%s must be a string, a number or an array of strings", e.Key)
			}
			if _, err := metrics.ParseConfig(map[string]string{e.Key: v}); err != nil {
				return s, bad("%v", strings.Replace(err.Error(), "["+metrics.Section+"]", "[metrics]", 1))
			}
			if s.Metrics == nil {
				s.Metrics = map[string]string{}
			}
			s.Metrics[e.Key] = v
		default:
			return s, bad("unknown section [%s] (want [keys] or [metrics])", e.Section)
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
