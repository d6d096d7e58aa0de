package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunTakesCLIRunDefaults: [cli:run] of .torchxconfig gives wick run the scheduler
// and the component the command line leaves out (arguments after `--` included), and
// what the command line says wins.
func TestRunTakesCLIRunDefaults(t *testing.T) {
	h := newHarness(t)
	conf := "[cli:run]\nscheduler = local_docker\ncomponent = utils.echo\n"
	if err := os.WriteFile(filepath.Join(h.work, ".torchxconfig"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want []string // pieces of the dry run
	}{
		{[]string{"run", "--dryrun"}, []string{"local_docker", "echo", "hello world"}},
		{[]string{"run", "--dryrun", "--", "--msg", "from the config's component"}, []string{"local_docker", "from the config's component"}},
		{[]string{"run", "--dryrun", "-s", "local_cwd", "utils.sh", "echo", "given"}, []string{"local_cwd", "given"}},
	} {
		got := h.run(c.args...)
		if got.code != 0 {
			t.Errorf("%v: exit %d, stderr %q", c.args, got.code, got.stderr)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(got.stdout, w) {
				t.Errorf("%v: the dry run lacks %q:\n%s", c.args, w, got.stdout)
			}
		}
		if strings.Contains(c.args[len(c.args)-1], "given") && strings.Contains(got.stdout, "local_docker") {
			t.Errorf("%v: -s local_cwd did not win over the config:\n%s", c.args, got.stdout)
		}
	}
}
