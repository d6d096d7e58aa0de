package kubernetes

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/internal/testkit"
)

// writeUnreachable writes a kubeconfig whose server does not answer.
func writeUnreachable(t *testing.T) string {
	t.Helper()
	kc := filepath.Join(t.TempDir(), "unreachable.kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return kc
}

// wickRun runs the benchmarks' wick (with its helper beside it) with args and returns
// what it printed and its exit code.
func (k *k8sBench) wickRun(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(k.wick, args...)
	cmd.Dir, cmd.Env = k.dir, k.env
	if env != nil {
		cmd.Env = env
	}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("wick %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// The verbs a user runs, through the wick binary and its helper wick-kubernetes, as
// make build installs them: an attached run streams the replica's line and ends
// SUCCEEDED; status, log and list see the app; a detached app is cancelled and its log
// stays; delete removes both; a server that does not answer is exit 4.
func TestCLIThroughTheHelper(t *testing.T) {
	needCluster(t)
	k := newK8sBench(t)
	cfg := []string{"-s", "kubernetes", "-cfg", k.cfg()}
	out, errOut, code := k.wickRun(t, nil, append(append([]string{"run"}, cfg...), "utils.echo", "--image", env.image, "--msg", "hello from the cli")...)
	// The handle on stdout; the replica's lines and the end on stderr.
	m := k8sHandle.FindStringSubmatch(out)
	if code != 0 || m == nil || !strings.Contains(errOut, "echo/0 hello from the cli") || !strings.Contains(errOut, m[0]+" SUCCEEDED") {
		t.Fatalf("wick run: exit %d, stdout %q, stderr %q; want 0, the handle, the line and SUCCEEDED", code, out, errOut)
	}
	h := m[0]
	if out, _, code := k.wickRun(t, nil, "status", h); code != 0 || !strings.Contains(out, "SUCCEEDED") {
		t.Errorf("wick status: exit %d, %q", code, out)
	}
	if out, _, code := k.wickRun(t, nil, "log", h); code != 0 || strings.TrimSpace(out) != "echo/0 hello from the cli" {
		t.Errorf("wick log: exit %d, %q", code, out)
	}
	if out, _, code := k.wickRun(t, nil, "list", "-s", "kubernetes"); code != 0 || !strings.Contains(out, m[1]) {
		t.Errorf("wick list: exit %d, %q; want %s", code, out, m[1])
	}
	out, errOut, code = k.wickRun(t, nil, append(append([]string{"run", "--detach"}, cfg...), "utils.sh", "--image", env.image, "--entrypoint", "serve", "29503", "0")...)
	h2 := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(h2, "kubernetes://") {
		t.Fatalf("wick run --detach: exit %d, %q %q", code, out, errOut)
	}
	testkit.Wait(t, 2*time.Minute, "the detached app listening", func() (bool, string) {
		out, errOut, _ := k.wickRun(t, nil, "log", h2)
		return strings.Contains(out, "listening on"), out + errOut
	})
	if _, errOut, code := k.wickRun(t, nil, "cancel", h2); code != 0 || !strings.Contains(errOut, "CANCELLED") {
		t.Errorf("wick cancel: exit %d, %q", code, errOut)
	}
	if out, _, code := k.wickRun(t, nil, "log", h2); code != 0 || !strings.Contains(out, "listening on") {
		t.Errorf("wick log of the cancelled app: exit %d, %q; want its lines", code, out)
	}
	for _, hh := range []string{h, h2} {
		if _, errOut, code := k.wickRun(t, nil, "delete", hh); code != 0 {
			t.Errorf("wick delete %s: exit %d, %q", hh, code, errOut)
		}
	}
	if _, _, code := k.wickRun(t, nil, "status", h); code != 2 {
		t.Errorf("wick status of a deleted app: exit %d, want 2 (no such app)", code)
	}
	// 100,000 lines on each stream, read as the app ends and again after: the lines the
	// node holds, each once (kubectl logs reads the same file; under load the node's
	// containerd may lose the tail of stdout for good, so the count is the node's).
	out, errOut, code = k.wickRun(t, nil, append(append([]string{"run"}, cfg...), "utils.sh", "--image", env.image, "--entrypoint", "lines", "100000")...)
	h3 := strings.TrimSpace(out)
	attached := strings.Count(errOut, "sh/0 ")
	log, _, lcode := k.wickRun(t, nil, "log", h3)
	id3 := ""
	if m := k8sHandle.FindStringSubmatch(h3); m != nil {
		id3 = m[1]
	}
	pods := strings.TrimSpace(k.run(t, "", k.kubectl, "get", "pods", "-n", env.namespace, "-l", selector(id3), "-o", "name"))
	nodeOut := k.run(t, "", k.kubectl, "logs", "-n", env.namespace, pods)
	node := strings.Count(nodeOut, "\n")
	if nodeOut != "" && !strings.HasSuffix(nodeOut, "\n") {
		// The tail the node lost may end inside a line: kubectl prints that last line
		// without a newline, wick's log with one (its logs hold whole lines).
		node++
	}
	if code != 0 || lcode != 0 || node < 100000 || strings.Count(log, "\n") != node || attached < node {
		t.Errorf("200,000 lines written: attached run exit %d, %d lines; log exit %d, %d lines; the node holds %d", code, attached, lcode, strings.Count(log, "\n"), node)
	}
	_, _, _ = k.wickRun(t, nil, "delete", h3)
	bad := append(append([]string{}, k.env...), "KUBECONFIG="+writeUnreachable(t))
	if _, errOut, code := k.wickRun(t, bad, "status", "kubernetes://x/"+m[1]); code != 4 || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Errorf("wick status against a server that does not answer: exit %d, %q; want 4 and its address", code, errOut)
	}
}

// A sweep on Kubernetes: `wick run --sweep` launches one app per value, with
// --max-parallel 1 one at a time, each to its end; the sweep's apps are listed.
func TestCLISweep(t *testing.T) {
	needCluster(t)
	k := newK8sBench(t)
	out, errOut, code := k.wickRun(t, nil, "run", "-s", "kubernetes", "-cfg", k.cfg(), "--sweep", "msg=a,b", "--max-parallel", "1", "utils.echo", "--image", env.image)
	if code != 0 {
		t.Fatalf("wick run --sweep: exit %d\n%s\n%s", code, out, errOut)
	}
	list, _, code := k.wickRun(t, nil, "list", "-s", "kubernetes", "--state", "succeeded")
	if code != 0 || strings.Count(list, "kubernetes://") != 2 {
		t.Errorf("after the sweep: exit %d, list\n%s\nwant its 2 apps SUCCEEDED (run said %q %q)", code, list, out, errOut)
	}
}
