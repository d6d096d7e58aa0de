package common

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/themes"
)

func TestFuzzyRanksNamesLikeFzf(t *testing.T) {
	score := func(p, s string) int {
		sc, _, ok := Fuzzy(p, s)
		if !ok {
			return -1 << 30
		}
		return sc
	}
	if score("ue", "utils.echo") <= score("ue", "dist.uneven") {
		t.Error("word starts should beat inner matches")
	}
	if score("abc", "xabcx") <= score("abc", "xaxbxcx") {
		t.Error("consecutive matches should win")
	}
	if _, _, ok := Fuzzy("xyz", "utils.echo"); ok {
		t.Error("xyz matched utils.echo")
	}
	if _, pos, ok := Fuzzy("UE", "utils.echo"); !ok || len(pos) != 2 || pos[0] != 0 || pos[1] != 6 {
		t.Errorf("positions = %v, %v", pos, ok)
	}
	got := Highlight("utils.echo", []int{0, 6}, strings.ToUpper, func(s string) string { return s })
	if got != "Utils.Echo" {
		t.Errorf("Highlight = %q", got)
	}
}

func press(s string) tea.KeyPressMsg {
	switch s {
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case "home":
		return tea.KeyPressMsg{Code: tea.KeyHome}
	case "ctrl+w":
		return tea.KeyPressMsg{Code: 'w', Mod: tea.ModCtrl}
	case "ctrl+k":
		return tea.KeyPressMsg{Code: 'k', Mod: tea.ModCtrl}
	}
	return tea.KeyPressMsg{Code: []rune(s)[0], Text: s}
}

func TestInputEdits(t *testing.T) {
	in := NewInput("> ")
	if in.Update(press("a")) {
		t.Fatal("a blurred input took a key")
	}
	in.Focus()
	for _, k := range []string{"h", "e", "l", "l", "o", " ", "w", "o", "r", "l", "d"} {
		in.Update(press(k))
	}
	in.Update(press("ctrl+w"))
	if in.Value() != "hello " {
		t.Fatalf("after ctrl+w: %q", in.Value())
	}
	in.Update(press("backspace"))
	in.Update(press("home"))
	in.Update(press("¡"))
	in.Update(tea.PasteMsg{Content: "x\ny\x07"})
	if in.Value() != "¡x yhello" {
		t.Fatalf("value = %q", in.Value())
	}
	in.Update(press("ctrl+k"))
	if in.Value() != "¡x y" {
		t.Fatalf("after ctrl+k: %q", in.Value())
	}
	in.SetValue(strings.Repeat("abcdefghij", 10))
	in.SetWidth(20)
	v := in.View(themes.Plain())
	if w := ansi.StringWidth(v); w > 22 {
		t.Fatalf("a 20-wide input drew %d columns: %q", w, v)
	}
}

func TestIsEditKey(t *testing.T) {
	for _, k := range []tea.KeyPressMsg{press("q"), press("?"), press("backspace"), press("ctrl+w"), {Code: 'Q', Text: "Q", Mod: tea.ModShift}} {
		if !IsEditKey(k) {
			t.Errorf("%v is not an edit key", k)
		}
	}
	for _, k := range []tea.KeyPressMsg{{Code: tea.KeyEnter}, {Code: tea.KeyEscape}, {Code: tea.KeyTab}, {Code: 'c', Mod: tea.ModCtrl}, {Code: tea.KeyUp}} {
		if IsEditKey(k) {
			t.Errorf("%v is an edit key", k)
		}
	}
}

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	if a, ok := r.Match(press("d"), KindApps); !ok || a.Name != ActDescribe {
		t.Fatalf("d in apps = %v %v", a.Name, ok)
	}
	if a, ok := r.Match(tea.KeyPressMsg{Code: tea.KeyEnter}, KindPreview); !ok || a.Name != ActLaunch {
		t.Fatalf("enter in preview = %v %v", a.Name, ok)
	}
	if _, ok := r.Match(press("d"), KindPreview); ok {
		t.Fatal("d works in the preview")
	}
	if err := r.Rebind("qiut", []string{"x"}); err == nil || !strings.Contains(err.Error(), `did you mean "quit"?`) {
		t.Fatalf("Rebind(qiut) = %v", err)
	}
	if err := r.Rebind(ActQuit, []string{"ctrl+q"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Match(press("q"), KindApps); ok {
		t.Fatal("q still quits")
	}
	for _, kind := range []Kind{KindPicker, KindForm, KindPreview, KindLaunch, KindApps, KindDescribe, KindLogs} {
		if len(r.ShortHelp(kind)) == 0 {
			t.Errorf("%s has no short help", kind)
		}
	}
	b, ok := WhileTyping(r.actions[len(r.actions)-1].Binding) // ctrl+q only now
	if !ok || b.Help().Key != "ctrl+q" {
		t.Fatalf("WhileTyping = %v %v", b.Help(), ok)
	}
}

func TestLayout(t *testing.T) {
	s := Fit("a\nbbbbbbbbbb\nc\nd", 5, 3)
	if s != "a    \nbbbb…\nc    " {
		t.Fatalf("Fit = %q", s)
	}
	over := Overlay("aaaaaaaa\nbbbbbbbb\ncccccccc", "XX", 8, 3)
	if ansi.Strip(over) != "aaaaaaaa\nbbbXXbbb\ncccccccc" {
		t.Fatalf("Overlay = %q", ansi.Strip(over))
	}
	if got := Reflow("one\ntwo\n\nthree\n  - item\n  - item2"); got != "one two\n\nthree\n  - item\n  - item2" {
		t.Fatalf("Reflow = %q", got)
	}
	if Width("héllo") != 5 || Width("\x1b[1mhi\x1b[0m") != 2 || Width("abc") != 3 {
		t.Fatal("Width is wrong")
	}
}

func TestTableShrinksTheFlexColumn(t *testing.T) {
	tb := Table{Headers: []string{"HANDLE", "STATE"}}
	tb.SetRows([][]string{{strings.Repeat("h", 40), "RUNNING"}})
	w := tb.Widths(30)
	if w[0]+2+w[1] > 30 || w[1] != 7 {
		t.Fatalf("widths = %v", w)
	}
	if got := Columns(tb.Row(0), w); ansi.StringWidth(got) > 30 || !strings.HasSuffix(got, "RUNNING") {
		t.Fatalf("line = %q", got)
	}
}

func TestCursorAndPager(t *testing.T) {
	var c Cursor
	c.Do(ActBottom, 100, 10)
	if c.Index != 99 || c.Offset != 90 {
		t.Fatalf("bottom: %+v", c)
	}
	c.Wheel(-WheelStep, 100, 10)
	if c.Offset != 87 || c.Index != 96 {
		t.Fatalf("wheel: %+v", c)
	}
	if !c.Click(0, 100) || c.Index != 87 {
		t.Fatalf("click: %+v", c)
	}
	var p Pager
	p.SetText(strings.Repeat("line\n", 50))
	p.Do(ActPageDown, 10)
	if p.Offset() != 9 || p.Position(10) != "10-19/50" {
		t.Fatalf("pager at %d, %q", p.Offset(), p.Position(10))
	}
	p.Do(ActBottom, 10)
	if got := strings.Count(p.View(3, 10), "\n"); got != 9 || p.Offset() != 40 {
		t.Fatalf("bottom: offset %d, %d newlines", p.Offset(), got)
	}
}
