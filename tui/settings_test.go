package tui_test

import (
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/tui"
)

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadSettings(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	if s, err := tui.LoadSettings(path); err != nil || s.Theme != "" {
		t.Fatalf("missing file: %+v, %v", s, err)
	}
	writeFile(t, path, "theme = \"light\"\n[keys]\nquit = [\"q\", \"ctrl+q\"]\nlogs = \"L\"\n")
	s, err := tui.LoadSettings(path)
	if err != nil || s.Theme != "light" || len(s.Keys["quit"]) != 2 || s.Keys["logs"][0] != "L" {
		t.Fatalf("settings = %+v, %v", s, err)
	}
	for in, want := range map[string]string{
		"them = \"light\"":         `line 1: unknown key "them" (did you mean "theme"?)`,
		"[keys]\nqiut = \"q\"":     `line 2: unknown action "qiut" (did you mean "quit"?)`,
		"[colors]\nx = \"y\"":      `line 2: unknown section [colors]`,
		"theme = true":             `line 1: theme must be a string`,
		"[keys]\nquit = []":        `line 2: action quit has no keys`,
		"theme = \"light\" extra!": `line 1: expected newline`,
	} {
		writeFile(t, path, in)
		if _, err := tui.LoadSettings(path); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("LoadSettings(%q) = %v, want %q", in, err, want)
		}
	}
}

func TestThemeChoice(t *testing.T) {
	opts := newEnv(t).opts
	dir := t.TempDir()
	opts.SettingsPath = filepath.Join(dir, "config.toml")
	writeFile(t, filepath.Join(dir, "themes", "ocean.toml"), "accent = \"#00ffff\"\n")

	// The flag, a user theme by name.
	opts.Theme = "ocean"
	d := newDriver(t, opts, 100, 20)
	if !strings.Contains(d.m.Screen(), "\x1b[") {
		t.Fatal("the ocean theme draws no color")
	}

	// A broken user theme: a clear error naming file and line.
	writeFile(t, filepath.Join(dir, "themes", "bad.toml"), "\nacent = \"#00ffff\"\n")
	opts.Theme = "bad"
	if _, err := tui.NewModel(opts); err == nil || !strings.Contains(err.Error(), `bad.toml:line 2: unknown key "acent"`) {
		t.Fatalf("bad theme: %v", err)
	}

	// The settings file names the theme when the flag does not.
	opts.Theme = ""
	writeFile(t, opts.SettingsPath, "theme = \"nosuch\"\n")
	if _, err := tui.NewModel(opts); err == nil || !strings.Contains(err.Error(), `unknown theme "nosuch"`) {
		t.Fatalf("settings theme: %v", err)
	}
}

func TestNoColor(t *testing.T) {
	e := newEnv(t)
	s := seed(e)
	opts := e.opts
	getenv := opts.Getenv
	opts.Getenv = func(k string) string {
		if k == "NO_COLOR" {
			return "1"
		}
		return getenv(k)
	}
	opts.Theme = "dark" // NO_COLOR wins
	d := newDriver(t, opts, 120, 24)
	scr := d.m.Screen()
	// Only reverse video (the selection) and resets may remain.
	for _, seq := range []string{"\x1b[38", "\x1b[48", "\x1b[3"} {
		if strings.Contains(strings.ReplaceAll(scr, "\x1b[39m", ""), seq) {
			t.Fatalf("NO_COLOR screen has color %q:\n%q", seq, scr)
		}
	}
	d.selected(s.serve)
	d.contains("RUNNING", "SUCCEEDED", "FAILED", "CANCELLED")

	// A theme that does not exist is refused under NO_COLOR too, not only once the
	// colours come back.
	opts.Theme = "nosuch"
	if _, err := tui.NewModel(opts); err == nil || !strings.Contains(err.Error(), `unknown theme "nosuch"`) {
		t.Errorf("--theme nosuch under NO_COLOR: %v", err)
	}
}

func TestAutoThemeFollowsBackground(t *testing.T) {
	opts := newEnv(t).opts
	opts.Theme = "auto"
	d := newDriver(t, opts, 100, 20)
	dark := d.m.Screen()
	d.send(tea.BackgroundColorMsg{Color: color.White})
	if light := d.m.Screen(); light == dark {
		t.Fatal("a light background did not change the theme")
	}
}

func TestKeysFromSettings(t *testing.T) {
	e := newEnv(t)
	s := seed(e)
	opts := e.opts
	opts.SettingsPath = filepath.Join(t.TempDir(), "config.toml")
	writeFile(t, opts.SettingsPath, "[keys]\nquit = \"ctrl+q\"\ndescribe = [\"enter\", \"i\"]\n")
	d := newDriver(t, opts, 120, 24)
	d.contains("enter/i describe")
	d.keys("?", "G")
	d.contains("ctrl+q", "quit")
	d.keys("esc")
	d.keys("q")
	if d.quit {
		t.Fatal("q still quits")
	}
	d.keys("i")
	d.contains("handle:   " + s.serve)
	d.keys("ctrl+q")
	if !d.quit {
		t.Fatal("ctrl+q does not quit")
	}
}

// TestPaletteKeysFromSettings: the palette's own keys are rows of the action table,
// rebound by name like any other.
func TestPaletteKeysFromSettings(t *testing.T) {
	opts := newEnv(t).opts
	opts.SettingsPath = filepath.Join(t.TempDir(), "config.toml")
	writeFile(t, opts.SettingsPath, "[keys]\nclose-palette = \"ctrl+g\"\n")
	d := newDriver(t, opts, 120, 30)
	d.keys(":")
	d.contains("action name")
	d.keys("esc")
	d.contains("action name") // esc no longer closes it
	d.keys("ctrl+g")
	d.lacks("action name")
}

// TestCommandsAndAlertsSettings: [commands] names shell commands that [keys] binds
// (before or after it in the file); [alerts] says when and how. Each mistake is one
// error naming its line.
func TestCommandsAndAlertsSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	writeFile(t, path, "[keys]\ngpus = \"G\"\n[commands]\ngpus = \"nvidia-smi\"\nhtop = \"htop -p $WICK_PID\"\n[alerts]\nwhen = [\"ended\", \"alarm\"]\nnotify = \"osc9\"\n")
	s, err := tui.LoadSettings(path)
	if err != nil || len(s.Commands) != 2 || s.Commands[0] != (tui.UserCommand{Name: "gpus", Command: "nvidia-smi"}) ||
		s.Keys["gpus"][0] != "G" || s.Alerts.Notify != "osc9" || strings.Join(s.Alerts.When, ",") != "ended,alarm" {
		t.Fatalf("settings = %+v, %v", s, err)
	}
	writeFile(t, path, "")
	if s, _ := tui.LoadSettings(path); s.Alerts.Notify != "bell" || strings.Join(s.Alerts.When, ",") != "failed,alarm" {
		t.Errorf("default alerts: %+v", s.Alerts)
	}
	for in, want := range map[string]string{
		"[commands]\nlogs = \"less\"":    `line 2: command logs has the name of one of wick's actions`,
		"[commands]\nGpu = \"x\"":        `line 2: command name "Gpu": use lowercase letters`,
		"[commands]\ngpus = \"  \"":      `line 2: command gpus must be a shell command in a string`,
		"[alerts]\nwhen = [\"faild\"]":   `line 2: when: unknown event "faild" (want ended, failed, alarm) (did you mean "failed"?)`,
		"[alerts]\nnotify = \"desktop\"": `line 2: notify must be one of bell, osc9, osc777, off`,
		"[alerts]\non = [\"failed\"]":    `line 2: unknown key "on" in [alerts]`,
		"[keys]\ngpus = \"G\"":           `line 2: unknown action "gpus"`,
	} {
		writeFile(t, path, in)
		if _, err := tui.LoadSettings(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadSettings(%q) = %v, want %q", in, err, want)
		}
	}
}
