package cli

import (
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/spec"
)

// TestListStateAndLimit: wick list --state and --limit keep the apps a user asks for;
// a state that does not exist is a usage error naming the ones that do.
func TestListStateAndLimit(t *testing.T) {
	h := newHarness(t)
	ok := h.run("run", "--detach", "utils.sh", "--", "true")
	bad := h.run("run", "--detach", "utils.sh", "--", "exit 3")
	for _, r := range []result{ok, bad} {
		if r.code != ExitOK {
			t.Fatalf("run: %d %s", r.code, r.stderr)
		}
	}
	okH, badH := strings.TrimSpace(ok.stdout), strings.TrimSpace(bad.stdout)
	h.waitState(okH, spec.Succeeded)
	h.waitState(badH, spec.Failed)
	r := h.run("list", "-s", "local_cwd", "--state", "failed")
	if r.code != ExitOK || !strings.Contains(r.stdout, badH) || strings.Contains(r.stdout, okH) {
		t.Errorf("--state failed: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = h.run("list", "-s", "local_cwd", "--state", "done,running")
	if !strings.Contains(r.stdout, badH) || !strings.Contains(r.stdout, okH) {
		t.Errorf("--state done: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = h.run("list", "-s", "local_cwd", "--state", "active")
	if strings.Contains(r.stdout, badH) || strings.Contains(r.stdout, okH) {
		t.Errorf("--state active lists ended apps:\n%s", r.stdout)
	}
	r = h.run("list", "-s", "local_cwd", "--limit", "1")
	if n := strings.Count(r.stdout, "local_cwd://"); n != 1 || !strings.Contains(r.stdout, badH) {
		t.Errorf("--limit 1 (newest first): %d rows\n%s", n, r.stdout)
	}
	r = h.run("list", "--state", "bogus")
	if r.code != ExitUsage || !strings.Contains(r.stderr, `--state "bogus": not a state`) {
		t.Errorf("--state bogus: %d %q", r.code, r.stderr)
	}
	if r = h.run("list", "--limit", "-1"); r.code != ExitUsage {
		t.Errorf("--limit -1: %d %q", r.code, r.stderr)
	}
}
