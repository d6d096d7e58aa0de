package common

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

const (
	kindList Kind = "list"
	kindPage Kind = "page"
)

// testRows is a small action table: two views' own rows, moves, and global rows.
func testRows() *Registry {
	return NewRegistry(
		[]Action{NewAction("open", "open", []string{"enter", "d"}, true, kindList)},
		Moves(kindList),
		[]Action{NewAction("run", "run", []string{"enter"}, true, kindPage)},
		[]Action{
			NewAction(ActBack, "back", []string{"esc"}, true),
			NewAction(ActQuit, "quit", []string{"q", "ctrl+c"}, true),
		},
	)
}

func TestRegistry(t *testing.T) {
	r := testRows()
	if a, ok := r.Match(press("d"), kindList); !ok || a.Name != "open" {
		t.Fatalf("d in the list = %v %v", a.Name, ok)
	}
	if a, ok := r.Match(tea.KeyPressMsg{Code: tea.KeyEnter}, kindPage); !ok || a.Name != "run" {
		t.Fatalf("enter in the page = %v %v", a.Name, ok)
	}
	if _, ok := r.Match(press("d"), kindPage); ok {
		t.Fatal("d works in the page")
	}
	if a, ok := r.Match(press("j"), kindList); !ok || a.Name != ActDown {
		t.Fatalf("j in the list = %v %v", a.Name, ok)
	}
	if err := r.Rebind("qiut", []string{"x"}); err == nil || !strings.Contains(err.Error(), `did you mean "quit"?`) {
		t.Fatalf("Rebind(qiut) = %v", err)
	}
	if err := r.Rebind(ActQuit, []string{"ctrl+q"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Match(press("q"), kindList); ok {
		t.Fatal("q still quits")
	}
	if got := r.For(kindList); got[0].Name != "open" || got[len(got)-1].Name != ActQuit {
		t.Fatalf("For(list) = %v: own rows first, global ones last", got)
	}
	for _, kind := range []Kind{kindList, kindPage} {
		if len(r.ShortHelp(kind)) == 0 {
			t.Errorf("%s has no short help", kind)
		}
	}
	b, ok := WhileTyping(r.actions[len(r.actions)-1].Binding) // ctrl+q only now
	if !ok || b.Help().Key != "ctrl+q" {
		t.Fatalf("WhileTyping = %v %v", b.Help(), ok)
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
