package cli

import (
	"strings"
	"testing"
	"time"
)

// TestLogTimeWindows: a window that cannot hold a line (a negative duration, a time in
// the future, a unix time past int64 nanoseconds, --until before --since) is a
// one-line error; a sound window that merely holds nothing prints a warning.
func TestLogTimeWindows(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "utils.sh", "echo", "hi")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--since", "-5h"}, `wick: --since: "-5h" is a negative duration: a duration counts back from now (5h means 5h ago)`},
		{[]string{"--until", "-1m"}, `wick: --until: "-1m" is a negative duration`},
		{[]string{"--until", "99999999999"}, `wick: --until: unix time "99999999999" is out of range (0 to 9223372035)`},
		{[]string{"--since", "-1e300"}, `wick: --since: unix time "-1e300" is out of range`},
		{[]string{"--since", future}, "wick: --since " + future + " is in the future"},
		{[]string{"--since", "1h", "--until", "2h"}, "wick: --since 1h --until 2h holds nothing: --until must come after --since"},
	} {
		got := h.exec(append(append([]string{"log"}, c.args...), handle)...)
		if got.code == 0 || got.stdout != "" || strings.Count(got.stderr, "\n") != 1 || !strings.HasPrefix(got.stderr, c.want) {
			t.Errorf("wick log %s: exit %d, stdout %q, stderr %q; want an error starting %q", strings.Join(c.args, " "), got.code, got.stdout, got.stderr, c.want)
		}
	}
	// Sound windows before the app and after it: rc 0, nothing printed, a warning.
	for _, args := range [][]string{{"--until", "2001-01-01T00:00:00Z"}, {"--since", "2h", "--until", "1h"}} {
		got := h.exec(append(append([]string{"log"}, args...), handle)...)
		if got.code != 0 || got.stdout != "" || !strings.HasPrefix(got.stderr, "wick: warning: no line of "+handle+" in the window --") {
			t.Errorf("wick log %s: exit %d, stdout %q, stderr %q; want a warning", strings.Join(args, " "), got.code, got.stdout, got.stderr)
		}
	}
	if got := h.exec("log", "--since", "1h", handle); got.code != 0 || got.stdout != "sh/0 hi\n" || got.stderr != "" {
		t.Errorf("wick log --since 1h: exit %d, stdout %q, stderr %q", got.code, got.stdout, got.stderr)
	}
}
