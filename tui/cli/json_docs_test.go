package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// jsonDoc is docs/json.md as the tests read it: every key name it mentions
// (backticked, or quoted in an object's braces), and the names of the keys of the
// status and replica tables (the first cell of their rows).
type jsonDoc struct {
	names  map[string]bool
	status []string // the keys of the Status and replica tables, by name
}

var (
	docToken  = regexp.MustCompile("`([^`]+)`")
	docQuoted = regexp.MustCompile(`"([a-z_][a-z0-9_]*(?:\.\*)?)"`)
)

func readJSONDoc(t *testing.T) jsonDoc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "json.md"))
	if err != nil {
		t.Fatal(err)
	}
	d := jsonDoc{names: map[string]bool{}}
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "## ") {
			section = line
		}
		for _, m := range docToken.FindAllStringSubmatch(line, -1) {
			for _, n := range keyNamesOf(m[1]) {
				d.names[n] = true
			}
		}
		for _, m := range docQuoted.FindAllStringSubmatch(line, -1) {
			d.names[m[1]] = true
		}
		if strings.HasPrefix(section, "## Status") && strings.HasPrefix(line, "| `") {
			cell := strings.SplitN(line, "|", 3)[1]
			for _, m := range docToken.FindAllStringSubmatch(cell, -1) {
				d.status = append(d.status, keyNamesOf(m[1])...)
			}
		}
	}
	return d
}

// keyNamesOf is the key names of a documented path: "roles[].replicas[].id" gives
// roles, replicas, id; "cfg.*" gives cfg.*.
func keyNamesOf(path string) []string {
	var out []string
	parts := strings.Split(path, ".")
	for i, p := range parts {
		p = strings.TrimSuffix(p, "[]")
		switch {
		case p == "*" && i > 0:
			out[len(out)-1] += ".*"
		case regexp.MustCompile(`^[a-z_][a-zA-Z0-9_]*$`).MatchString(p):
			out = append(out, p)
		default:
			return nil // not a key: a value, a command, a state
		}
	}
	return out
}

// leafName is the name of the last key of a key path: "roles[].replicas[].pid" is
// pid, "app.roles[].env.*" is env.*; the keys of a map of data ("values.v",
// "metrics.loss.best", a scheduler's name in runopts) are the map's.
func leafName(path string) string {
	parts := strings.Split(path, ".")
	last := strings.TrimSuffix(parts[len(parts)-1], "[]")
	if last == "*" && len(parts) > 1 {
		return strings.TrimSuffix(parts[len(parts)-2], "[]") + ".*"
	}
	return last
}

// dataMaps are the keys whose values are maps of data in outputs keyPaths does not
// fold (a sweep's values, a sweep's states by name, metrics by name, runopts by
// scheduler): their keys are data, not schema.
var dataMaps = map[string]bool{"values": true, "states": true, "metrics": true}

// TestJSONDocMatchesOutput checks docs/json.md against what the verbs print: every
// key of their --json outputs is documented, and every key the document names is seen
// in the output of a run that has it (a running app, a failed one, a sweep and its
// metrics, dry runs on each scheduler), except those only other schedulers or runs
// give, each named with why.
func TestJSONDocMatchesOutput(t *testing.T) {
	doc := readJSONDoc(t)
	h := newHarness(t)
	seen := map[string]bool{}
	take := func(what string, r result) {
		t.Helper()
		if r.stdout == "" {
			t.Fatalf("%s: no output (exit %d): %s", what, r.code, r.stderr)
		}
		paths, err := keyPaths(r.stdout)
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, r.stdout)
		}
		for _, p := range paths {
			// A map of data: the map's name stands for its keys.
			parts := strings.Split(p, ".")
			for i := range parts {
				if dataMaps[strings.TrimSuffix(parts[i], "[]")] && i+1 < len(parts) {
					p = strings.Join(parts[:i+1], ".") + ".*"
					if i+2 < len(parts) {
						// A key of what the map holds (metrics.loss.best): schema again.
						n := leafName(strings.Join(parts[i+2:], "."))
						seen[n] = true
						if !doc.names[n] {
							t.Errorf("%s prints %q (key %q), which docs/json.md does not document", what, strings.Join(parts, "."), n)
						}
					}
					break
				}
			}
			if what == "runopts" && !strings.Contains(p, ".") {
				continue // the scheduler's name: data
			}
			n := leafName(p)
			seen[n] = true
			if !doc.names[n] && !doc.names[n+".*"] && !doc.names[strings.TrimSuffix(n, ".*")] {
				t.Errorf("%s prints %q (key %q), which docs/json.md does not document", what, p, n)
			}
		}
	}

	failed := h.exec("run", "--json", "utils.sh", "sh", "-c", "echo boom >&2; exit 3")
	take("run --json of a failing app", failed)
	sleeper := strings.TrimSpace(h.exec("run", "--detach", "utils.sh", "sleep", "60").stdout)
	t.Cleanup(func() { h.exec("delete", "--force", sleeper) })
	h.waitState(sleeper, spec.Running)
	testkit.Wait(t, 20*time.Second, "the running app's usage", func() (bool, string) {
		r := h.exec("status", "--json", sleeper)
		return strings.Contains(r.stdout, `"usage"`), r.stdout
	})
	take("status of a running app", h.exec("status", "--json", sleeper))
	take("describe", h.exec("describe", "--json", sleeper))
	take("cancel", h.exec("cancel", "--json", sleeper))
	sw := h.exec("run", "--detach", "--json", "--sweep", "v=1,2", "utils.sh", "--", "sh", "-c", `echo "step 1 loss $1"`)
	take("run --sweep --detach", sw)
	take("list", h.exec("list", "--json"))
	take("sweep list", h.exec("sweep", "list", "--json"))
	take("dry run", h.exec("run", "--dryrun", "--json", "utils.echo"))
	var fst struct{ Handle string }
	if err := json.Unmarshal([]byte(failed.stdout), &fst); err != nil {
		t.Fatalf("run --json: %v\n%s", err, failed.stdout)
	}
	take("log", h.exec("log", "--json", fst.Handle))
	take("dry run on slurm", h.exec("run", "--dryrun", "--json", "-s", "slurm", "utils.echo"))
	take("dry run on local_docker", h.exec("run", "--dryrun", "--json", "-s", "local_docker", "utils.echo"))
	take("dry run with mounts and metadata", h.exec("run", "--dryrun", "--json", "dist.ddp", "-j", "1:2x1",
		"--metadata", "team=vision", "--mounts", "type=bind,src=/tmp,dst=/job,readonly", "--script", "train.py"))
	take("sweep dry run", h.exec("run", "--dryrun", "--json", "--sweep", "v=1,2", "utils.sh", "--", "sh", "-c", "true"))
	var swOut struct{ Sweep string }
	if err := json.Unmarshal([]byte(sw.stdout), &swOut); err != nil || swOut.Sweep == "" {
		t.Fatalf("run --sweep --detach --json: %v\n%s", err, sw.stdout)
	}
	testkit.Wait(t, time.Minute, "the sweep's metrics", func() (bool, string) {
		r := h.exec("metrics", "--json", "--sweep", swOut.Sweep)
		return strings.Count(r.stdout, `"best"`) == 2, r.stdout + r.stderr
	})
	take("metrics --sweep", h.exec("metrics", "--json", "--sweep", swOut.Sweep))
	var swApps []struct{ Handle string }
	if err := json.Unmarshal([]byte(h.exec("list", "--json", "--sweep", swOut.Sweep).stdout), &swApps); err != nil || len(swApps) == 0 {
		t.Fatalf("list --sweep --json: %v", err)
	}
	take("metrics", h.exec("metrics", "--json", swApps[0].Handle))
	take("runopts", h.exec("runopts", "--json"))
	take("builtins", h.exec("builtins", "--json"))
	take("version", h.exec("version", "--json"))
	take("an error", h.exec("status", "--json", "nosuchapp-x"))
	take("delete", h.exec("delete", "--json", fst.Handle))

	// Keys of the status tables no scenario here gives, and why.
	elsewhere := map[string]string{
		"warnings":     "Slurm's controller unreachable, last known states (TestSlurmControllerDown)",
		"foreign":      "local_docker apps of another WICK_HOME (list --all)",
		"hang":         "a running app without progress for its hang time (TestHangAlarm)",
		"container_id": "local_docker",
		"group_rank":   "a torchrun node (dist.ddp)",
		"attempts":     "a retried replica (max_retries)",
		"msg":          "a scheduler that says something of the state (Slurm's reason)",
	}
	for _, n := range doc.status {
		if seen[n] {
			continue
		}
		if _, ok := elsewhere[n]; ok {
			continue
		}
		t.Errorf("docs/json.md documents %q in the status, and no output here had it", n)
	}
	for n := range elsewhere {
		if !slices.Contains(doc.status, n) {
			t.Errorf("%q is listed as given elsewhere but is not in docs/json.md's status tables", n)
		}
	}

	// Every other key the document names is seen too, but the words in it that are
	// values (a scheduler's name, a state) and the keys only other runs give, each
	// with why.
	notKeys := map[string]bool{"inf": true, "wick": true, "localhost": true, "snake_case": true,
		"describe": true, "local_cwd": true, "local_dir": true, "local_docker": true, "slurm": true}
	others := map[string]string{
		"kind": "a hang alarm (status's hang)", "since": "a hang alarm", "after_s": "a hang alarm",
		"ranks": "a hang alarm", "others_step": "a hang alarm",
		"attempt":        "a retried replica (attempts[])",
		"required":       "a required run option (runopts of a scheduler that has one)",
		"node":           "wick log --rank of a node whose group rank is not known",
		"alarm":          "an app of a sweep that stands out (metrics --sweep)",
		"capabilities.*": "a role that asks for capabilities", "devices.*": "a role that asks for devices",
		"port_map.*": "a role that maps ports", "permissions": "a device mount",
		"build": "local_docker with a workspace", "context": "a workspace build", "dockerfile": "a workspace build",
		"base_image": "a workspace build", "tag": "a workspace build", "files": "a workspace build", "quiet": "a workspace build",
		"gpus": "local_docker on a machine with GPUs", "gpu_devices": "local_docker on a machine with GPUs",
		"devices": "local_docker with devices", "host": "a local_docker device", "container": "a local_docker device",
		"ports": "local_docker with ports", "container_port": "a local_docker port", "host_port": "a local_docker port",
		"privileged": "local_docker with privileged=True", "source": "a local_docker bind mount",
	}
	for n := range doc.names {
		if seen[n] || notKeys[n] || elsewhere[n] != "" || others[n] != "" || slices.Contains(doc.status, n) {
			continue
		}
		t.Errorf("docs/json.md documents %q, and no output here had it", n)
	}
	for n, why := range others {
		if !doc.names[n] {
			t.Errorf("%q (%s) is listed as given elsewhere but docs/json.md does not name it", n, why)
		}
	}
}
