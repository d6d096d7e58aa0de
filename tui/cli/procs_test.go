package cli

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
)

// runProcs is h.run with an Env that can set GOMAXPROCS: what it was asked to set.
func (h *harness) runProcs(args ...string) (result, []int) {
	h.t.Helper()
	var out, errb bytes.Buffer
	var set []int
	code := Main(context.Background(), args, Env{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Getenv: h.getenv, Self: h.self, WorkDir: h.work,
		MaxProcs: func(n int) int { set = append(set, n); return 0 },
	})
	return result{code, out.String(), errb.String()}, set
}

// TestFollowingRunsOnOneProcessor: a wick that follows logs (`wick log -f`, an
// attached run) puts itself on one processor; one that reads them to their end and
// stops does not, nor one whose user set GOMAXPROCS.
func TestFollowingRunsOnOneProcessor(t *testing.T) {
	h := newHarness(t)
	r, set := h.runProcs("run", "utils.echo", "--msg", "hi")
	if r.code != ExitOK || !slices.Equal(set, []int{1}) {
		t.Fatalf("attached run: exit %d, GOMAXPROCS set to %v, want [1]\n%s", r.code, set, r.stderr)
	}
	r, set = h.runProcs("run", "--detach", "utils.echo", "--msg", "hi")
	if r.code != ExitOK || len(set) != 0 {
		t.Fatalf("detached run: exit %d, GOMAXPROCS set to %v, want left alone\n%s", r.code, set, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	if r, set = h.runProcs("log", "-f", handle); r.code != ExitOK || !slices.Equal(set, []int{1}) {
		t.Fatalf("log -f: exit %d, GOMAXPROCS set to %v, want [1]\n%s", r.code, set, r.stderr)
	}
	if r, set = h.runProcs("log", handle); r.code != ExitOK || len(set) != 0 || !strings.Contains(r.stdout, "hi") {
		t.Fatalf("log: exit %d, GOMAXPROCS set to %v, want left alone\n%s%s", r.code, set, r.stdout, r.stderr)
	}
	h.env["GOMAXPROCS"] = "2"
	if r, set = h.runProcs("log", "-f", handle); r.code != ExitOK || len(set) != 0 {
		t.Fatalf("log -f with GOMAXPROCS=2: exit %d, GOMAXPROCS set to %v, want the user's\n%s", r.code, set, r.stderr)
	}
}
