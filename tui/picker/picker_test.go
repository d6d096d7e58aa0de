package picker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/internal/viewtest"
	"github.com/wick-dev/wick/tui/picker"
)

// The picker alone (internal/viewtest): wick's builtins, filtered as the user types,
// and Enter opens the selected component's form.

func newPicker(t *testing.T, w, h int) *viewtest.Driver {
	ctx := viewtest.Context(t, w, h, time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC), picker.Actions())
	// The real Runner: the form the picker opens lists its schedulers.
	r := runner.New(runner.Builtin(), sched.Config{Session: "wick", StateDir: t.TempDir(), WorkDir: t.TempDir()})
	t.Cleanup(func() { _ = r.Close() })
	ctx.Backend = r
	return viewtest.New(t, ctx, picker.New(ctx))
}

// TestPickerListsBuiltinsAndFilters: every builtin is listed with its summary, the
// count says how many; typing narrows the list to fuzzy matches of the name, the best
// first and selected; a filter nothing matches says so.
func TestPickerListsBuiltinsAndFilters(t *testing.T) {
	d := newPicker(t, 120, 30)
	n := len(components.Builtins())
	if n < 9 {
		t.Fatalf("%d builtins: utils.echo, utils.sh, dist.ddp and the others are missing", n)
	}
	d.Contains("type to filter components", "utils.echo", "dist.ddp", "demo.train",
		"Distributed data parallel style")
	d.Type("utils.ec")
	// utils.echo is the one name with every letter of "utils.ec" in order, the first
	// ones together: it is first and selected.
	d.Contains("▸ utils.echo")
	d.Lacks("dist.ddp", "demo.train")
	d.Keys("ctrl+u")
	d.Type("zzzq")
	d.Contains("no component matches", "0/")
}

// TestPickerEnterOpensTheForm: Enter on the selected component pushes its argument
// form (titled with the component's name); up and down move the selection first.
func TestPickerEnterOpensTheForm(t *testing.T) {
	d := newPicker(t, 120, 30)
	d.Type("dist.")
	d.Contains("▸ dist.ddp")
	d.Keys("down")
	d.Contains("▸ dist.spmd")
	d.Keys("enter")
	pushed := d.Pushed()
	if len(pushed) != 1 || pushed[0].Title() != "dist.spmd" {
		var titles []string
		for _, v := range pushed {
			titles = append(titles, v.Title())
		}
		t.Fatalf("pushed %q, want the form of dist.spmd", titles)
	}
	if len(d.Unhandled) != 0 {
		t.Errorf("actions the picker did not handle: %v", d.Unhandled)
	}
}

// TestPickerNarrowShowsNoSidePane: below 90 columns the list takes the whole width.
func TestPickerNarrowShowsNoSidePane(t *testing.T) {
	d := newPicker(t, 60, 20)
	for i, l := range strings.Split(d.Screen(), "\n") {
		if w := len([]rune(l)); w > 60 {
			t.Fatalf("line %d is %d wide in a 60-column body:\n%s", i, w, d.Screen())
		}
	}
}
