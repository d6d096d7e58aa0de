package cli

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// result is what a user sees of one command.
type result struct {
	code           int
	stdout, stderr string
}

// harness runs wick verbs in-process with a private WICK_HOME, HOME and working dir.
type harness struct {
	t    *testing.T
	home string // WICK_HOME
	user string // HOME
	work string // working directory
	self string // the wick binary, for supervisors
	env  map[string]string
	// cmdEnv is added to the environment of the wick processes the harness starts
	// (its last word wins), for tests that must run beside others.
	cmdEnv []string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	root := t.TempDir()
	h := &harness{
		t:    t,
		home: filepath.Join(root, "state"),
		user: filepath.Join(root, "home"),
		work: filepath.Join(root, "work"),
		self: wickBinary(t),
		env:  map[string]string{},
	}
	for _, d := range []string{h.home, h.user, h.work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func (h *harness) getenv(k string) string {
	switch k {
	case "WICK_HOME":
		return h.home
	case "HOME":
		return h.user
	}
	if v, ok := h.env[k]; ok {
		return v
	}
	if k == "PATH" {
		return os.Getenv("PATH")
	}
	return ""
}

func (h *harness) run(args ...string) result {
	h.t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, Env{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv: h.getenv, Self: h.self, WorkDir: h.work,
	})
	return result{code, out.String(), errb.String()}
}

// normalize replaces what changes from run to run (app ids, temp paths) with fixed
// placeholders.
func (h *harness) normalize(s string) string {
	s = strings.ReplaceAll(s, h.home, "$WICK_HOME")
	s = strings.ReplaceAll(s, h.work, "$WORK")
	s = strings.ReplaceAll(s, h.user, "$HOME")
	s = strings.ReplaceAll(s, h.self, "$WICK")
	if p := os.Getenv("PATH"); p != "" {
		s = strings.ReplaceAll(s, p, "$PATH")
	}
	s = appIDRe.ReplaceAllString(s, "${1}-APPID")
	return s
}

var appIDRe = regexp.MustCompile(`\b([a-z0-9_.]+)-[bcdfghjklmnpqrstvwxz][bcdfghjklmnpqrstvwxz0-79]{11}\b`)

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("..", "..", "testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tui/cli -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (go test ./tui/cli -update rewrites it)\n--- want\n%s\n--- got\n%s", name, want, got)
	}
}

// TestRunShowsComponentWarnings: a component's warnings go to stderr, as the UI shows
// them in its status line (both come from Runner.DryRunComponent).
func TestRunShowsComponentWarnings(t *testing.T) {
	h := newHarness(t)
	r := h.run("run", "--dryrun", "dist.spmd", "-j", "1x2", "--script", "train.py")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if want := "wick: warning: -j 1x2 sets nproc_per_node=2, but a gpu.small host has 1 GPUs"; !strings.Contains(r.stderr, want) {
		t.Fatalf("stderr %q lacks %q", r.stderr, want)
	}
	if strings.Contains(r.stdout, "sets nproc_per_node") {
		t.Fatalf("the component's warning went to stdout:\n%s", r.stdout)
	}
}
