package form_test

import (
	"testing"
	"time"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/viewtest"
	"github.com/wick-dev/wick/tui/form"
	"github.com/wick-dev/wick/tui/preview"
)

// TestGoldenSlurmForm: utils.echo's form with slurm chosen, in 100x30, over the
// builtin schedulers with no Slurm on the machine (a form needs none): each row as
// testdata/slurm_form.golden explains it from the code that draws it.
func TestGoldenSlurmForm(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	c, err := components.Find("utils.echo", components.FindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vc := viewtest.Context(t, 100, 30, time.Now(), form.Actions(), preview.Actions())
	r := runner.New(runner.Builtin(), sched.Config{Session: spec.DefaultSession, StateDir: t.TempDir(), WorkDir: t.TempDir()})
	t.Cleanup(func() { _ = r.Close() })
	vc.Backend = r
	vc.DefaultScheduler = "slurm"
	d := viewtest.New(t, vc, form.New(vc, c))
	viewtest.Golden(t, "testdata/slurm_form.golden", d.WaitFor("Run options · slurm", "account"))
}
