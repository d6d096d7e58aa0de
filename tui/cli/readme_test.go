package cli

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeListsEveryVerb: README's table of verbs names every verb `wick --help`
// lists (help and version aside), so that a verb added is a verb a newcomer reads of.
func TestReadmeListsEveryVerb(t *testing.T) {
	h := newHarness(t)
	r := h.run("--help")
	if r.code != 0 {
		t.Fatalf("--help: %d %s", r.code, r.stderr)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, cmds, ok := strings.Cut(r.stdout, "Available Commands:\n")
	if !ok {
		t.Fatalf("no commands in --help:\n%s", r.stdout)
	}
	cmds, _, _ = strings.Cut(cmds, "\n\n")
	n := 0
	for _, l := range strings.Split(cmds, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] == "help" || f[0] == "version" {
			continue
		}
		n++
		if !strings.Contains(string(readme), "| `wick "+f[0]) {
			t.Errorf("README.md's verbs table lacks wick %s", f[0])
		}
	}
	if n < 10 {
		t.Errorf("read %d verbs from --help:\n%s", n, r.stdout)
	}
}
