package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestExecLocal: wick exec runs a command, or a shell, in a local_dir replica's own
// place: the directory it runs in (its image, not wick's working directory) and the
// environment its process has (a variable only the replica was given), with the
// command's exit status; a replica that is not the app's, an app that ended and a
// missing command are one line each.
func TestExecLocal(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	img := filepath.Join(t.TempDir(), "img")
	if err := os.Mkdir(img, 0o755); err != nil {
		t.Fatal(err)
	}
	r := h.exec("run", "--detach", "-s", "local_dir", "utils.sh", "--image", img, "--env", "ONLY_REPLICA=seen-by-exec", "--num_replicas", "2", "sleep", "120")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	defer h.exec("cancel", handle)
	h.waitState(handle, spec.Running)
	testkit.Wait(t, 20*time.Second, "both replicas running", func() (bool, string) {
		st := h.status(handle)
		n := 0
		for _, rep := range st.Roles[0].Replicas {
			if rep.State == spec.Running && rep.PID > 0 {
				n++
			}
		}
		return n == 2, h.exec("status", handle).stdout
	})

	r = h.exec("exec", handle+"/sh/1", "sh", "-c", `pwd; echo "$ONLY_REPLICA"; exit 3`)
	if r.code != 3 || r.stdout != img+"\nseen-by-exec\n" {
		t.Errorf("exec sh -c: exit %d, stdout %q, stderr %q; want exit 3, %q", r.code, r.stdout, r.stderr, img+"\nseen-by-exec\n")
	}
	if _, ok := os.LookupEnv("ONLY_REPLICA"); ok {
		t.Fatal("the test's own environment has ONLY_REPLICA")
	}

	// No command: a shell ($SHELL), here reading its commands from stdin.
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	cmd := h.wickCmd(ctx, "exec", handle+"/sh/0")
	cmd.Env = append(cmd.Env, "SHELL=/bin/bash")
	cmd.Stdin = strings.NewReader("echo \"$BASH_VERSION\" | cut -c1; pwd; echo \"$ONLY_REPLICA\"\n")
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("exec a shell: %v\n%s", err, out.String())
	}
	if got := out.String(); got != "5\n"+img+"\nseen-by-exec\n" {
		t.Errorf("the shell said %q", got)
	}

	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{handle + "/sh/7", "true"}, 2, "wick: " + handle + ": no replica sh/7 (sh has 0, 1)\n"},
		{[]string{handle + "/trainer/0", "true"}, 2, "wick: " + handle + ": no role \"trainer\" (roles: sh)\n"},
		{[]string{handle, "true"}, 2, "wick: wick exec needs one replica: HANDLE/ROLE/ID (as wick status lists them)\n"},
		{[]string{handle + "/sh/0", "no-such-command-x"}, 1, "wick: no-such-command-x: no such command in the replica's PATH\n"},
		{[]string{"nosuchapp-x/sh/0", "true"}, 2, ""},
	} {
		r := h.exec(append([]string{"exec"}, tc.args...)...)
		if r.code != tc.code || tc.msg != "" && r.stderr != tc.msg || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("exec %q: exit %d, stderr %q; want %d, %q", tc.args, r.code, r.stderr, tc.code, tc.msg)
		}
	}
	h.exec("cancel", handle)
	h.waitState(handle, spec.Cancelled)
	r = h.exec("exec", handle+"/sh/0", "true")
	if r.code != 1 || r.stderr != "wick: "+handle+": the app has ended (CANCELLED): there is no process to run in\n" {
		t.Errorf("exec in an ended app: %d %q", r.code, r.stderr)
	}
	if r := h.exec("exec", "--help"); r.code != 0 || !strings.Contains(r.stdout, "srun --overlap") {
		t.Errorf("exec --help: %d %s", r.code, r.stderr)
	}
}
