package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestExitCodes: each outcome has its own exit code (docs/json.md), and a --json error
// carries the same code in its "exit_code".
func TestExitCodes(t *testing.T) {
	h := newHarness(t)
	jsonCode := func(t *testing.T, r result) int {
		t.Helper()
		var e struct {
			Error    string `json:"error"`
			ExitCode int    `json:"exit_code"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &e); err != nil || e.Error == "" {
			t.Fatalf("--json error: %v; stdout %q", err, r.stdout)
		}
		return e.ExitCode
	}
	t.Run("succeeded", func(t *testing.T) {
		if r := h.exec("run", "utils.echo", "--msg", "hi"); r.code != ExitOK {
			t.Errorf("exit %d, want %d: %s", r.code, ExitOK, r.stderr)
		}
	})
	t.Run("the app failed", func(t *testing.T) {
		if r := h.exec("run", "utils.sh", "sh", "-c", "exit 7"); r.code != ExitFailure {
			t.Errorf("exit %d, want %d: %s", r.code, ExitFailure, r.stderr)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		for _, args := range [][]string{
			{"run", "--no-such-flag", "utils.echo"},
			{"run", "utils.ech"},
			{"status", "local_cwd://wick/nosuchapp-bcdfghjklmnp"},
			{"log", "nosuchapp-x"},
			{"cancel", "nosuchapp-x", "nosuchapp-y"},
			{"status", "not a handle://"},
		} {
			if r := h.exec(args...); r.code != ExitUsage {
				t.Errorf("%v: exit %d, want %d: %s", args, r.code, ExitUsage, r.stderr)
			}
		}
		r := h.exec("status", "--json", "nosuchapp-x")
		if r.code != ExitUsage || jsonCode(t, r) != ExitUsage {
			t.Errorf("status --json of no app: exit %d, stdout %q", r.code, r.stdout)
		}
	})
	t.Run("scheduler unreachable", func(t *testing.T) {
		h := newHarness(t)
		h.cmdEnv = append(h.cmdEnv, "DOCKER_HOST=unix://"+filepath.Join(t.TempDir(), "no-engine.sock"), "DOCKER_CONTEXT=")
		r := h.exec("run", "-s", "local_docker", "utils.echo")
		if r.code != ExitUnreachable || !strings.Contains(r.stderr, "Docker Engine") {
			t.Errorf("run on an Engine that is not there: exit %d, want %d: %s", r.code, ExitUnreachable, r.stderr)
		}
		r = h.exec("run", "--json", "-s", "local_docker", "utils.echo")
		if r.code != ExitUnreachable || jsonCode(t, r) != ExitUnreachable {
			t.Errorf("run --json on an Engine that is not there: exit %d, stdout %q", r.code, r.stdout)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		cmd, handle := startAttached(t, h, "utils.sh", "sh", "-c", "echo alive; sleep 60")
		if r := h.exec("cancel", handle); r.code != ExitOK {
			t.Fatalf("cancel: %d %s", r.code, r.stderr)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if code := cmd.ProcessState.ExitCode(); code != ExitCancelled {
				t.Errorf("attached run of an app cancelled by another command: %v (exit %d), want exit %d", err, code, ExitCancelled)
			}
		case <-time.After(testkit.Scale(60 * time.Second)):
			t.Fatal("the attached run did not end after its app was cancelled")
		}
		if st := h.status(handle); st.State != spec.Cancelled {
			t.Errorf("app is %s", st.State)
		}
	})
}
