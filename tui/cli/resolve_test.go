package cli

import (
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/spec"
)

// TestAppIDPrefixesStandForHandles: wherever a handle is expected, a unique app id or id
// prefix works (wick log demo-train-q5n); an ambiguous or unknown one is a clear error.
func TestAppIDPrefixesStandForHandles(t *testing.T) {
	h := newHarness(t)
	var handles []string
	for _, msg := range []string{"first app", "second app"} {
		r := h.run("run", "--detach", "utils.echo", "--msg", msg)
		if r.code != ExitOK {
			t.Fatalf("run: %d %s", r.code, r.stderr)
		}
		handles = append(handles, strings.TrimSpace(r.stdout))
	}
	for _, hd := range handles {
		h.waitState(hd, spec.Succeeded)
	}
	id := handles[1][strings.LastIndex(handles[1], "/")+1:]

	r := h.run("log", id[:len(id)-3])
	if r.code != ExitOK || !strings.Contains(r.stdout, "second app") || strings.Contains(r.stdout, "first app") {
		t.Errorf("log by id prefix: %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if r := h.run("log", id+"/echo/0"); r.code != ExitOK || !strings.Contains(r.stdout, "second app") {
		t.Errorf("log by id/role/replica: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := h.run("status", id); r.code != ExitOK || !strings.Contains(r.stdout, id) {
		t.Errorf("status by id: %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = h.run("describe", "echo-")
	if r.code != ExitUsage || !strings.Contains(r.stderr, `"echo-" names`) || !strings.Contains(r.stderr, "give more of the id") {
		t.Errorf("ambiguous prefix: %d %q", r.code, r.stderr)
	}
	if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n != 0 {
		t.Errorf("ambiguous prefix: want one line, got %q", r.stderr)
	}
	r = h.run("delete", "nosuchapp-x")
	if r.code != ExitUsage || !strings.Contains(r.stderr, `no such app: no app id starts with "nosuchapp-x"`) {
		t.Errorf("unknown id: %d %q", r.code, r.stderr)
	}
	r = h.run("status", "bad id")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "neither a handle") {
		t.Errorf("malformed id: %d %q", r.code, r.stderr)
	}
}

// TestCompletion: <TAB> completes components after run, schedulers after -s, run
// options after --cfg, and the handles and ids of existing apps after the verbs that
// take one.
func TestCompletion(t *testing.T) {
	h := newHarness(t)
	r := h.run("run", "--detach", "utils.echo", "--msg", "x")
	if r.code != ExitOK {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	id := handle[strings.LastIndex(handle, "/")+1:]
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"run", "utils.ec"}, []string{"utils.echo\t"}},
		{[]string{"run", "dist."}, []string{"dist.ddp\t"}},
		{[]string{"run", "-s", ""}, []string{"local_cwd", "local_docker"}},
		{[]string{"run", "-s", "local_docker", "--cfg", "network=x,sh"}, []string{"network=x,shm_size=\t"}},
		{[]string{"status", ""}, []string{handle + "\t", id + "\t"}},
		{[]string{"log", id[:6]}, []string{id + "\t"}},
		{[]string{"cancel", "local_cwd://"}, []string{handle + "\t"}},
	}
	for _, c := range cases {
		r := h.run(append([]string{"__complete"}, c.args...)...)
		for _, w := range c.want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("complete %q: no %q in\n%s", c.args, w, r.stdout)
			}
		}
	}
}

// TestHandleHelpSaysWhatWorks: the help of each verb taking a HANDLE says it may be a
// handle, an app id or the start of one (it said SCHEDULER://SESSION/APP_ID only, or
// nothing), and each form it names works there.
func TestHandleHelpSaysWhatWorks(t *testing.T) {
	h := newHarness(t)
	r := h.run("run", "--detach", "utils.echo", "--msg", "forms")
	if r.code != ExitOK {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	h.waitState(handle, spec.Succeeded)
	id := handle[strings.LastIndex(handle, "/")+1:]
	forms := []string{handle, id, id[:len(id)-4]}
	for _, verb := range []string{"status", "describe", "cancel", "delete"} {
		help := h.run(verb, "--help")
		for _, want := range []string{"SCHEDULER://SESSION/APP_ID", "its app id alone", "the start of an app id"} {
			if !strings.Contains(help.stdout, want) {
				t.Errorf("%s --help lacks %q:\n%s", verb, want, help.stdout)
			}
		}
		for _, form := range forms {
			if verb == "delete" && form != forms[len(forms)-1] {
				continue // once deleted, gone: the last form deletes it
			}
			if r := h.run(verb, form); r.code != ExitOK || (verb == "status" || verb == "describe") && !strings.Contains(r.stdout, id) {
				t.Errorf("%s %s: exit %d\nstdout: %s\nstderr: %s", verb, form, r.code, r.stdout, r.stderr)
			}
		}
	}
	if r := h.run("status", id); r.code != ExitUsage || !strings.Contains(r.stderr, "no such app") {
		t.Errorf("status after the delete by a prefix: exit %d %q", r.code, r.stderr)
	}
}
