package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestGolden compares what users read with the files in testdata/golden: the component
// list, a component printed as YAML, and dry runs on every scheduler, in text and JSON.
func TestGolden(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		file string
		args []string
	}{
		{"builtins.txt", []string{"builtins"}},
		{"builtins_print_dist.ddp.txt", []string{"builtins", "--print", "dist.ddp"}},
		{"dryrun_echo_local_cwd.txt", []string{"run", "-s", "local_cwd", "--dryrun", "utils.echo", "--msg", "hi"}},
		{"dryrun_echo_local_dir.txt", []string{"run", "-s", "local_dir", "--dryrun", "utils.echo", "--msg", "hi", "--image", "/"}},
		{"dryrun_echo_local_docker.txt", []string{"run", "-s", "local_docker", "--dryrun", "utils.echo", "--msg", "hi"}},
		{"dryrun_ddp_2x4.txt", []string{"run", "-s", "local_cwd", "--dryrun", "dist.ddp", "-j", "2x4", "--script", "train.py"}},
		{"dryrun_echo_local_cwd.json", []string{"run", "-s", "local_cwd", "--dryrun", "--json", "utils.echo", "--msg", "hi"}},
		{"dryrun_echo_local_dir.json", []string{"run", "-s", "local_dir", "--dryrun", "--json", "utils.echo", "--msg", "hi", "--image", "/"}},
		{"dryrun_echo_local_docker.json", []string{"run", "-s", "local_docker", "--dryrun", "--json", "utils.echo", "--msg", "hi"}},
		{"dryrun_ddp_2x4.json", []string{"run", "-s", "local_cwd", "--dryrun", "--json", "dist.ddp", "-j", "2x4", "--script", "train.py"}},
		{"runopts.txt", []string{"runopts"}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			r := h.run(c.args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if strings.HasSuffix(c.file, ".json") && !json.Valid([]byte(r.stdout)) {
				t.Fatalf("not JSON:\n%s", r.stdout)
			}
			golden(t, c.file, h.normalize(r.stdout))
		})
	}
}
