package cli

import (
	"strings"
	"testing"
)

// TestDDPTee3CrashOnTwoNodes: dist.ddp's default --tee 3 on two nodes of this machine.
// torch 1.13's torchrun crashes on Python 3.11 after its rendezvous (AttributeError
// while starting its workers); one node could not bind the rendezvous port, as always
// when two nodes share a machine (its peer hosts the store). The error is the crash and
// its workaround, not "rendezvous port N is in use".
func TestDDPTee3CrashOnTwoNodes(t *testing.T) {
	t.Parallel()
	h := ddpHarness(t)
	r := execLong(h, "run", "-s", "local_cwd", "dist.ddp", "-j", "2x1", "--script", "train.py", "--", "--epochs", "1", "--samples", "64")
	if r.code == 0 {
		t.Skip("this torch does not crash on --tee 3")
	}
	if strings.Contains(r.stderr, "is in use") || !strings.Contains(r.stderr, "hint: torchrun crashed parsing --tee/--redirects") {
		t.Fatalf("exit %d, the crash is not the error:\n%s", r.code, r.stderr)
	}
	if st := h.status(handleOf(t, r)); strings.Contains(st.Msg, "in use") || !strings.Contains(st.Msg, "AttributeError") {
		t.Errorf("status says %q, want torchrun's AttributeError", st.Msg)
	}
}
