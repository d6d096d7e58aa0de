package cli

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/tui/render"
)

// A progress-bar line that straddles copyRaw's read boundary keeps the prefix after
// each \r, as printing it line by line does.
func TestCopyRawCarriageReturnAcrossBlocks(t *testing.T) {
	// The \r are in the first read, the end of their line in the second.
	text := strings.Repeat("a", rawBlock-40) + "\rbar 50%\rbar 100%" + strings.Repeat("c", 100)
	input := "first\n" + text + "\nlast\n"
	var raw, lines bytes.Buffer
	w := bufio.NewWriter(&raw)
	p := &linePrinter{w: w, st: render.Plain{}, prefix: true, index: map[string]int{}}
	if err := p.copyRaw(strings.NewReader(input), replicaRef{"r", 0}); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	w = bufio.NewWriter(&lines)
	p = &linePrinter{w: w, st: render.Plain{}, prefix: true, index: map[string]int{}}
	for _, l := range strings.Split(strings.TrimSuffix(input, "\n"), "\n") {
		if err := p.print(sched.Line{Role: "r", Replica: 0, Text: l}); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	if raw.String() != lines.String() {
		t.Errorf("raw copy differs from the lines printed one by one: %d \\r-prefixes vs %d",
			strings.Count(raw.String(), "\rr/0 "), strings.Count(lines.String(), "\rr/0 "))
	}
}
