package themes

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestStderrAsLipgloss: a stderr line is colored byte for byte as lipgloss colors it,
// in every builtin theme, for lines of letters, spaces, tqdm's bar glyphs, wide and
// combining characters, controls, tabs, invalid UTF-8 and C1 controls alike.
func TestStderrAsLipgloss(t *testing.T) {
	alphabet := []string{"a", "Z", "0", " ", "  ", "|", "%", "█", "▏", "▌", "⋯", "日本", "é", "e\u0301",
		"🙂", "\t", "\r", "\n", "\x00", "\x7f", "\u0085", "\xff", "\x1b", "[", "m", ";"}
	rng := rand.New(rand.NewPCG(37, 37))
	lines := []string{"", " ", "x", "loss=0.25 | 45%|████▌     | 45/100 [00:02<00:03, 20.0it/s]"}
	for range 5000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		lines = append(lines, b.String())
	}
	for _, name := range Names() {
		th, _ := Builtin(name)
		if !th.stderrSGR.ok {
			t.Errorf("%s: the stderr style's sequences were not found", name)
		}
		for _, s := range lines {
			if got, want := th.Stderr(s), th.stderr.Render(s); got != want {
				t.Fatalf("%s: Stderr(%q) = %q, lipgloss %q", name, s, got, want)
			}
		}
	}
}
