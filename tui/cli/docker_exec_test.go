package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestExecDocker: wick exec runs a command inside a local_docker replica's container
// (the test's own one-binary image): it sees the replica's environment, writes the
// container's file system (not this machine's), takes stdin, and gives the command's
// exit status; an image without a shell is said in one line.
func TestExecDocker(t *testing.T) {
	img := dockerImage(t)
	h := newHarness(t)
	r := h.exec("run", "--detach", "-s", "local_docker", "utils.sh", "--image", img, "--entrypoint", "/helper", "--env", "ONLY_REPLICA=in-container", "--", "loop")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { h.exec("delete", "--force", handle) })
	h.waitState(handle, spec.Running)

	if r := h.exec("exec", handle+"/sh/0", "/helper", "env"); r.code != 0 || !strings.Contains(r.stdout, "\nONLY_REPLICA=in-container\n") {
		t.Errorf("exec env: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	path := "/wick-exec-" + strings.ReplaceAll(t.Name(), "/", "-")
	if r := h.exec("exec", handle+"/sh/0", "/helper", "write", path, "inside"); r.code != 0 {
		t.Fatalf("exec write: %d %s", r.code, r.stderr)
	}
	if r := h.exec("exec", handle+"/sh/0", "/helper", "cat", path); r.stdout != "inside" {
		t.Errorf("exec cat: %d %q %s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("%s was written on this machine, not in the container", path)
	}
	if r := h.exec("exec", handle+"/sh/0", "/helper", "exit", "3"); r.code != 3 || r.stderr != "exiting with 3\n" {
		t.Errorf("exec exit 3: %d %q", r.code, r.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	cmd := h.wickCmd(ctx, "exec", handle+"/sh/0", "/helper", "cat", "/dev/stdin")
	cmd.Stdin = strings.NewReader("from stdin\n")
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil || out.String() != "from stdin\n" {
		t.Errorf("exec with stdin: %v %q", err, out.String())
	}
	if r := h.exec("exec", handle+"/sh/0"); r.code != 1 || r.stderr != "wick: "+handle+": sh/0's image has no shell (/bin/bash, /bin/sh): give a command to run\n" {
		t.Errorf("exec a shell in an image without one: %d %q", r.code, r.stderr)
	}
	if r := h.exec("exec", handle+"/sh/1", "/helper", "true"); r.code != 2 || r.stderr != "wick: "+handle+": no replica sh/1 (sh has 0)\n" {
		t.Errorf("exec in no replica: %d %q", r.code, r.stderr)
	}
}
