package tui

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeysDocIsCurrent fails when docs/keys.md is not what the action table makes of
// it: a key added, rebound or described anew without `make docs`.
func TestKeysDocIsCurrent(t *testing.T) {
	path := filepath.Join("..", KeysDocPath)
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (make docs writes it)", err)
	}
	want := KeysDoc()
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s is stale: run `make docs`. First difference, line %d:\n file:  %q\n table: %q", KeysDocPath, i+1, g, w)
			}
		}
	}
}

// TestKeysDocListsEveryAction checks the generated page itself: every action of the
// table appears in it by name, and the views' sections are there.
func TestKeysDocListsEveryAction(t *testing.T) {
	doc := string(KeysDoc())
	for _, n := range newActions().Names() {
		if !strings.Contains(doc, "| `"+string(n)+"` |") {
			t.Errorf("action %q is not in the keys page", n)
		}
	}
	for _, v := range viewTitles {
		if !strings.Contains(doc, "(`"+string(v.kind)+"`)") {
			t.Errorf("no section for view %q", v.kind)
		}
	}
}
