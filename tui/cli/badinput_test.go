package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadInput checks that every kind of bad input gets one clear line on stderr and
// exit code 2, never a panic.
func TestBadInput(t *testing.T) {
	h := newHarness(t)
	badYAML := filepath.Join(h.work, "bad.yaml")
	if err := os.WriteFile(badYAML, []byte("hello:\n  params:\n    - name: x\n   bad indent: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unknownParam := filepath.Join(h.work, "unknown.yaml")
	if err := os.WriteFile(unknownParam, []byte(`greet:
  params:
    - name: msg
      default: hi
  app:
    name: greet
    roles:
      - name: greet
        entrypoint: echo
        args: ["${{ nope }}"]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string // a piece of the error line
	}{
		{"unknown component", []string{"run", "utils.ecoh"}, `did you mean "utils.echo"`},
		{"unknown scheduler", []string{"run", "-s", "local_cdw", "utils.echo"}, `did you mean "local_cwd"`},
		{"missing required parameter", []string{"run", "--dryrun", "utils.touch"}, "file"},
		{"wrong type", []string{"run", "--dryrun", "utils.echo", "--num_replicas", "abc"}, "num_replicas"},
		{"malformed -j", []string{"run", "--dryrun", "dist.ddp", "-j", "2y4", "--script", "train.py"}, "-j"},
		{"malformed -cfg value", []string{"run", "--dryrun", "-cfg", "prepend_cwd=maybe", "utils.echo"}, "prepend_cwd"},
		{"malformed -cfg string", []string{"run", "--dryrun", "-cfg", "novalue", "utils.echo"}, "KEY=VALUE"},
		{"malformed mount", []string{"run", "--dryrun", "-s", "local_docker", "utils.sh", "--mounts", "type=bind,src=/a", "--", "echo"}, "mount"},
		{"malformed handle", []string{"status", "local_cwd://only-a-session"}, "malformed app handle"},
		{"neither handle nor app id", []string{"status", "not a handle"}, "neither a handle"},
		{"handle escaping the state dir", []string{"status", "local_cwd://wick/.."}, "malformed app handle"},
		{"malformed log identifier", []string{"log", "local_cwd://wick/app/role/x"}, "malformed app handle"},
		{"yaml syntax error", []string{"run", "--dryrun", badYAML + ":hello"}, "bad.yaml:"},
		{"template names unknown parameter", []string{"run", "--dryrun", unknownParam + ":greet"}, "nope"},
		{"num_replicas < 1", []string{"run", "--dryrun", "utils.echo", "--num_replicas", "0"}, "num_replicas"},
		{"empty entrypoint", []string{"run", "--dryrun", "utils.binary", "--entrypoint", ""}, "entrypoint"},
		{"unknown verb", []string{"rnu"}, `unknown command "rnu" for "wick" (did you mean "run"?)`},
		{"unknown shell", []string{"completion", "tcsh"}, `unknown command "tcsh" for "wick completion"`},
		// The verb and its usage line, where cobra said "unknown command" of an argument
		// and "accepts 1 arg(s), received 0" without naming the verb.
		{"extra argument", []string{"list", "extra"}, `list takes no argument, got "extra" (usage: wick list [flags])`},
		{"two handles", []string{"status", "local_cwd://wick/a", "local_cwd://wick/b"}, "status: accepts 1 arg(s), received 2 (usage: wick status HANDLE [flags])"},
		{"no identifier", []string{"log"}, "log needs IDENTIFIER (usage: wick log IDENTIFIER [flags])"},
		{"no handle", []string{"cancel"}, "cancel needs HANDLE... (usage: wick cancel HANDLE... [flags])"},
		{"no sweep id", []string{"sweep", "resume"}, "sweep resume needs SWEEP_ID (usage: wick sweep resume SWEEP_ID [flags])"},
		{"unknown flag", []string{"list", "--bogus"}, "unknown flag"},
		{"missing component", []string{"run"}, "missing component"},
		// The flag and what it takes, not strconv's "parsing ...: invalid syntax"; the
		// value escaped.
		{"bad --rank", []string{"log", "--rank", "\xff", "local_cwd://wick/echo-bcdfghjklmnp"}, `--rank takes whole numbers, comma-separated (e.g. 3 or 0,2), not "\xff"`},
		{"bad -n", []string{"log", "-n", "ten", "local_cwd://wick/echo-bcdfghjklmnp"}, `-n/--lines takes a whole number, not "ten"`},
		{"bad --timeout", []string{"cancel", "--timeout", "soon", "local_cwd://wick/echo-bcdfghjklmnp"}, `--timeout takes a duration (e.g. 90s, 5m, 1h30m), not "soon"`},
		{"bad --state", []string{"list", "--state", "\xff\x1b[2J"}, `--state "\xff\x1b[2J": not a state`},
		{"bad --since", []string{"log", "--since", "yesterday-ish", "local_cwd://wick/echo-bcdfghjklmnp"}, "--since"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.run(c.args...)
			if r.code != ExitUsage {
				t.Errorf("exit code %d, want %d; stderr: %s", r.code, ExitUsage, r.stderr)
			}
			assertOneLineError(t, r.stderr, c.want)
		})
	}
}

func assertOneLineError(t *testing.T, stderr, want string) {
	t.Helper()
	if strings.Count(strings.TrimRight(stderr, "\n"), "\n") != 0 {
		t.Errorf("want one line on stderr, got:\n%s", stderr)
	}
	if !strings.HasPrefix(stderr, "wick: ") {
		t.Errorf("stderr %q does not start with %q", stderr, "wick: ")
	}
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr %q does not mention %q", stderr, want)
	}
	for _, bad := range []string{"panic", "goroutine ", ".go:"} {
		if strings.Contains(stderr, bad) {
			t.Errorf("stderr shows internals (%q): %s", bad, stderr)
		}
	}
}

// TestNoSuchApp checks that a well-formed handle naming no app says so, exit 1, in
// every verb that takes one.
func TestNoSuchApp(t *testing.T) {
	h := newHarness(t)
	handle := "local_cwd://wick/ghost-bcdfghjklmnp"
	for _, verb := range [][]string{
		{"status", handle}, {"describe", handle}, {"log", handle}, {"cancel", handle}, {"delete", handle},
	} {
		t.Run(verb[0], func(t *testing.T) {
			r := h.run(verb...)
			if r.code != ExitUsage {
				t.Errorf("exit code %d, want 2; stderr: %s", r.code, r.stderr)
			}
			assertOneLineError(t, r.stderr, "no such app")
		})
	}
}
