package tui_test

import (
	"os"
	"path/filepath"
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

// TestPickerOpensATypedComponentFile: a TorchX project's ./component.py:trainer, what
// `wick run` takes, filtered the picker to nothing. Typed, it is the first row; enter
// reads it through the user's TorchX and opens its form, and its preview plans it.
func TestPickerOpensATypedComponentFile(t *testing.T) {
	e := newEnv(t)
	find := withTorchX(t, e)
	src := "import torchx.specs as specs\n\n\ndef trainer(script: str = \"train.py\", nproc: int = 2) -> specs.AppDef:\n    \"\"\"Trains the model.\n\n    Args:\n        script: the training script\n        nproc: processes per node\n    \"\"\"\n    return specs.AppDef(name=\"trainer\", roles=[specs.Role(name=\"trainer\", image=\"/tmp\", entrypoint=\"python3\", args=[script])])\n"
	if err := os.WriteFile(filepath.Join(find.WorkDir, "component.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	d := newDriver(t, e.opts, 120, 30)
	d.keys("n")
	d.typ("./component.py:trainer")
	d.contains("▸ ./component.py:trainer", "a component file: enter reads it")
	d.lacks("no component matches")
	d.keys("enter")
	d.contains("trainer  Trains the model.", "▸  script", "train.py", "nproc")
	d.keys("enter")
	d.contains("=== APPLICATION ===", "entrypoint:   python3", "args:         [train.py]")

	// A typo is one line in the status bar, and the picker stays.
	d.keys("esc", "esc")
	d.keys("ctrl+u")
	d.typ("./component.py:trainr")
	d.keys("enter")
	d.contains("✗ ./component.py:trainr is not a TorchX component", "› ./component.py:trainr")
}
