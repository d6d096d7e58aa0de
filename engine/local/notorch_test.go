package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/spec"
)

// A python3 without torch first on PATH (here a virtualenv of the system's Python,
// which does not see its site-packages, as a pyenv shim's interpreter would not): a
// replica that imports torch fails, and the app's error names that python3 and says
// it has no torch, whether python3 ran the code or a script's #! line chose it.
func TestRootCauseOfAPython3WithoutTorch(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 on PATH")
	}
	venv := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.Command("python3", "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Skipf("python3 -m venv: %v\n%s", err, out)
	}
	py := filepath.Join(venv, "bin", "python3")
	script := filepath.Join(t.TempDir(), "train.py")
	if err := os.WriteFile(script, []byte("#!/usr/bin/env python3\nimport torch\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := testScheduler(t, false)
	for _, argv := range [][]string{{"python3", "-c", "import torch"}, {script}} {
		r := role("trainer", argv[0], argv[1:]...)
		r.Env = map[string]string{"PATH": filepath.Join(venv, "bin") + ":" + os.Getenv("PATH")}
		st := waitApp(t, s, start(t, s, appOf("notorch", r), nil))
		want := "trainer/0: ModuleNotFoundError: No module named 'torch': the python3 that ran (" + py + ") has no torch"
		if st.State != spec.Failed || !strings.HasPrefix(st.Msg, want) {
			t.Errorf("%v: app %s %q, want it to start with %q", argv, st.State, st.Msg, want)
		}
	}
	// A replica failing otherwise: its exit code, named after it.
	r := role("trainer", "sh", "-c", "echo 'some other error' >&2; exit 4")
	st := waitApp(t, s, start(t, s, appOf("other", r), nil))
	if st.Msg != "trainer/0: exit code 4" {
		t.Errorf("other failure: %q", st.Msg)
	}
}
