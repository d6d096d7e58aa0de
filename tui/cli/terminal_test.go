package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIsTerminal: only a terminal is one. /dev/null is a character device too, and was
// taken for a terminal: `wick log H > /dev/null` wrote as to a screen, and wick with
// stdin from /dev/null opened the UI.
func TestIsTerminal(t *testing.T) {
	master, slave := openPTY(t)
	defer master.Close()
	defer slave.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, c := range []struct {
		name string
		f    *os.File
		want bool
	}{
		{"a pseudo-terminal", slave, true},
		{os.DevNull, null, false},
		{"a pipe", w, false},
		{"a file", file, false},
	} {
		if got := IsTerminal(c.f); got != c.want {
			t.Errorf("IsTerminal(%s) = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestUIWithStdinFromDevNull: `wick ui < /dev/null` on a terminal's stdout says it
// needs a terminal, as with any stdin that is not one.
func TestUIWithStdinFromDevNull(t *testing.T) {
	h := newHarness(t)
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"ui"}, Env{
		Stdin: null, Stdout: &out, Stderr: &errb, StdoutTTY: true,
		Getenv: h.getenv, Self: h.self, WorkDir: h.work,
	})
	if code != ExitUsage || !strings.Contains(errb.String(), "wick ui needs a terminal") {
		t.Errorf("wick ui < /dev/null: exit %d, stderr %q", code, errb.String())
	}
}
