package cli

import (
	"strings"
	"testing"
)

// raisePy is a plain training script (no torchrun) that raises at step 3 in
// train_step, line 5.
const raisePy = `def train_step(step):
    loss = 1.0 / (step + 1)
    print(f"step {step} loss {loss:.4f}", flush=True)
    if step == 3:
        raise ValueError(f"boom at step {step}")


for step in range(10):
    train_step(step)
`

// TestDockerPlainRootCause: on local_docker, a plain replica's traceback is the app's
// error ("sh/0: ValueError: boom at step 3", at its innermost frame), and a plain
// replica's exit without one is "sh/0: exit code 3", as on local.
func TestDockerPlainRootCause(t *testing.T) {
	helper := dockerImage(t)
	img := pythonImage(t, map[string]string{"raise.py": raisePy})
	h := newHarness(t)
	r := h.exec("run", "-s", "local_docker", "utils.sh", "--image", img, "--entrypoint", "/usr/bin/python3.11", "--", "-S", "/raise.py")
	handle := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { h.exec("delete", "--force", handle) })
	if r.code != ExitFailure || lastLine(r.stderr) != "wick: sh/0: ValueError: boom at step 3" {
		t.Errorf("attached run: exit %d, last line %q\n%s", r.code, lastLine(r.stderr), r.stderr)
	}
	if out := h.exec("status", handle).stdout; !strings.Contains(out, "error:    sh/0: ValueError: boom at step 3\n") || !strings.Contains(out, "at:       /raise.py:5 in train_step\n") {
		t.Errorf("wick status:\n%s", out)
	}

	r = h.exec("run", "-s", "local_docker", "utils.sh", "--image", helper, "--entrypoint", "/helper", "--", "exit", "3")
	t.Cleanup(func() { h.exec("delete", "--force", strings.TrimSpace(r.stdout)) })
	if r.code != ExitFailure || lastLine(r.stderr) != "wick: sh/0: exit code 3" {
		t.Errorf("exit 3: exit %d, last line %q\n%s", r.code, lastLine(r.stderr), r.stderr)
	}
}

// TestSlurmPlainRootCause: on Slurm, a plain python replica's traceback is the app's
// error (examples/failures/raise_plain.py, torch imported for real), and a plain
// replica's exit without one is "sh/0: exit code 3", as on local.
func TestSlurmPlainRootCause(t *testing.T) {
	t.Parallel()
	needSlurm(t)
	h := failuresHarness(t)
	r := execLong(h, "run", "-s", "slurm", "utils.python", "--script", "raise_plain.py")
	if r.code != ExitFailure || lastLine(r.stderr) != "wick: python/0: ValueError: boom at step 3" {
		t.Errorf("attached run: exit %d, last line %q\n%s", r.code, lastLine(r.stderr), r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	if out := h.exec("status", handle).stdout; !strings.Contains(out, "raise_plain.py:20 in train_step\n") {
		t.Errorf("wick status:\n%s", out)
	}
	r = h.exec("run", "-s", "slurm", "utils.sh", "--", "sh", "-c", "echo bad >&2; exit 3")
	if r.code != ExitFailure || lastLine(r.stderr) != "wick: sh/0: exit code 3" {
		t.Errorf("exit 3: exit %d, last line %q\n%s", r.code, lastLine(r.stderr), r.stderr)
	}
}
