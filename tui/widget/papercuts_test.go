package widget

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/themes"
)

// TestInputCutsALongPathInTheMiddle: a save path wider than the prompt keeps its start
// and its file name, with an ellipsis between, instead of reading like a relative path
// cut from the left.
func TestInputCutsALongPathInTheMiddle(t *testing.T) {
	in := NewInput("save to: ")
	in.CutMiddle = true
	in.SetWidth(32)
	in.Focus()
	path := "/home/newcomer/projects/wick-experiments/logs/train-7xq2k9/trainer-0.log"
	in.SetValue(path)
	got := ansi.Strip(in.View(themes.Plain()))
	// 32 columns: a third of the 30 left by the ellipsis and the cursor for the start,
	// the rest for the end.
	want := "save to: /home/newc…7xq2k9/trainer-0.log "
	if got != want {
		t.Errorf("cut path:\n got %q\nwant %q", got, want)
	}
	if w := ansi.StringWidth(strings.TrimPrefix(got, "save to: ")); w != 32 {
		t.Errorf("the cut path takes %d columns, want 32", w)
	}
	short := NewInput("save to: ")
	short.CutMiddle = true
	short.SetWidth(32)
	short.Focus()
	short.SetValue("/tmp/a.log")
	if got := ansi.Strip(short.View(themes.Plain())); got != "save to: /tmp/a.log " {
		t.Errorf("a path that fits is shown whole: %q", got)
	}
}
