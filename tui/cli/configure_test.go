package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigure: wick configure writes ./.torchxconfig as torchx configure does
// (torchx/runner/config.py dump: a section per scheduler, optional run options with -a
// at their defaults, None for none, bools as Python writes them), which wick run reads
// back; it does not overwrite a file that exists (torchx configure does).
func TestConfigure(t *testing.T) {
	h := newHarness(t)
	r := h.run("configure", "-s", "local_cwd", "-a")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	path := filepath.Join(h.work, ".torchxconfig")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[local_cwd]\n", "\nprepend_cwd = False\n", "\nstop_timeout = 10\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the file lacks %q:\n%s", want, b)
		}
	}
	if r := h.run("run", "--dryrun", "utils.echo"); r.code != 0 || r.stderr != "" {
		t.Errorf("wick run with the written file: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := h.run("configure", "-s", "local_cwd"); r.code != 2 || !strings.Contains(r.stderr, "exists: wick configure does not overwrite it") {
		t.Errorf("over an existing file: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := h.run("configure", "-s", "slurm", "--print"); r.code != 0 || r.stdout != "[slurm]\n\n" {
		t.Errorf("--print of slurm's required options (none): exit %d, %q", r.code, r.stdout)
	}
	if r := h.run("configure", "-s", "slrum", "--print"); r.code != 2 || !strings.Contains(r.stderr, `unknown scheduler "slrum" (did you mean "slurm"?)`) {
		t.Errorf("-s slrum: exit %d, %q", r.code, r.stderr)
	}
}

// TestRunTorchXFlags: TorchX's run flags are taken (--wait, --log, --tee_logs are what
// wick run does anyway; --parent_run_id sets TORCHX_PARENT_RUN_ID in every role, as
// TorchX's runner does) or refused with what to do instead (--stdin).
func TestRunTorchXFlags(t *testing.T) {
	h := newHarness(t)
	r := h.run("run", "--dryrun", "--json", "--wait", "--log", "--tee_logs", "--parent_run_id", "exp-7", "utils.echo")
	if r.code != 0 || !strings.Contains(r.stdout, `"TORCHX_PARENT_RUN_ID": "exp-7"`) {
		t.Errorf("exit %d, stderr %q; stdout:\n%s", r.code, r.stderr, r.stdout)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--stdin", "utils.echo"}, "--stdin (TorchX's JSON arguments on stdin) is not supported"},
		{[]string{"run", "--detach", "--wait", "utils.echo"}, "--detach returns at once"},
	} {
		if r := h.run(c.args...); r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q, want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
}
