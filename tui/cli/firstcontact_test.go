package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestSweepIDWhereOneAppIsTaken: a sweep id, which cancel, delete and list --sweep
// take, was "no such app" to status, log and ui --logs. status shows its apps as list
// --sweep does; log prints each app's lines under its handle (-f and --json, which
// cannot tell apps apart, name the apps to pick from); ui --logs opens the app list
// with the sweep unfolded and selected.
func TestSweepIDWhereOneAppIsTaken(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "--detach", "--sweep", "msg=first,second", "utils.echo")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	cancelAtEnd(t, h, id)
	var apps []spec.AppStatus
	testkit.Wait(t, 30*time.Second, "both apps succeeded", func() (bool, string) {
		apps = sweepRows(t, h, id)
		return states(apps) == "SUCCEEDED SUCCEEDED", states(apps)
	})

	r = h.exec("status", id)
	if r.code != 0 || !strings.Contains(r.stdout, "sweep "+id) || !strings.Contains(r.stdout, "MSG") ||
		!strings.Contains(r.stdout, apps[0].Handle) || !strings.Contains(r.stdout, apps[1].Handle) {
		t.Errorf("status %s: exit %d\n%s%s", id, r.code, r.stdout, r.stderr)
	}
	r = h.exec("status", "--json", id)
	var got []spec.AppStatus
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != 2 {
		t.Errorf("status --json %s: %v %q", id, err, r.stdout)
	}

	r = h.exec("log", id)
	want := "==> " + apps[0].Handle + " <==\necho/0 first\n\n==> " + apps[1].Handle + " <==\necho/0 second\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("log %s: exit %d\n%q\nwant\n%q\n%s", id, r.code, r.stdout, want, r.stderr)
	}
	for _, flag := range []string{"-f", "--json"} {
		r = h.exec("log", flag, id)
		if r.code != ExitUsage || !strings.Contains(r.stderr, id+" is a sweep") {
			t.Errorf("log %s %s: exit %d %s", flag, id, r.code, r.stderr)
		}
	}
	if r := h.exec("log", "-f", id); !strings.Contains(r.stderr, appID(apps[1].Handle)) {
		t.Errorf("log -f of a sweep does not name its apps: %s", r.stderr)
	}

	testkit.NeedTmux(t)
	term := startLiveTerm(t, h, "ui --logs "+id)
	term.WaitFor(20*time.Second, "▸ - "+id, "  "+appID(apps[0].Handle)[:9], apps[1].Handle)
	term.Keys("q")
	term.WaitExit(10 * time.Second)

	// delete --all-finished deleted the apps and left the sweep, "2 apps" of none, in
	// wick sweep list. It goes with its last app.
	r = h.exec("delete", "--all-finished")
	if r.code != 0 || !strings.Contains(r.stderr, "forgot sweep "+id+": no app left") {
		t.Errorf("delete --all-finished: exit %d %s", r.code, r.stderr)
	}
	if r := h.exec("sweep", "list"); strings.Contains(r.stdout, id) {
		t.Errorf("the emptied sweep is still listed:\n%s", r.stdout)
	}
}

// TestUserCommandFromTheUI: a command of config.toml's [commands], bound by [keys],
// runs from the app list in the terminal with the selected app in WICK_* variables,
// says how it ended and waits for enter, then the UI comes back; the palette (and ?)
// lists it.
func TestUserCommandFromTheUI(t *testing.T) {
	testkit.NeedTmux(t)
	h := newHarness(t)
	out := filepath.Join(h.work, "env.txt")
	conf := filepath.Join(h.user, ".config", "wick", "config.toml")
	if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte("[commands]\nenvdump = \"env | grep ^WICK_ | sort > "+out+"; echo dumped\"\n[keys]\nenvdump = \"U\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := h.exec("run", "--detach", "utils.sh", "sleep", "60")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { h.exec("cancel", "--now", handle) })
	id := appID(handle)
	term := startLiveTerm(t, h, "")
	term.WaitFor(20*time.Second, id, "RUNNING")
	term.Keys(":")
	term.Text("envd")
	term.WaitFor(10*time.Second, "run: env | grep ^WICK_")
	term.Keys("Escape")
	// The palette closed before U: an ESC and a U in one read are alt+u.
	term.WaitScreen(10*time.Second, "the palette closed", func(s string) bool { return !strings.Contains(s, "run: env") })
	term.Keys("U")
	term.WaitFor(20*time.Second, "dumped", "[envdump exited 0: enter goes back to wick]")
	term.Keys("Enter")
	term.WaitFor(10*time.Second, id, "envdump ran on "+id)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"WICK_APP_ID=" + id, "WICK_HANDLE=" + handle, "WICK_ROLE=sh", "WICK_REPLICA=0", "WICK_HOST=localhost", "WICK_LOG_DIR=" + filepath.Join(h.home, "logs", "wick", id, "sh", "0"), "WICK_PID="} {
		if !strings.Contains(string(data), want+"\n") && !strings.Contains(string(data), want) {
			t.Errorf("the command's environment lacks %s:\n%s", want, data)
		}
	}
}

// TestOnEndFromConfig: config.toml's [alerts] on_end is the default of local_cwd's
// on_end run option: the app's supervisor runs it when the app ends, whoever watches;
// -cfg on_end= wins over it.
func TestOnEndFromConfig(t *testing.T) {
	h := newHarness(t)
	out := filepath.Join(h.work, "ended.txt")
	conf := filepath.Join(h.user, ".config", "wick", "config.toml")
	if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte("[alerts]\non_end = 'echo \"$WICK_APP_ID $WICK_STATE\" >> "+out+"'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := h.exec("run", "utils.sh", "--", "sh", "-c", "exit 3")
	if r.code != ExitFailure {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	id := appID(strings.TrimSpace(r.stdout))
	testkit.Wait(t, 30*time.Second, "the on_end line", func() (bool, string) {
		b, _ := os.ReadFile(out)
		return strings.Contains(string(b), id+" FAILED\n"), string(b)
	})
	r = h.exec("run", "-cfg", "on_end=true", "utils.echo")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	other := appID(strings.TrimSpace(r.stdout))
	r = h.exec("describe", "--json", other)
	if !strings.Contains(r.stdout, `"on_end": "true"`) {
		t.Errorf("-cfg on_end=true did not win over config.toml:\n%s", r.stdout)
	}
	// A sweep's points take the same default: each one's end is told.
	r = h.exec("run", "--sweep", "msg=a,b", "utils.echo")
	if r.code != 0 {
		t.Fatalf("run --sweep: %d %s", r.code, r.stderr)
	}
	testkit.Wait(t, 60*time.Second, "the on_end lines of the sweep's two apps", func() (bool, string) {
		b, _ := os.ReadFile(out)
		return strings.Count(string(b), " SUCCEEDED\n") == 2, string(b)
	})
}

// TestCompleteComponentFiles: wick run ./comp<TAB> completed nothing (only builtins'
// names), and a .py component's flags neither. A path completes to directories and
// component files, a file to FILE:NAME of each of its components (a .py file's
// functions read as text: no Python for a <TAB>), and --<TAB> after a .py component
// to its parameters.
func TestCompleteComponentFiles(t *testing.T) {
	h := newHarness(t)
	py := "import torchx.specs as specs\n\n\ndef trainer(\n    script: str = \"a,b(c)\",\n    nproc: int = 2,\n    *args: str,\n) -> specs.AppDef:\n    pass\n\n\ndef _helper():\n    pass\n\n\ndef evaluate(ckpt: str) -> specs.AppDef:\n    pass\n"
	if err := os.WriteFile(filepath.Join(h.work, "component.py"), []byte(py), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(h.work, "comps"), 0o755); err != nil {
		t.Fatal(err)
	}
	complete := func(args ...string) []string {
		r := h.run(append([]string{"__complete", "run"}, args...)...)
		var out []string
		for _, l := range strings.Split(r.stdout, "\n") {
			if l != "" && !strings.HasPrefix(l, ":") {
				out = append(out, l)
			}
		}
		return out
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"./comp"}, "./component.py: ./comps/"},
		{[]string{"./component.py"}, "./component.py:trainer ./component.py:evaluate"},
		{[]string{"./component.py:ev"}, "./component.py:evaluate"},
		{[]string{"./component.py:trainer", "--"}, "--script --nproc"},
		{[]string{"./component.py:evaluate", "--c"}, "--ckpt"},
	} {
		if got := strings.Join(complete(c.args...), " "); got != c.want {
			t.Errorf("wick run %s<TAB>: %q, want %q", strings.Join(c.args, " "), got, c.want)
		}
	}
}
