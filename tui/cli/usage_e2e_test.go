package cli

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestStatusAndDescribeShowUsage runs a replica that holds 64 MiB and burns a core, and
// checks that `wick status` (text and JSON) and `wick describe` show its CPU and RSS.
func TestStatusAndDescribeShowUsage(t *testing.T) {
	h := newHarness(t)
	py := `b = bytearray(b"x" * (64 << 20))
import time
end = time.time() + 120
while time.time() < end:
    pass`
	r := h.exec("run", "--detach", "utils.sh", "/usr/bin/python3", "-c", py)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { h.exec("cancel", handle) })
	h.waitState(handle, spec.Running)

	// The replica allocates its 64 MiB right after it starts: wait for it.
	deadline := time.Now().Add(testkit.Scale(30 * time.Second))
	for {
		st := h.status(handle)
		u := st.Roles[0].Replicas[0].Usage
		if u != nil && u.RSS > 64<<20 && u.CPU > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status --json never showed RSS > 64 MiB and CPU > 0: %+v", u)
		}
		time.Sleep(100 * time.Millisecond)
	}
	row := regexp.MustCompile(`(?m)^sh/0\s+RUNNING\s.*\s(\d+)%\s+(\d+(\.\d+)?)MiB`)
	for _, verb := range []string{"status", "describe"} {
		out := h.exec(verb, handle).stdout
		if !regexp.MustCompile(`(?m)^REPLICA .* CPU +RSS +ERROR`).MatchString(out) {
			t.Errorf("wick %s has no CPU and RSS columns:\n%s", verb, out)
		}
		m := row.FindStringSubmatch(out)
		if m == nil || m[1] == "0" {
			t.Errorf("wick %s does not show the replica's CPU and RSS:\n%s", verb, out)
		}
	}

	if r := h.exec("cancel", handle); r.code != 0 {
		t.Fatalf("cancel: %d %s", r.code, r.stderr)
	}
	if out := h.exec("status", handle).stdout; strings.Contains(out, "CPU") {
		t.Errorf("a cancelled app shows usage:\n%s", out)
	}
}
