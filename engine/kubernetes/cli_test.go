package kubernetes

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
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

// TestAlertsThroughTheHelper: on_alarm and on_end of a kubernetes app, run by the
// alerts' watcher on the launching machine (wick __alerts), as for local_docker and
// Slurm: a metric's NaN and the hang are told while the app runs, on_end once it is
// cancelled, and a failed app's on_end is told its cause; each command runs once.
func TestAlertsThroughTheHelper(t *testing.T) {
	needCluster(t)
	k := newK8sBench(t)
	dir := t.TempDir()
	ended, alarms := filepath.Join(dir, "ended.txt"), filepath.Join(dir, "alarms.txt")
	cfg := k.cfg() + `,on_end=echo "$WICK_APP_ID $WICK_STATE $WICK_ERROR" >> ` + ended +
		`,on_alarm=echo "$WICK_APP_ID $WICK_ALARM_KIND $WICK_STATE: $WICK_ALARM" >> ` + alarms
	run := append(append([]string{}, k.env...), "WICK_ALERTS_EVERY=1s")
	waitLine := func(what, file string, want ...string) {
		t.Helper()
		testkit.Wait(t, 2*time.Minute, what, func() (bool, string) {
			b, _ := os.ReadFile(file)
			for _, l := range strings.Split(string(b), "\n") {
				ok := true
				for _, w := range want {
					ok = ok && strings.Contains(l, w)
				}
				if ok {
					return true, ""
				}
			}
			return false, string(b)
		})
	}
	// The helper's steps: "step i loss V" for each value, then quiet for 300 s.
	out, errOut, code := k.wickRun(t, run, "run", "--detach", "--hang-after", "3s", "-s", "kubernetes", "-cfg", cfg,
		"utils.sh", "--image", env.image, "--entrypoint", "helper", "--", "steps", "300s", "0.5", "0.4", "nan")
	m := k8sHandle.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("wick run --detach: exit %d, %q %q", code, out, errOut)
	}
	h, id := m[0], m[1]
	if i := strings.LastIndex(id, ":"); i >= 0 {
		id = id[i+1:] // NAMESPACE:APP_ID
	}
	t.Cleanup(func() { _, _, _ = k.wickRun(t, nil, "delete", "--force", h) })
	// The state told is the app's at the watcher's look: PENDING until the pod's
	// status reaches the listing, though its lines are read.
	waitLine("the metric alarm told", alarms, id+" metric ", "NaN at step 3")
	waitLine("the hang told", alarms, id+" hang RUNNING: hang: no output or new step for")
	if b, _ := os.ReadFile(ended); len(b) > 0 {
		t.Errorf("on_end ran while the app runs: %s", b)
	}
	if _, errOut, code := k.wickRun(t, nil, "cancel", h); code != 0 {
		t.Fatalf("wick cancel: exit %d, %q", code, errOut)
	}
	waitLine("on_end of the cancelled app", ended, id+" CANCELLED")

	out, errOut, code = k.wickRun(t, run, "run", "--detach", "-s", "kubernetes", "-cfg", cfg,
		"utils.sh", "--image", env.image, "--entrypoint", "exit", "3")
	m = k8sHandle.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("wick run --detach: exit %d, %q %q", code, out, errOut)
	}
	failed, fid := m[0], m[1][strings.LastIndex(m[1], ":")+1:]
	t.Cleanup(func() { _, _, _ = k.wickRun(t, nil, "delete", "--force", failed) })
	// Its cause as every scheduler names a plain replica's exit.
	waitLine("on_end of the failed app", ended, fid+" FAILED ", "sh/0: exit code 3")
	// The watchers end with their apps: nothing is told twice.
	time.Sleep(testkit.Scale(3 * time.Second))
	b, _ := os.ReadFile(ended)
	if n := strings.Count(string(b), "\n"); n != 2 {
		t.Errorf("on_end ran %d times for two apps:\n%s", n, b)
	}
	b, _ = os.ReadFile(alarms)
	if n := strings.Count(string(b), " hang "); n != 1 {
		t.Errorf("on_alarm told the hang %d times:\n%s", n, b)
	}
}

// keepComponent is a component file of two roles: talk's two replicas print two
// lines and wait; bad fails after delay.
const keepComponent = `keep:
  params:
    - {name: img}
    - {name: delay}
  app:
    name: keep
    roles:
      - name: talk
        image: ${{ img }}
        entrypoint: steps
        args: [10m, "1.0", "0.5"]
        num_replicas: 2
      - name: bad
        image: ${{ img }}
        entrypoint: raise
        args: ["${{ delay }}", boom]
`

// A detached app whose one role fails while the other runs: the cluster deletes the
// running role's pods (JobSet's controller, or wick's stop on a cluster without it),
// yet `wick log` of the ended app shows every replica's lines, kept by the keeper the
// launch started beside it (wick-kubernetes keep); delete leaves no pod behind.
func TestCLIKeepsTheLogsOfStoppedReplicas(t *testing.T) {
	needCluster(t)
	k := newK8sBench(t)
	file := filepath.Join(k.dir, "keep.yaml")
	if err := os.WriteFile(file, []byte(keepComponent), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := k.wickRun(t, nil, "run", "--detach", "-s", "kubernetes", "-cfg", k.cfg(), file+":keep",
		"--img", env.image, "--delay", min(testkit.Scale(15*time.Second), 40*time.Second).String())
	h := strings.TrimSpace(out)
	m := k8sHandle.FindStringSubmatch(h)
	if code != 0 || m == nil {
		t.Fatalf("wick run --detach: exit %d, %q %q", code, out, errOut)
	}
	t.Cleanup(func() { _, _, _ = k.wickRun(t, nil, "delete", "--force", h) })
	want := []string{"talk/0 step 1 loss 1.0", "talk/0 step 2 loss 0.5", "talk/1 step 1 loss 1.0", "talk/1 step 2 loss 0.5", "bad/0 boom"}
	testkit.Wait(t, 3*time.Minute, "the app FAILED, its talkers CANCELLED, and every line", func() (bool, string) {
		out, _, _ := k.wickRun(t, nil, "status", "--json", h)
		var st spec.AppStatus
		if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Roles) != 2 {
			return false, fmt.Sprintf("status: %v: %s", err, out)
		}
		ok := st.State == spec.Failed
		for _, r := range st.Roles[0].Replicas {
			ok = ok && r.State == spec.Cancelled
		}
		if !ok {
			return false, out
		}
		log, errOut, _ := k.wickRun(t, nil, "log", h)
		for _, w := range want {
			ok = ok && strings.Contains(log, w)
		}
		return ok, log + errOut
	})
	if _, errOut, code := k.wickRun(t, nil, "delete", h); code != 0 {
		t.Fatalf("wick delete: exit %d, %q", code, errOut)
	}
	testkit.Wait(t, 2*time.Minute, "no pod of the deleted app", func() (bool, string) {
		pods := strings.TrimSpace(k.run(t, "", k.kubectl, "get", "pods", "-n", env.namespace, "-l", selector(m[1]), "-o", "name"))
		return pods == "", pods
	})
}
