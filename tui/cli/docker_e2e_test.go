package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
)

// dockerImage builds a one-binary image from testdata/docker/helper with docker import,
// or skips (fails under CI=true) when no Docker Engine answers.
func dockerImage(t *testing.T) string {
	t.Helper()
	if err := exec.Command("docker", "info").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but the Docker Engine is unreachable: %v", err)
		}
		t.Skipf("no Docker Engine (docker info: %v); set CI=true to make this a failure", err)
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "helper"), "../../testdata/docker/helper")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the helper: %v\n%s", err, out)
	}
	ref := fmt.Sprintf("wick-cli-test:%d", time.Now().UnixNano())
	imp := exec.Command("sh", "-c", "tar -C "+dir+" -c helper | docker import - "+ref)
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("docker import: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", ref).Run() })
	return ref
}

// TestDockerThroughTheVerbs runs the verbs of the local scheduler on local_docker: an
// attached run to its result, status, log, list, a detached app cancelled from another
// process, an attached run interrupted, and delete.
func TestDockerThroughTheVerbs(t *testing.T) {
	t.Parallel()
	img := dockerImage(t)
	h := newHarness(t)
	binary := func(args ...string) []string {
		return append([]string{"-s", "local_docker", "utils.sh", "--image", img, "--entrypoint", "/helper", "--"}, args...)
	}

	r := h.exec(append([]string{"run"}, binary("echo", "hello", "docker")...)...)
	if r.code != 0 || !strings.Contains(r.stderr, "sh/0 hello docker") {
		t.Fatalf("attached run: exit %d\n%s", r.code, r.stderr)
	}
	done := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { h.exec("delete", "--force", done) })
	if st := h.status(done); st.State != spec.Succeeded || *st.Roles[0].Replicas[0].ExitCode != 0 {
		t.Errorf("status: %+v", st)
	}
	if r := h.exec("log", done); r.stdout != "sh/0 hello docker\n" {
		t.Errorf("log: %q %s", r.stdout, r.stderr)
	}
	if r := h.exec("list", "-s", "local_docker"); !strings.Contains(r.stdout, done) {
		t.Errorf("list lacks %s:\n%s", done, r.stdout)
	}

	r = h.exec(append([]string{"run"}, binary("exit", "3")...)...)
	if r.code != 1 || !strings.Contains(r.stderr, "FAILED") {
		t.Errorf("failing run: exit %d\n%s", r.code, r.stderr)
	}
	failed := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { h.exec("delete", "--force", failed) })
	if st := h.status(failed); *st.Roles[0].Replicas[0].ExitCode != 3 {
		t.Errorf("exit code of the failed replica: %+v", st.Roles[0].Replicas[0])
	}

	r = h.exec(append([]string{"run", "--detach"}, binary("loop")...)...)
	if r.code != 0 {
		t.Fatalf("detached run: %d %s", r.code, r.stderr)
	}
	looping := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { h.exec("delete", "--force", looping) })
	h.waitState(looping, spec.Running)
	if r := h.exec("delete", looping); r.code != 1 || !strings.Contains(r.stderr, "running") {
		t.Errorf("delete of a running app: %d %s", r.code, r.stderr)
	}
	if r := h.exec("cancel", looping); r.code != 0 {
		t.Fatalf("cancel: %d %s", r.code, r.stderr)
	}
	if st := h.status(looping); st.State != spec.Cancelled {
		t.Errorf("after cancel: %s", st.State)
	}
	if r := h.exec("delete", looping); r.code != 0 {
		t.Errorf("delete: %d %s", r.code, r.stderr)
	}
	if r := h.exec("status", looping); r.code != ExitUsage || !strings.Contains(r.stderr, "no such app") {
		t.Errorf("status after delete: %d %s", r.code, r.stderr)
	}

	// Ctrl-C of an attached docker run cancels the app (TorchX left it running).
	cmd := h.wickCmd(context.Background(), append([]string{"run"}, binary("loop")...)...)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	n, _ := out.Read(buf)
	interrupted := strings.TrimSpace(string(buf[:n]))
	t.Cleanup(func() { h.exec("delete", "--force", interrupted) })
	h.waitState(interrupted, spec.Running)
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	if st := h.status(interrupted); st.State != spec.Cancelled {
		t.Errorf("after Ctrl-C of the attached run the app is %s, want CANCELLED", st.State)
	}
}
