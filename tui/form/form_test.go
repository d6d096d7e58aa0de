package form_test

import (
	"testing"
	"time"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/internal/viewtest"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/form"
	"github.com/wick-dev/wick/tui/preview"
)

// The argument form alone (internal/viewtest) over a real Runner: the component's
// parameters and the scheduler's run options, checked, and Enter previews the dry run.

func newForm(t *testing.T, name string) (*viewtest.Driver, *common.Context) {
	t.Helper()
	c, err := components.Find(name, components.FindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vc := viewtest.Context(t, 120, 40, time.Now(), form.Actions(), preview.Actions())
	vc.Backend = viewtest.Runner(t)
	vc.DefaultScheduler = "local_cwd"
	return viewtest.New(t, vc, form.New(vc, c)), vc
}

// TestFormPreviewsWhatWasTyped: utils.echo's form shows its one argument with its
// default and local_cwd's run options; what the user types into msg is what the
// preview's dry run echoes.
func TestFormPreviewsWhatWasTyped(t *testing.T) {
	d, vc := newForm(t, "utils.echo")
	d.WaitFor("Arguments", "msg", "Run options · local_cwd", "log_dir", "prepend_cwd")
	d.Keys("ctrl+u")
	d.Type("hello from the form")
	d.Contains("hello from the form")
	d.Keys("enter")
	pushed := d.Pushed()
	if len(pushed) != 1 {
		t.Fatalf("Enter pushed %d views, want the preview:\n%s", len(pushed), d.Screen())
	}
	p := viewtest.New(t, vc, pushed[0])
	p.WaitFor("=== SCHEDULER REQUEST (local_cwd) ===", "hello from the form")
}

// TestFormRefusesABadNumber: an int parameter given "two" is refused at Enter with the
// parameter named, and nothing is previewed.
func TestFormRefusesABadNumber(t *testing.T) {
	d, _ := newForm(t, "demo.train")
	d.WaitFor("Arguments", "replicas")
	d.Keys("ctrl+u")
	d.Type("two")
	d.Keys("enter")
	// Beside the field and in the form's message line, as the user sees it.
	d.Contains("✗ want an int", "replicas: want an int")
	if n := len(d.Pushed()); n != 0 {
		t.Fatalf("a bad number pushed %d views:\n%s", n, d.Screen())
	}
}
