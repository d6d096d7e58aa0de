package tui_test

import (
	"strings"
	"testing"
)

// TestPreviewWrapsTheCommand: the dry-run preview cut the torchrun command, the line a
// user checks before launching, with "…" at the view's width, and nothing showed the
// rest. The preview now folds long lines under their start; w cuts them again.
func TestPreviewWrapsTheCommand(t *testing.T) {
	e := newEnv(t)
	d := newDriver(t, e.opts, 80, 24)
	openForm(d, "dist.ddp")
	d.typ("examples/ddp/train.py")
	d.keys("enter")
	d.contains("=== APPLICATION ===")
	screen := plain(d.screen())
	for _, want := range []string{"--nproc_per_node 2", "examples/ddp/train.py\""} {
		if !strings.Contains(screen, want) {
			t.Errorf("the preview at 80 columns does not show %q of the command:\n%s", want, screen)
		}
	}
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, "torchrun") && strings.HasSuffix(l, "…") {
			t.Errorf("the command is still cut: %q", l)
		}
	}
	d.keys("w")
	screen = plain(d.screen())
	if strings.Contains(screen, "--nproc_per_node 2") {
		t.Errorf("w did not cut the long lines again:\n%s", screen)
	}
	d.contains("torchrun --rdzv_backend c10d")
}
