package wall

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

func TestSanitize(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text", "plain text"},
		{"\x1b[31mred\x1b[0m ok", "\x1b[31mred\x1b[0m ok\x1b[0m"},
		{"a\x1b[2J\x1b[Hb\x1b[10;5fc\x1b[Kd", "abcd"},
		{"  0%|          |\r 50%|#####     |\r100%|##########|", "100%|##########|"},
		{"done\r", "done"},
		{"title\x1b]0;pwned\x07 ok", "title ok"},
		{"link \x1b]8;;http://x\x1b\\x\x1b]8;;\x1b\\", "link x"},
		{"a\tb", "a       b"},
		{"bin\x00\x01\xff\xfeary", "bin\uFFFD\uFFFD\uFFFD\uFFFDary"},
		{"c1 \u009b31m", "c1 \uFFFD31m"},
		{"\x1b[?1049h\x1b[?25lhidden", "hidden"},
		{"unterminated \x1b[12", "unterminated "},
	} {
		if got := Sanitize(c.in); got != c.want {
			t.Errorf("Sanitize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSanitizeHugeLine(t *testing.T) {
	in := strings.Repeat("x", 1<<20)
	got := Sanitize(in)
	if len(got) > maxLineBytes+64 || !strings.HasSuffix(got, "more bytes]") {
		t.Fatalf("a 1 MB line gave %d bytes ending %q", len(got), got[len(got)-20:])
	}
}

// FuzzSanitize: whatever the bytes, the result is valid UTF-8 without control
// characters other than the ESC of SGR sequences, and draws no wider than it is long.
func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"a\x1b[31mb", "\r\r\n", "\x1b]0;x\x07", "\xff\x00", "\x1b[", "tab\there"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Sanitize(s)
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8: %q", got)
		}
		plain := ansi.Strip(got)
		for _, r := range plain {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("control character %q left in %q", r, got)
			}
		}
		if strings.Contains(plain, "\x1b") {
			t.Fatalf("escape left in %q", got)
		}
	})
}
