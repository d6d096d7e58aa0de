package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestDockerCancelNow: wick cancel --now on local_docker kills at once: a replica whose
// TERM trap would checkpoint for a minute (grace period: 10 minutes) never gets the
// SIGTERM, and the app ends CANCELLED.
func TestDockerCancelNow(t *testing.T) {
	t.Parallel()
	img := dockerImage(t)
	h := newHarness(t)
	r := h.exec("run", "--detach", "-s", "local_docker", "-cfg", "stop_timeout=600", "utils.sh", "--image", img, "--entrypoint", "/helper", "--", "trap")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	hd := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { h.exec("delete", "--force", hd) })
	testkit.Wait(t, 60*time.Second, "the replica sets its trap", func() (bool, string) {
		return strings.Contains(h.exec("log", hd).stdout, "waiting for SIGTERM"), h.exec("status", hd).stdout
	})
	if r := h.exec("cancel", "--now", "--timeout", "30s", hd); r.code != 0 || !strings.Contains(r.stderr, "CANCELLED") {
		t.Errorf("cancel --now: %d %q", r.code, r.stderr)
	}
	if st := h.status(hd); st.State != spec.Cancelled {
		t.Errorf("state %s, want CANCELLED", st.State)
	}
	if logs := h.exec("log", hd).stdout; strings.Contains(logs, "TERM trap") {
		t.Errorf("the replica got SIGTERM (its trap ran):\n%s", logs)
	}
}
