package widget

import (
	"math/rand/v2"
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

func TestTableShrinksInOrderAndKeepsEnds(t *testing.T) {
	tb := Table{Headers: []string{"HANDLE", "NAME", "STATE"}, Steps: []Step{{Col: 1, Min: 8}, {Col: 0, Min: 8}}, KeepEnd: []int{0}}
	tb.SetRows([][]string{{"local_cwd://wick/" + strings.Repeat("h", 23) + "-appid", strings.Repeat("n", 18), "RUNNING"}})
	w := tb.Widths(50)
	if w[0]+2+w[1]+2+w[2] > 50 || w[2] != 7 || w[1] != 8 {
		t.Fatalf("widths = %v: NAME should give way first, down to 8", w)
	}
	got := tb.Line(0, w)
	if ansi.StringWidth(got) > 50 || !strings.HasSuffix(got, "RUNNING") || !strings.HasPrefix(got, "…") || !strings.Contains(got, "-appid ") {
		t.Fatalf("line = %q: the handle should keep its end (the app id)", got)
	}
	plain := Table{Headers: []string{"A", "B"}}
	plain.SetRows([][]string{{strings.Repeat("a", 40), "b"}})
	if got := plain.Line(0, plain.Widths(20)); !strings.HasPrefix(got, "aaa") {
		t.Fatalf("a table without KeepEnd cut a cell at its start: %q", got)
	}
}

func TestCursorAndPager(t *testing.T) {
	var c Cursor
	c.Do(Bottom, 100, 10)
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
	p.Do(PageDown, 10)
	if p.Offset() != 9 || p.Position(10) != "10-19/50" {
		t.Fatalf("pager at %d, %q", p.Offset(), p.Position(10))
	}
	p.Do(Bottom, 10)
	if got := strings.Count(p.View(3, 10), "\n"); got != 9 || p.Offset() != 40 {
		t.Fatalf("bottom: offset %d, %d newlines", p.Offset(), got)
	}
}

func TestTableDropsSpillsAndCutsMiddles(t *testing.T) {
	tb := Table{Headers: []string{"ID", "STATE", "USE", "AGE"}, CutMiddle: []int{0},
		Steps: []Step{{Col: 2, Drop: true}, {Col: 0, Min: 12}}}
	rows := [][]string{
		{"docker train-lr0.1-sjtw0h26dwr2", "RUNNING", "150% 1.00GiB", "1h00m"},
		{"▸ sweep-zz7ddclt  sweep of 2: 1 running, 1 queued", "RUNNING", "", "2m"},
	}
	tb.SetRowsSpill(rows, 0, func(r int) bool { return r == 1 })
	w := tb.Widths(56)
	if w[2] != Hidden || w[0] != 31 {
		t.Fatalf("widths = %v: USE should go first", w)
	}
	line := tb.Cells(rows[0], w)
	if !strings.HasPrefix(line, "docker train-lr0.1-sjtw0h26dwr2  RUNNING") || strings.Contains(line, "GiB") {
		t.Fatalf("line = %q: USE is left out", line)
	}
	w[0] = 24
	line = tb.Cells(rows[0], w)
	if !strings.HasPrefix(line, "docker train-lr0.1-…dwr2  RUNNING") {
		t.Fatalf("line = %q: the id keeps its start and its last cells, USE is left out", line)
	}
	spill := tb.Spill(rows[1], w, 56)
	if ansi.StringWidth(spill) > 56 || !strings.Contains(spill, "sweep of 2: 1 running, 1 queued") {
		t.Fatalf("spill = %q: the counts run over the next columns, whole", spill)
	}
	if got := CutMiddle("abcdefghij", 6); got != "abcd…j" || ansi.StringWidth(got) != 6 {
		t.Fatalf("CutMiddle = %q", got)
	}
}

// TestPagerWrap: with Wrap on, a long line goes on over the next rows indented under
// its text, broken at spaces only (a --flag stays whole), a word longer than a row cut
// hard; the position counts rows, and w's toggle keeps the top line in view.
func TestPagerWrap(t *testing.T) {
	var p Pager
	p.SetLines([]string{
		"args:",
		`  - "torchrun --rdzv_backend c10d --rdzv_endpoint localhost:0 --rdzv_id x"`,
		"  " + strings.Repeat("y", 50),
		"end",
	})
	p.Wrap = true
	got := p.View(30, 20)
	want := strings.Join([]string{
		"args:",
		`  - "torchrun`,
		"      --rdzv_backend c10d",
		"      --rdzv_endpoint",
		"      localhost:0 --rdzv_id x\"",
		"  yyyyyyyyyyyyyyyyyyyyyyyy",
		"    yyyyyyyyyyyyyyyyyyyyyyyyyy",
		"end",
	}, "\n")
	if got != want {
		t.Fatalf("wrapped:\n%s\nwant:\n%s", got, want)
	}
	if pos := p.Position(4); pos != "1-4/8" {
		t.Errorf("position %q, want 1-4/8 (rows, not lines)", pos)
	}
	p.Do(Bottom, 4)
	p.View(30, 4)
	p.SetWrap(false)
	// The bottom 4 rows began within the torchrun line: it is the top line unwrapped.
	if got := p.View(30, 2); !strings.HasPrefix(got, `  - "torchrun --`) {
		t.Errorf("after unwrapping the view starts at %q, want the line that was at the top", got)
	}
}

// TestWidthFastPaths: the fast paths of Width (ASCII, ASCII with CSI sequences) agree
// with ansi.StringWidth, and whatever they do not take goes to it.
func TestWidthFastPaths(t *testing.T) {
	for _, s := range []string{
		"", "plain ascii", "\x1b[1;38;5;203mred\x1b[0m and \x1b[4mmore\x1b[m", "\x1b[38:2::255:0:0mrgb\x1b[0m",
		"épée", "wide 字", "\x1b]8;;http://x\x07link\x1b]8;;\x07", "tab\there", "cut \x1b[", "\x1b[1", "emoji 👍🏽", "del\x7f",
		"Epoch 1:  36%|███▌      |  72/200", "▸ trainer/0 │ x", "cut…", "a · b", "▶\ufe0f", "█\u0301", "▸\u20dd",
	} {
		if got, want := Width(s), ansi.StringWidth(s); got != want {
			t.Errorf("Width(%q) = %d, ansi.StringWidth = %d", s, got, want)
		}
	}
}

// BenchmarkWidthStyled is Width of a styled log line beside ansi.StringWidth of it
// (what Width called for any line with an escape sequence).
func BenchmarkWidthStyled(b *testing.B) {
	s := "\x1b[38;5;110m[rank 3]\x1b[0m epoch 1 step 268 loss 2.0426 lr 2.2e-04 \x1b[2mthroughput 1234.5 samples/s\x1b[0m"
	b.Run("Width", func(b *testing.B) {
		for b.Loop() {
			_ = Width(s)
		}
	})
	b.Run("ansi.StringWidth", func(b *testing.B) {
		for b.Loop() {
			_ = ansi.StringWidth(s)
		}
	})
}

// TestTruncateIsAnsiTruncate: Truncate cuts as ansi.Truncate does, byte for byte, on
// random strings of what the fast path takes (ASCII, SGR, the wall's glyphs) and of
// what it leaves to ansi.Truncate (wide runes, marks, controls), at every width.
func TestTruncateIsAnsiTruncate(t *testing.T) {
	parts := []string{"a", "b", " ", "~", "\x1b[1;31m", "\x1b[0m", "\x1b[m", "\x1b[38:2::1:2:3m", "█", "▸", "│", "…", "·",
		"字", "é", "\u0301", "\ufe0f", "\t", "\x1b]8;;x\x07", "👍🏽", "\x1b["}
	rng := rand.New(rand.NewPCG(37, 1))
	for range 3000 {
		var b strings.Builder
		simpleOnly := rng.IntN(2) == 0
		for range rng.IntN(30) {
			k := rng.IntN(len(parts))
			if simpleOnly {
				k = rng.IntN(13)
			}
			b.WriteString(parts[k])
		}
		s := b.String()
		for w := 0; w <= 32; w++ {
			for _, tail := range []string{"…", "", "..."} {
				if got, want := Truncate(s, w, tail), ansi.Truncate(s, w, tail); got != want {
					t.Fatalf("Truncate(%q, %d, %q) = %q, ansi.Truncate = %q", s, w, tail, got, want)
				}
			}
		}
	}
}

// BenchmarkTruncateStyled is Truncate of a styled log line to a pane's width beside
// ansi.Truncate of it (what the wall's rows called).
func BenchmarkTruncateStyled(b *testing.B) {
	s := "\x1b[38;5;110m[rank 3]\x1b[0m epoch 1 step 268 loss 2.0426 lr 2.2e-04 \x1b[2mthroughput 1234.5 samples/s\x1b[0m"
	b.Run("Truncate", func(b *testing.B) {
		for b.Loop() {
			_ = Truncate(s, 47, "…")
		}
	})
	b.Run("ansi.Truncate", func(b *testing.B) {
		for b.Loop() {
			_ = ansi.Truncate(s, 47, "…")
		}
	})
}
