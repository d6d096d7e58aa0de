package components

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wick-dev/wick/internal/testkit"
)

// withDeadline fails the test if fn does not return in time (a FIFO used to hang).
func withDeadline(t *testing.T, fn func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(20*time.Second))
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("still reading after 20s")
	}
}

// aliasBomb is a 900 KB component file with one string alias repeated 150,000 times.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("bomb:\n  app:\n    name: x\n    roles:\n      - name: r\n        entrypoint: echo\n        args:\n")
	b.WriteString("          - &s \"" + strings.Repeat("x", 100) + "\"\n")
	for b.Len() < 900<<10 {
		b.WriteString("          - *s\n")
	}
	return b.String()
}

// laughs nests aliases: 10^7 copies of a string from a file of a few hundred bytes.
const laughs = `laughs:
  a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
  d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
  e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
  f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
  g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
`

// TestHostileComponentFiles: /dev/zero and alias bombs ran out of memory, a FIFO
// hung; in a search directory they broke `wick builtins` and the UI's picker.
func TestHostileComponentFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bomb := write("bomb.yaml", aliasBomb())
	lol := write("laughs.yaml", laughs)
	big := write("big.yaml", "x: "+strings.Repeat("y", maxFileSize)+"\n")
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	write("good.yaml", "good:\n  app:\n    name: g\n    roles:\n      - {name: r, entrypoint: echo}\n")
	for _, c := range []struct{ name, want string }{
		{"/dev/zero:x", "not a regular file"},
		{fifo + ":x", "not a regular file"},
		{bomb + ":bomb", "expands to more than"},
		{lol + ":laughs", "expands to more than"},
		{big + ":x", "larger than"},
	} {
		withDeadline(t, func() {
			_, err := Find(c.name, FindOptions{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want %q", c.name, err, c.want)
			}
		})
	}
	// In the search path: the good component is still found, each bad file is one error.
	withDeadline(t, func() {
		comps, errs := All(FindOptions{Dirs: []string{dir}})
		found := false
		for _, c := range comps {
			found = found || c.Name == "good"
		}
		if !found || len(errs) != 4 {
			t.Errorf("All: good found %v, errors %v", found, errs)
		}
	})
}
