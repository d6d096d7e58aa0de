package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wick-dev/wick/tui/render"
)

// TestOldHomeIsTightened: a state directory an older wick left 0755 (others could read
// launch.json and the logs) is made 0700 by the first command that uses it.
func TestOldHomeIsTightened(t *testing.T) {
	h := newHarness(t)
	apps := filepath.Join(h.home, "local", "apps")
	if err := os.MkdirAll(apps, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{h.home, apps} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if r := h.run("list"); r.code != ExitOK {
		t.Fatalf("list: %d %s", r.code, r.stderr)
	}
	for _, d := range []string{h.home, filepath.Join(h.home, "local"), apps} {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %#o after first use, want 0700", d, st.Mode().Perm())
		}
	}
}

// TestDescribeMasksSecrets: describe printed secret env values in clear, in text and
// JSON, where --dryrun and the UI masked them.
func TestDescribeMasksSecrets(t *testing.T) {
	h := newHarness(t)
	r := h.run("run", "--detach", "utils.sh", "--env", "DB_PASSWORD=hunter2,MY_API_KEY=k3y,HF_PAT=p4t,PLAIN=visible", "true")
	if r.code != ExitOK {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	if r := h.run("log", "-f", handle); r.code != ExitOK { // until the app ends
		t.Fatalf("log -f: %d %s", r.code, r.stderr)
	}
	for _, args := range [][]string{{"describe", handle}, {"describe", "--json", handle}, {"run", "--dryrun", "utils.sh", "--env", "DB_PASSWORD=hunter2,MY_API_KEY=k3y,HF_PAT=p4t,PLAIN=visible", "true"}, {"run", "--dryrun", "--json", "utils.sh", "--env", "DB_PASSWORD=hunter2,MY_API_KEY=k3y,HF_PAT=p4t,PLAIN=visible", "true"}} {
		r := h.run(args...)
		if r.code != ExitOK {
			t.Fatalf("%v: %d %s", args, r.code, r.stderr)
		}
		for _, secret := range []string{"hunter2", "k3y", "p4t"} {
			if strings.Contains(r.stdout, secret) {
				t.Errorf("%v shows the secret %q", args, secret)
			}
		}
		if !strings.Contains(r.stdout, "visible") || !strings.Contains(r.stdout, render.Masked) {
			t.Errorf("%v: want PLAIN shown and secrets masked:\n%s", args, r.stdout)
		}
		r = h.run(append([]string{args[0], "--show-secrets"}, args[1:]...)...)
		if !strings.Contains(r.stdout, "hunter2") {
			t.Errorf("%v --show-secrets does not show the secret:\n%s", args, r.stdout)
		}
	}
}

// hostile is what a replica prints to take over the terminal of whoever reads its log:
// an OSC 52 clipboard write, a title change, report requests that inject input, the
// alternate screen, a screen clear; and red text, which stays.
const hostile = `\033]52;c;cHduZWQ=\a\033]0;pwned\a\033[6n\033[21t\033[?1049h\033[2Jsafe \033[31mred\033[0m\n`

// TestLogOnATerminalDropsEscapes: `wick log` on a terminal keeps colors and drops every
// other escape sequence; --raw and a pipe give the bytes as stored.
func TestLogOnATerminalDropsEscapes(t *testing.T) {
	h := newHarness(t)
	r := h.run("run", "--detach", "utils.sh", "--num_replicas", "2", "printf", hostile)
	if r.code != ExitOK {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	if r := h.run("log", "-f", handle); r.code != ExitOK { // -f: wait for the end
		t.Fatalf("log -f: %d %s", r.code, r.stderr)
	}
	evil := []string{"\x1b]52", "\x1b]0;", "\x1b[6n", "\x1b[21t", "\x1b[?1049h", "\x1b[2J", "\a"}
	for _, ident := range []string{handle, handle + "/sh/0"} { // merged and single-file paths
		out := h.runTTY("log", ident)
		if out.code != ExitOK {
			t.Fatalf("log: %d %s", out.code, out.stderr)
		}
		for _, e := range evil {
			if strings.Contains(out.stdout, e) {
				t.Errorf("log %s on a terminal passes %q: %q", ident, e, out.stdout)
			}
		}
		if !strings.Contains(out.stdout, "safe \x1b[31mred\x1b[0m") {
			t.Errorf("log %s on a terminal lost the colors: %q", ident, out.stdout)
		}
		for _, raw := range []result{h.runTTY("log", "--raw", ident), h.run("log", ident)} {
			if !strings.Contains(raw.stdout, "\x1b]52;c;cHduZWQ=\a") {
				t.Errorf("--raw or a pipe must give the stored bytes: %q", raw.stdout)
			}
		}
	}
}

// runTTY is run with stdout a terminal.
func (h *harness) runTTY(args ...string) result {
	h.t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, Env{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv: h.getenv, Self: h.self, WorkDir: h.work, StdoutTTY: true,
	})
	return result{code, out.String(), errb.String()}
}

// TestNamesAndHelpAreEscaped: names, labels and help text from state and component
// files reach the terminal with their control characters escaped.
func TestNamesAndHelpAreEscaped(t *testing.T) {
	h := newHarness(t)
	dir := filepath.Join(h.work, ".wick", "components")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	comp := `evil:
  summary: "sum \e]0;pwned\a mary"
  help: "help \e[2J text"
  params:
    - {name: msg, help: "msg \e]52;c;eA==\a help", default: hi}
  app:
    name: evil
    roles:
      - name: evil
        entrypoint: echo
        args: ["${{ msg }}"]
`
	if err := os.WriteFile(filepath.Join(dir, "evil.yaml"), []byte(comp), 0o644); err != nil {
		t.Fatal(err)
	}
	r := h.run("run", "--detach", "utils.echo")
	if r.code != ExitOK {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	if r := h.run("log", "-f", handle); r.code != ExitOK { // until the app ends
		t.Fatalf("log -f: %d %s", r.code, r.stderr)
	}
	id := handle[strings.LastIndexByte(handle, '/')+1:]
	stateFile := filepath.Join(h.home, "local", "apps", id, "state.json")
	data, err := os.ReadFile(stateFile)
	if err != nil {
		t.Fatal(err)
	}
	evil := strings.Replace(string(data), `"name": "echo"`, `"name": "echo\u001b]0;pwned\u0007\u001b[6n"`, 1)
	if evil == string(data) {
		t.Fatalf("no name in %s", data)
	}
	data = []byte(evil)
	if err := os.WriteFile(stateFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"list"}, {"status", handle}, {"describe", handle}, {"builtins"}, {"run", "evil", "--help"}, {"builtins", "--print", "evil"}} {
		r := h.runTTY(args...)
		if r.code != ExitOK {
			t.Fatalf("%v: %d %s", args, r.code, r.stderr)
		}
		plain := stripSGR(r.stdout)
		for _, c := range []string{"\x1b", "\a"} {
			if strings.Contains(plain, c) {
				t.Errorf("%v prints a raw %q: %q", args, c, r.stdout)
			}
		}
		if len(args) == 3 && args[1] == "--print" {
			continue // --print shows the file's own text, escapes written as in YAML
		}
		if !strings.Contains(plain, `\x1b`) {
			t.Errorf("%v: want the escape shown as \\x1b: %q", args, plain)
		}
	}
}

var sgrRe = regexp.MustCompile("\x1b\\[[0-9;]*m")

func stripSGR(s string) string { return sgrRe.ReplaceAllString(s, "") }

// TestAbsurdRunOptionsAreUsageErrors: nan, inf and 1e10 for stop_timeout are refused
// with one line, exit 2, and leave no app behind.
func TestAbsurdRunOptionsAreUsageErrors(t *testing.T) {
	h := newHarness(t)
	for _, v := range []string{"nan", "inf", "1e10"} {
		r := h.run("run", "-cfg", "stop_timeout="+v, "utils.echo")
		if r.code != ExitUsage {
			t.Errorf("stop_timeout=%s: exit %d, want 2; %s", v, r.code, r.stderr)
		}
		assertOneLineError(t, r.stderr, "stop_timeout")
	}
	if entries, _ := os.ReadDir(filepath.Join(h.home, "local", "apps")); len(entries) > 0 {
		t.Errorf("refused launches left %v", entries)
	}
	if r := h.run("list"); strings.Contains(r.stdout, "echo") {
		t.Errorf("list shows a refused launch:\n%s", r.stdout)
	}
}

// TestCorruptStateRow: list shows an app with garbage state as UNKNOWN (corrupt state:
// ...), and delete --force removes it.
func TestCorruptStateRow(t *testing.T) {
	h := newHarness(t)
	r := h.run("run", "utils.echo")
	if r.code != ExitOK {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(strings.Split(r.stdout, "\n")[0])
	id := handle[strings.LastIndexByte(handle, '/')+1:]
	if err := os.WriteFile(filepath.Join(h.home, "local", "apps", id, "state.json"), []byte("{trunc"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = h.run("list")
	if r.code != ExitOK || !strings.Contains(r.stdout, "UNKNOWN (corrupt state: state.json:") || !strings.Contains(r.stdout, handle) {
		t.Fatalf("list: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := h.run("delete", handle); r.code == ExitOK || !strings.Contains(r.stderr, "delete --force") {
		t.Errorf("delete without force: %d %s", r.code, r.stderr)
	}
	if r := h.run("delete", "--force", handle); r.code != ExitOK {
		t.Fatalf("delete --force: %d %s", r.code, r.stderr)
	}
	if r := h.run("list"); strings.Contains(r.stdout, handle) {
		t.Errorf("still listed:\n%s", r.stdout)
	}
}

// TestPapercuts: the small things seen while attacking wick.
func TestPapercuts(t *testing.T) {
	h := newHarness(t)
	if r := h.run("--version"); r.code != ExitOK || !strings.HasPrefix(r.stdout, "wick ") {
		t.Errorf("--version: %d %q %q", r.code, r.stdout, r.stderr)
	}
	// In --json mode an error is a JSON object on stdout as well.
	r := h.run("status", "--json", "local_cwd://wick/ghost-bcdfghjklmnp")
	var jerr struct {
		Error    string `json:"error"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &jerr); err != nil || !strings.Contains(jerr.Error, "no such app") || jerr.ExitCode != ExitUsage || r.code != ExitUsage {
		t.Errorf("status --json of no app: %d %q (%v)", r.code, r.stdout, err)
	}
	if r := h.run("ui"); r.code != ExitUsage || !strings.Contains(r.stderr, "wick ui needs a terminal") {
		t.Errorf("ui without a terminal: %d %q", r.code, r.stderr)
	}
	for _, env := range []string{"BAD KEY=1", "A=1,A=2", "=1"} {
		r := h.run("run", "--dryrun", "utils.sh", "--env", env, "true")
		if r.code != ExitUsage {
			t.Errorf("--env %q: exit %d, want 2; %s", env, r.code, r.stderr)
		}
		assertOneLineError(t, r.stderr, "")
	}

	r = h.run("run", "--detach", "utils.sh", "sleep", "60")
	if r.code != ExitOK {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	// A handle of another session names no app, even if the id exists.
	other := strings.Replace(handle, "://wick/", "://other/", 1)
	for _, verb := range []string{"status", "describe", "cancel", "delete", "log"} {
		r := h.run(verb, other)
		if r.code != ExitUsage || !strings.Contains(r.stderr, "no such app") {
			t.Errorf("%s %s: %d %q", verb, other, r.code, r.stderr)
		}
	}
	// The hint of a refused delete is given once.
	r = h.run("delete", handle)
	if r.code != ExitFailure || strings.Count(r.stderr, "cancel it first") != 1 {
		t.Errorf("delete of a running app: %d %q", r.code, r.stderr)
	}
	r = h.run("cancel", "--json", handle)
	var cancelled struct{ Handle, State string }
	if err := json.Unmarshal([]byte(r.stdout), &cancelled); err != nil || cancelled.Handle != handle || cancelled.State != "CANCELLED" {
		t.Errorf("cancel --json: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = h.run("delete", "--json", handle)
	var deleted struct {
		Handle  string
		Deleted bool
	}
	if err := json.Unmarshal([]byte(r.stdout), &deleted); err != nil || deleted.Handle != handle || !deleted.Deleted {
		t.Errorf("delete --json: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := h.run("delete", handle); r.code != ExitUsage || !strings.Contains(r.stderr, "no such app") {
		t.Errorf("second delete: %d %q", r.code, r.stderr)
	}
}
