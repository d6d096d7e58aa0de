package tui_test

import (
	"testing"

	"github.com/wick-dev/wick/engine/runner"
)

// TestFormOffersSlurm: the slurm scheduler is one more registration, and the form
// offers it with its run options and previews its sbatch script, with no change to
// the UI and no Slurm on the machine (the preview is a dry run).
func TestFormOffersSlurm(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	e := newEnvWith(t, envConfig{reg: runner.Builtin()})
	d := newDriver(t, e.opts, 140, 40)
	openForm(d, "utils.echo")
	d.focus("scheduler", "tab")
	d.keys("right", "right", "right")
	d.contains("◂ slurm ▸", "Run options · slurm", "partition", "job_dir", "qos")
	d.focus("comment", "tab")
	d.typ("fromui")
	d.keys("enter")
	d.contains("=== SCHEDULER REQUEST (slurm) ===", "- --comment=fromui", "job_name:  wick:wick:echo:echo:0")
}
