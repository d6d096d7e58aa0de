package cli

import (
	"bufio"
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/internal/testkit"
)

// TestFollowerSaysWhatHappenedToItsApp: a `wick log -f` whose app is deleted under it
// ends with an error saying so (its logs are gone); one whose app is cancelled by
// another command says so on stderr. Neither ends in silence.
func TestFollowerSaysWhatHappenedToItsApp(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct {
		verb     []string
		code     int
		stderrIs string
	}{
		// delete --force cancels the app, then deletes it: the follower, which ends at
		// the app's end, finds it cancelled or already deleted, and says which.
		{[]string{"delete", "--force"}, ExitFailure, " was deleted while its logs were followed: they end here\n"},
		{[]string{"cancel"}, ExitOK, " was cancelled\n"},
	} {
		t.Run(c.verb[0], func(t *testing.T) {
			r := h.exec("run", "--detach", "utils.sh", "--", "sh", "-c", "while :; do echo tick; sleep 0.1; done")
			if r.code != 0 {
				t.Fatalf("run: %d %s", r.code, r.stderr)
			}
			handle := strings.TrimSpace(r.stdout)
			t.Cleanup(func() { h.exec("delete", "--force", handle) })
			ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
			defer cancel()
			cmd := h.wickCmd(ctx, "log", "-f", handle)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(out)
			if !sc.Scan() || sc.Text() != "sh/0 tick" {
				t.Fatalf("followed %q", sc.Text())
			}
			if r := h.exec(append(c.verb, handle)...); r.code != 0 {
				t.Fatalf("%v: %d %s", c.verb, r.code, r.stderr)
			}
			for sc.Scan() {
			}
			err = cmd.Wait()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if c.verb[0] == "delete" && code == ExitOK && errb.String() == "wick: "+handle+" was cancelled\n" {
				return // the follower asked between the cancel and the delete
			}
			if code != c.code || errb.String() != "wick: "+handle+c.stderrIs {
				t.Errorf("log -f after %v: exit %d, stderr %q; want %d and %q", c.verb, code, errb.String(), c.code, "wick: "+handle+c.stderrIs)
			}
		})
	}
}
