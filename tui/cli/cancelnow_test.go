package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/internal/testkit"
)

// wick cancel --now does not wait for the grace period; a plain cancel, repeated,
// does not shorten it.
func TestCancelNow(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dir := t.TempDir()
	script, ready := filepath.Join(dir, "stubborn.sh"), filepath.Join(dir, "ready")
	// It says when TERM is ignored: a cancel before that kills it, as it should.
	if err := os.WriteFile(script, []byte("trap '' TERM\ntouch "+ready+"\nwhile :; do sleep 0.05; done\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := h.run("run", "--detach", "-cfg", "stop_timeout=600", "utils.sh", "--", "sh", script)
	if run.code != ExitOK {
		t.Fatalf("run: %d %s", run.code, run.stderr)
	}
	hd := strings.TrimSpace(run.stdout)
	for deadline := time.Now().Add(testkit.Scale(30 * time.Second)); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica never started:\n%s", h.run("status", hd).stdout)
		}
	}
	for range 2 {
		if r := h.run("cancel", "--no-wait", hd); r.code != ExitOK {
			t.Fatalf("cancel: %d %s", r.code, r.stderr)
		}
	}
	// The replica ignores TERM: it must still run for a while (its grace is 600 s).
	for end := time.Now().Add(testkit.Scale(time.Second)); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if r := h.run("status", hd); !strings.Contains(r.stdout, "RUNNING") {
			t.Fatalf("a repeated cancel cut the grace period short:\n%s%s", r.stdout, h.run("log", hd).stdout)
		}
	}
	began := time.Now()
	r := h.run("cancel", "--now", hd)
	if r.code != ExitOK || !strings.Contains(r.stderr, "CANCELLED") || time.Since(began) > testkit.Scale(30*time.Second) {
		t.Errorf("cancel --now: %d %q after %v", r.code, r.stderr, time.Since(began))
	}
}
