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
// key of their --json outputs is documented, and every key of the Status and replica
// tables is seen in the output of an app that has it (a running one, a failed one, an
// app of a sweep), except those only other schedulers or runs give, each named with
// why.
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
	take("runopts", h.exec("runopts", "--json"))
	take("builtins", h.exec("builtins", "--json"))
	take("version", h.exec("version", "--json"))
	take("an error", h.exec("status", "--json", "nosuchapp-x"))

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
}
