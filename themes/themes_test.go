package themes_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/themes"
)

func TestBuiltinsColorAndPlainDoesNot(t *testing.T) {
	for _, name := range themes.Names() {
		th, ok := themes.Builtin(name)
		if !ok {
			t.Fatalf("builtin %q missing", name)
		}
		if got := th.State(spec.Failed, "FAILED"); got == "FAILED" || ansi.Strip(got) != "FAILED" {
			t.Errorf("%s: State(FAILED) = %q, want colored FAILED", name, got)
		}
		if got := th.Prefix(-3, "w/0"); ansi.Strip(got) != "w/0" {
			t.Errorf("%s: Prefix = %q", name, got)
		}
	}
	p := themes.Plain()
	for _, got := range []string{p.Header("h"), p.Key("k"), p.Value("v"), p.Dim("d"), p.State(spec.Running, "r"), p.Prefix(1, "p"), p.Stderr("e"), p.Error("x")} {
		if strings.Contains(got, "\x1b") {
			t.Errorf("plain theme colors: %q", got)
		}
	}
	if !p.IsPlain() {
		t.Error("Plain is not plain")
	}
}

func TestParseColor(t *testing.T) {
	for _, ok := range []string{"#fff", "#7aa2f7", "0", "15", "255"} {
		if _, err := themes.ParseColor(ok); err != nil {
			t.Errorf("ParseColor(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "#ff", "#gggggg", "#1234567", "256", "-1", "red", "#12345"} {
		if _, err := themes.ParseColor(bad); err == nil {
			t.Errorf("ParseColor(%q) succeeded", bad)
		}
	}
}

func TestParseTheme(t *testing.T) {
	th, err := themes.Parse("mine", `
# a comment
base = "light"   # start from light
accent = "#ff79c6"
succeeded = "10"
prefixes = ["#8be9fd", "#50fa7b"]
`)
	if err != nil {
		t.Fatal(err)
	}
	if th.Name != "mine" || len(th.Palette.Prefixes) != 2 {
		t.Fatalf("theme = %+v", th)
	}
	light, _ := themes.Builtin(themes.Light)
	if th.Palette.Fg != light.Palette.Fg {
		t.Error("base = light did not start from light")
	}
}

func TestParseThemeErrors(t *testing.T) {
	cases := map[string]string{
		`acent = "#ffffff"`:                    `line 1: unknown key "acent" (did you mean "accent"?)`,
		"\n\naccent = \"#zzzzzz\"":             `line 3: accent: "#zzzzzz" is not a color`,
		`accent = #ffffff`:                     `line 1: accent: missing value ('#' starts a comment: quote colors`,
		`accent = 12`:                          `line 1: accent: a color must be a quoted string`,
		`base = "solarized"`:                   `line 1: base "solarized" is not a builtin theme`,
		"[colors]\naccent = \"#ffffff\"":       `line 2: theme files have no sections`,
		`prefixes = ["#fff", "nope"]`:          `line 1: prefixes: "nope" is not a color`,
		"accent = \"#fff\"\naccent = \"#000\"": `line 2: accent is set twice (first on line 1)`,
		`accent "#fff"`:                        `line 1: expected '=' after key`,
	}
	for in, want := range cases {
		_, err := themes.Parse("x", in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", in, err, want)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ocean.toml"), []byte(`accent = "#00ffff"`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.toml"), []byte("\nfg = \"blue\""), 0o644); err != nil {
		t.Fatal(err)
	}
	if th, err := themes.Load("ocean", dir); err != nil || th.Name != "ocean" {
		t.Fatalf("Load(ocean) = %v, %v", th, err)
	}
	if th, err := themes.Load("high-contrast", dir); err != nil || th.Name != "high-contrast" {
		t.Fatalf("Load(high-contrast) = %v, %v", th, err)
	}
	_, err := themes.Load("broken", dir)
	if err == nil || !strings.Contains(err.Error(), "broken.toml:line 2: fg: \"blue\" is not a color") {
		t.Fatalf("Load(broken) = %v", err)
	}
	_, err = themes.Load("ligth", dir)
	if err == nil || !strings.Contains(err.Error(), `unknown theme "ligth"`) || !strings.Contains(err.Error(), `did you mean "light"?`) {
		t.Fatalf("Load(ligth) = %v", err)
	}
}

func TestForBackground(t *testing.T) {
	if themes.ForBackground(true).Name != themes.Dark || themes.ForBackground(false).Name != themes.Light {
		t.Fatal("ForBackground picks the wrong theme")
	}
}

func TestParseTOML(t *testing.T) {
	entries, err := themes.ParseTOML(`
theme = 'light' # literal string
n = 1_000
on = true
[keys]
quit = ["q", "ctrl+q"]
esc = "a\"b#c"
`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, e := range entries {
		got[e.Section+"."+e.Key] = e.Value
	}
	if got[".theme"] != "light" || got[".n"] != int64(1000) || got[".on"] != true || got["keys.esc"] != `a"b#c` {
		t.Fatalf("entries = %#v", got)
	}
	if q, _ := got["keys.quit"].([]string); len(q) != 2 || q[1] != "ctrl+q" {
		t.Fatalf("quit = %#v", got["keys.quit"])
	}
	for _, bad := range []string{"[unclosed", "x = \"open", "x = [\"a\"", "x = [a]", "= 1", "x = 1.5", "[[arr]]"} {
		if _, err := themes.ParseTOML(bad); err == nil {
			t.Errorf("ParseTOML(%q) succeeded", bad)
		}
	}
}

// TestParseTOMLIsTOML: the files are read by a TOML parser (go-toml), so what TOML
// allows works (multi-line and escaped strings, hex integers, arrays over lines), and
// what wick's files do not hold, or bad syntax, is an error naming its line.
func TestParseTOMLIsTOML(t *testing.T) {
	entries, err := themes.ParseTOML("# settings\ntheme = \"\"\"\nlight\"\"\"\nn = 0x10\n\n[keys]\nquit = [\n  \"q\",\n  'ctrl+q', # a comment\n]\nlogs = \"\\u004c\"\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []themes.Entry{
		{Key: "theme", Value: "light", Line: 2},
		{Key: "n", Value: int64(16), Line: 4},
		{Section: "keys", Key: "quit", Value: []string{"q", "ctrl+q"}, Line: 7},
		{Section: "keys", Key: "logs", Value: "L", Line: 11},
	}
	if fmt.Sprint(entries) != fmt.Sprint(want) {
		t.Fatalf("entries\n%v\nwant\n%v", entries, want)
	}
	for in, msg := range map[string]string{
		"a = 1\n\n[a.b]\nx = 1":          "line 3: [a.b]: sections are not nested",
		"a = 1\nb.c = 1":                 "line 2: b.c: dotted keys are not used",
		"\n[keys]\nquit = [1, 2]":        "line 3: quit: array items must be quoted strings",
		"x = 1979-05-27":                 "line 1: x: ",
		"[k]\nx = 1\n[k]\ny = 2":         "line 3: ",
		"x = 1\ny = \"open\nz = 2":       "line 2: ",
		"x = { a = 1 }":                  "line 1: x: a table is not used here",
		"\n\n[[arr]]\nx = 1":             "line 3: [[arr]]: arrays of tables",
		"[keys]\nquit = 'q'\nquit = 'x'": "line 3: quit is set twice (first on line 2)",
	} {
		_, err := themes.ParseTOML(in)
		if err == nil || !strings.HasPrefix(err.Error(), msg) {
			t.Errorf("ParseTOML(%q) = %v, want an error starting %q", in, err, msg)
		}
	}
}
