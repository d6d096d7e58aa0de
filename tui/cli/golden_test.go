package cli

import (
	"encoding/json"
	"regexp"
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
			out := h.normalize(r.stdout)
			if strings.HasPrefix(c.file, "dryrun_ddp") {
				out = rendezvousPort(t, out)
			}
			golden(t, c.file, out)
		})
	}
}

// requestPort is the rendezvous endpoint of a local replica's command line, and the
// port the request reserves for its role (rdzv_port).
var requestPort = regexp.MustCompile(`(TORCHX_RANK0_HOST:=localhost\}:|rdzv_port"?:\s+)(\d+)`)

// rendezvousPort checks that the local scheduler gave the replicas of a dist.ddp app one
// rendezvous port of their own instead of TorchX's default 29500 (the AppDef keeps
// 29500), the port its request reserves, and writes it RDZV_PORT: it is chosen when
// the app is planned.
func rendezvousPort(t *testing.T, out string) string {
	t.Helper()
	ports := map[string]bool{}
	for _, m := range requestPort.FindAllStringSubmatch(out, -1) {
		ports[m[2]] = true
	}
	if len(ports) != 1 || ports["29500"] {
		t.Errorf("the replicas' rendezvous ports are %v, want one port that is not 29500", ports)
	}
	return requestPort.ReplaceAllString(out, "${1}RDZV_PORT")
}
