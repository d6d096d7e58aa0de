package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/spec"
)

// TestJSONSchema runs every verb that speaks JSON and compares the shape of what it
// prints (every key path: "roles[].replicas[].state") with testdata/json/*.keys,
// written by hand from docs/json.md. A renamed or missing key fails, and so does a new
// one that docs/json.md does not list yet. Free-form maps (env, cfg, run options,
// labels) are "KEY.*": their keys are data, not schema.
func TestJSONSchema(t *testing.T) {
	h := newHarness(t)
	attached := h.exec("run", "--json", "-s", "local_cwd", "utils.echo", "--msg", "hi")
	var st struct{ Handle string }
	if err := json.Unmarshal([]byte(attached.stdout), &st); err != nil || attached.code != 0 {
		t.Fatalf("run --json: exit %d, %v\n%s%s", attached.code, err, attached.stdout, attached.stderr)
	}
	// Lines a metrics reader takes as step 1's loss.
	metered := h.exec("run", "--detach", "-s", "local_cwd", "utils.sh", "--", "sh", "-c", "echo 'step 1 loss 0.5'")
	if metered.code != 0 {
		t.Fatalf("run --detach: exit %d\n%s", metered.code, metered.stderr)
	}
	mh := strings.TrimSpace(metered.stdout)
	h.waitState(mh, spec.Succeeded)
	sleeper := h.exec("run", "--detach", "-s", "local_cwd", "utils.sh", "sleep", "60")
	if sleeper.code != 0 {
		t.Fatalf("run --detach: exit %d\n%s", sleeper.code, sleeper.stderr)
	}
	sh := strings.TrimSpace(sleeper.stdout)

	check := func(golden string, r result) {
		t.Helper()
		if r.code != 0 {
			t.Errorf("%s: exit %d\n%s", golden, r.code, r.stderr)
			return
		}
		want := readKeys(t, filepath.Join("..", "..", "testdata", "json", golden+".keys"))
		got, err := keyPaths(r.stdout)
		if err != nil {
			t.Errorf("%s: %v\n%s", golden, err, r.stdout)
			return
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: keys\n%s\nwant (testdata/json/%s.keys)\n%s\noutput:\n%s", golden,
				strings.Join(got, "\n"), golden, strings.Join(want, "\n"), r.stdout)
		}
	}
	check("run-attached", attached)
	check("version", h.exec("version", "--json"))
	check("run-detach", h.exec("run", "--detach", "--json", "-s", "local_cwd", "utils.echo"))
	check("dryrun-local_cwd", h.exec("run", "--dryrun", "--json", "-s", "local_cwd", "utils.echo"))
	check("status", h.exec("status", "--json", st.Handle))
	check("describe", h.exec("describe", "--json", st.Handle))
	check("list", h.exec("list", "--json", "-s", "local_cwd", "--limit", "1", "--state", "SUCCEEDED"))
	check("log", h.exec("log", "--json", st.Handle))
	check("metrics", h.exec("metrics", "--json", mh))
	check("runopts", h.exec("runopts", "--json", "local_cwd"))
	check("builtins", h.exec("builtins", "--json"))
	check("cancel", h.exec("cancel", "--json", sh))
	check("delete", h.exec("delete", "--json", sh))
}

// readKeys reads a hand-written .keys file: one key path a line, # comments.
func readKeys(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			keys = append(keys, l)
		}
	}
	slices.Sort(keys)
	return keys
}

// freeForm are the keys whose values are maps of data (names the user or the
// scheduler chose), not schema.
var freeForm = map[string]bool{"env": true, "cfg": true, "run_options": true, "labels": true, "metadata": true, "options": true, "port_map": true}

// keyPaths is the sorted set of key paths of a JSON document, or of every document
// of a JSON-lines output.
func keyPaths(out string) ([]string, error) {
	set := map[string]bool{}
	var walk func(v any, p string)
	walk = func(v any, p string) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				q := k
				if p != "" {
					q = p + "." + k
				}
				set[q] = true
				if m, ok := x.(map[string]any); ok && freeForm[k] {
					if len(m) > 0 {
						set[q+".*"] = true
					}
					continue
				}
				walk(x, q)
			}
		case []any:
			for _, x := range v {
				walk(x, p+"[]")
			}
		}
	}
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		walk(v, "")
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, nil
}
