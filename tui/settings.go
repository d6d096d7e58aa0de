package tui

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/wick-dev/wick/engine/alerts"
	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/safefs"
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
//
//	[metrics]                  # the numbers the log wall draws, as [wick:metrics]
//	metrics = ["loss", "lr"]   # of .torchxconfig (which wins key by key)
//	pattern.acc = 'top-1 acc (\S+)%'
//	divergence = 4
//
//	[commands]                 # your own commands, run by sh -c in the terminal from
//	gpus = "nvidia-smi"        # the app list and the wall, with the selected app in
//	                           # WICK_* variables; [keys] binds them like actions
//
//	[alerts]                   # while the UI runs: when an app of this home ends
//	when = ["failed", "alarm"] # (ended, failed, alarm) say so by
//	notify = "bell"            # bell, osc9, osc777 or off
//	on_end = "notify-send $WICK_APP_ID" # the on_end run option's default: run
//	                           # when the app ends, UI or not
//	on_alarm = "notify-send \"$WICK_ALARM\"" # on_alarm's: run on an alarm
type Settings struct {
	// Theme names the theme; "" or "auto" picks dark or light from the terminal.
	Theme string
	// Keys maps action names to their keys.
	Keys map[string][]string
	// Metrics holds the [metrics] section: the keys of engine/metrics.ParseConfig.
	Metrics map[string]string
	// Commands are the user's commands of [commands], in the file's order.
	Commands []UserCommand
	// Alerts is the [alerts] section.
	Alerts Alerts
}

// UserCommand is a command of [commands]: a name (an action name, bound by [keys])
// and the shell command run for it.
type UserCommand struct {
	Name, Command string
}

// Alerts says when the UI tells the user about an app of this home that changed
// behind their back, and how.
type Alerts struct {
	// When holds the events that alert: "ended" (any end), "failed", "alarm" (a
	// metric alarm or a hang). Unset: failed and alarm.
	When []string
	// Notify is how: "bell" (BEL), "osc9" (a desktop notification: iTerm2, kitty,
	// WezTerm, Windows Terminal), "osc777" (urxvt, foot, Ghostty), or "off".
	Notify string
	// OnEnd is the default of the on_end run option: a shell command run when the
	// app ends, UI or not (engine/alerts).
	OnEnd string
	// OnAlarm is the default of the on_alarm run option: a shell command run when
	// the app raises an alarm, UI or not.
	OnAlarm string
}

// The events and the ways of [alerts].
var (
	alertEvents  = []string{"ended", "failed", "alarm"}
	alertNotify  = []string{"bell", "osc9", "osc777", "off"}
	defaultAlert = Alerts{When: []string{"failed", "alarm"}, Notify: "bell"}
)

// maxUserCommand bounds a user command's length.
const maxUserCommand = 4096

// WithAlerts is cfg with [alerts] on_end and on_alarm as the defaults of the
// scheduler's run options of those names (opts): what -cfg or .torchxconfig set wins.
func WithAlerts(cfg spec.Cfg, opts spec.RunOpts, a Alerts) spec.Cfg {
	for k, v := range map[string]string{alerts.OptOnEnd: a.OnEnd, alerts.OptOnAlarm: a.OnAlarm} {
		if v == "" {
			continue
		}
		if _, set := cfg[k]; set || !slices.ContainsFunc(opts, func(o spec.RunOpt) bool { return o.Name == k }) {
			continue
		}
		cfg = cfg.Merge(spec.Cfg{k: v})
	}
	return cfg
}

// alertsConfig is the UI's Config with [alerts] on_end and on_alarm as the defaults
// of the run options of those names.
type alertsConfig struct {
	common.Config
	alerts Alerts
}

// RunOpts is the Config's run options with on_end and on_alarm defaulted.
func (c alertsConfig) RunOpts(scheduler string, opts spec.RunOpts) (spec.Cfg, error) {
	cfg, err := c.Config.RunOpts(scheduler, opts)
	if err != nil {
		return cfg, err
	}
	return WithAlerts(cfg, opts, c.alerts), nil
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
	// A regular file of a bounded size: a FIFO must not hang the UI at start, nor
	// /dev/zero fill its memory. A link is followed (dotfiles are often links).
	data, err := safefs.ReadUserFile(path, maxSettingsFile)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("settings: %w", err)
	}
	entries, err := themes.ParseTOML(string(data))
	if err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	var actions []string
	for _, n := range newActions().Names() {
		actions = append(actions, string(n))
	}
	builtin := slices.Clone(actions)
	for _, e := range entries {
		// [keys] binds the user's commands too, wherever [commands] is in the file.
		if e.Section == "commands" {
			actions = append(actions, e.Key)
		}
	}
	s.Alerts = defaultAlert
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
			if err := themes.CheckName(v); err != nil {
				return s, bad("%v", err)
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
		case e.Section == "commands":
			c, err := userCommand(e, builtin)
			if err != nil {
				return s, bad("%v", err)
			}
			s.Commands = append(s.Commands, c)
		case e.Section == "alerts":
			if err := s.Alerts.set(e); err != nil {
				return s, bad("%v", err)
			}
		default:
			return s, bad("unknown section [%s] (want [keys], [metrics], [commands] or [alerts])", e.Section)
		}
	}
	return s, nil
}

// userCommand reads an entry of [commands]: NAME = "shell command".
func userCommand(e themes.Entry, builtin []string) (UserCommand, error) {
	v, ok := e.Value.(string)
	switch {
	case !ok || strings.TrimSpace(v) == "":
		return UserCommand{}, fmt.Errorf("command %s must be a shell command in a string, e.g. %s = \"nvidia-smi\"", e.Key, e.Key)
	case len(v) > maxUserCommand:
		return UserCommand{}, fmt.Errorf("command %s is over %d bytes", e.Key, maxUserCommand)
	case slices.Contains(builtin, e.Key):
		return UserCommand{}, fmt.Errorf("command %s has the name of one of wick's actions: name it otherwise", e.Key)
	}
	for _, r := range e.Key {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return UserCommand{}, fmt.Errorf("command name %q: use lowercase letters, digits, - and _", e.Key)
		}
	}
	return UserCommand{Name: e.Key, Command: v}, nil
}

// set reads an entry of [alerts].
func (a *Alerts) set(e themes.Entry) error {
	switch e.Key {
	case "when":
		var when []string
		switch v := e.Value.(type) {
		case string:
			when = []string{v}
		case []string:
			when = v
		default:
			return fmt.Errorf("when must be an array of events (%s)", strings.Join(alertEvents, ", "))
		}
		for _, w := range when {
			if !slices.Contains(alertEvents, w) {
				return fmt.Errorf("when: unknown event %q (want %s)%s", w, strings.Join(alertEvents, ", "), spec.DidYouMean(w, alertEvents))
			}
		}
		a.When = when
	case "notify":
		v, ok := e.Value.(string)
		if !ok || !slices.Contains(alertNotify, v) {
			return fmt.Errorf("notify must be one of %s", strings.Join(alertNotify, ", "))
		}
		a.Notify = v
	case "on_end", "on_alarm":
		v, ok := e.Value.(string)
		if !ok || len(v) > maxUserCommand || strings.ContainsRune(v, 0) {
			return fmt.Errorf("%s must be a shell command in a string, e.g. %s = 'notify-send \"$WICK_APP_ID $WICK_STATE\"'", e.Key, e.Key)
		}
		if e.Key == "on_end" {
			a.OnEnd = v
		} else {
			a.OnAlarm = v
		}
	default:
		keys := []string{"when", "notify", "on_end", "on_alarm"}
		return fmt.Errorf("unknown key %q in [alerts] (want when, notify, on_end or on_alarm)%s", e.Key, spec.DidYouMean(e.Key, keys))
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// pickTheme chooses the theme: the flag, then the settings file; "" or "auto" starts
// dark and follows the terminal's background once it answers. Under NO_COLOR (or
// TERM=dumb) there is none at all, but a theme that does not load is still an error:
// the same command must not fail only once the colours come back.
func pickTheme(flag string, s Settings, dir string, getenv func(string) string) (t *themes.Theme, auto bool, err error) {
	name := flag
	if name == "" {
		name = s.Theme
	}
	if name != "" && name != themes.AutoName {
		t, err = themes.Load(name, dir)
	}
	switch {
	case err != nil:
		return nil, false, err
	case getenv("NO_COLOR") != "" || getenv("TERM") == "dumb":
		return themes.Plain(), false, nil
	case t == nil:
		return themes.Default(), true, nil
	}
	return t, false, nil
}

// keyNames are the names of the keys that are not one character, as the terminal
// library spells them in a keystroke ("pgdown", "ctrl+shift+up").
var keyNames = map[string]bool{
	"enter": true, "tab": true, "backspace": true, "esc": true, "space": true,
	"up": true, "down": true, "left": true, "right": true, "begin": true, "find": true,
	"insert": true, "delete": true, "select": true, "pgup": true, "pgdown": true,
	"home": true, "end": true,
}

// keyMods are the modifiers a keystroke may start with, in any order.
var keyMods = map[string]bool{"ctrl": true, "alt": true, "shift": true, "meta": true, "hyper": true, "super": true}

// isKeyName reports whether k names a key a terminal can send: modifiers, then one
// printable character or a key name ("q", "G", "ctrl+t", "shift+tab", "f5").
func isKeyName(k string) bool {
	parts := strings.Split(k, "+")
	if k == "+" || strings.HasSuffix(k, "++") {
		parts = append(parts[:len(parts)-2], "+") // "+" and "ctrl++": the key is '+'
	}
	base := parts[len(parts)-1]
	seen := map[string]bool{}
	for _, m := range parts[:len(parts)-1] {
		if !keyMods[m] || seen[m] {
			return false
		}
		seen[m] = true
	}
	if r := []rune(base); len(r) == 1 {
		return unicode.IsPrint(r[0]) && !unicode.IsSpace(r[0])
	}
	if n, ok := strings.CutPrefix(base, "f"); ok {
		if i, err := strconv.Atoi(n); err == nil && i >= 1 && i <= 63 && strconv.Itoa(i) == n {
			return true
		}
	}
	return keyNames[base]
}

// overlayKinds are the modal overlays' kinds: they read only their own rows, so a
// global row never competes with theirs.
var overlayKinds = []common.Kind{kindConfirm, kindPalette}

// sharedViews returns the kinds of view where rows a and b both work, and whether
// they share any; every is true when both work in every view.
func sharedViews(a, b common.Action) (kinds []common.Kind, every, ok bool) {
	switch {
	case a.Global() && b.Global():
		return nil, true, true
	case a.Global():
		a, b = b, a
		fallthrough
	case b.Global():
		for _, k := range a.Views {
			if !slices.Contains(overlayKinds, k) {
				kinds = append(kinds, k)
			}
		}
	default:
		for _, k := range a.Views {
			if slices.Contains(b.Views, k) {
				kinds = append(kinds, k)
			}
		}
	}
	return kinds, false, len(kinds) > 0
}

// maxBindingProblems is how many problems of [keys] one error names.
const maxBindingProblems = 4

// checkBindings tells what is wrong with the user's [keys] (user, by action name) in
// the action table rows: a key no terminal sends, ctrl+c on another action than quit
// (ctrl+c always quits), and a key that another action of the same view has too,
// naming the key and both actions. Clashes among wick's own defaults are not the
// user's doing and are not reported.
func checkBindings(rows []common.Action, user map[string][]string) error {
	var problems []string
	// clash is two actions sharing a key, and where.
	type clash struct {
		key, x, y string
		every     bool
		kinds     []common.Kind
	}
	var clashes []*clash
	find := func(k, x, y string) *clash {
		for _, c := range clashes {
			if c.key == k && c.x == x && c.y == y {
				return c
			}
		}
		c := &clash{key: k, x: x, y: y}
		clashes = append(clashes, c)
		return c
	}
	for _, name := range slices.Sorted(maps.Keys(user)) {
		for _, k := range user[name] {
			switch {
			case !isKeyName(k):
				problems = append(problems, fmt.Sprintf("%s = %q: not a key (one character, or a name such as enter, esc, pgdown, f5, with ctrl+, alt+ or shift+ before it)", name, k))
				continue
			case k == "ctrl+c" && common.ActionName(name) != common.ActQuit:
				problems = append(problems, fmt.Sprintf("%s = %q: ctrl+c always quits", name, k))
				continue
			}
			for _, a := range rows {
				if string(a.Name) != name {
					continue
				}
				for _, b := range rows {
					if string(b.Name) == name || !slices.Contains(b.Binding.Keys(), k) {
						continue
					}
					kinds, every, ok := sharedViews(a, b)
					if !ok {
						continue
					}
					x, y := name, string(b.Name)
					if _, mine := user[y]; mine && y < x {
						x, y = y, x // both are the user's: one message, either way round
					}
					c := find(k, x, y)
					c.every = c.every || every
					for _, kind := range kinds {
						if !slices.Contains(c.kinds, kind) {
							c.kinds = append(c.kinds, kind)
						}
					}
				}
			}
		}
	}
	for _, c := range clashes {
		where := "in every view"
		if !c.every {
			where = "in the " + joinKinds(c.kinds) + " view"
			if len(c.kinds) > 1 {
				where += "s"
			}
		}
		problems = append(problems, fmt.Sprintf("key %q is bound to both %s and %s (%s)", c.key, c.x, c.y, where))
	}
	if len(problems) == 0 {
		return nil
	}
	if n := len(problems) - maxBindingProblems; n > 0 {
		problems = append(problems[:maxBindingProblems], fmt.Sprintf("and %d more", n))
	}
	return errors.New(strings.Join(problems, "; "))
}

// joinKinds lists kinds of view for a message: "apps, describe".
func joinKinds(kinds []common.Kind) string {
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}
