package kubernetes

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// testEnv is what the cluster tests share: the cluster `make k8s-up` started (its
// mark names its kubeconfig), the helper image moved onto its node, and the test
// namespace, removed at the end.
type testEnv struct {
	kubeconfig string
	cs         kubernetes.Interface
	image      string
	namespace  string
	session    string
	stateDir   string
	skip       string
}

var env testEnv

// clusterRoot is where scripts/k8s/up.sh keeps the cluster; its file "up" is the mark.
func clusterRoot() string {
	if d := os.Getenv("WICK_K8S_ROOT"); d != "" {
		return d
	}
	return "/tmp/wick-k8s"
}

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	defer func() {
		if built.dir != "" {
			os.RemoveAll(built.dir)
		}
	}()
	mark := filepath.Join(clusterRoot(), "up")
	b, err := os.ReadFile(mark)
	if err != nil {
		if testkit.InCI() {
			fmt.Fprintf(os.Stderr, "engine/kubernetes: CI=true but no test cluster is up (%v): make k8s-up\n", err)
			return 1
		}
		env.skip = fmt.Sprintf("no test cluster (%s is missing): make k8s-up starts one; these tests run only against it (and must in CI)", mark)
		return m.Run()
	}
	env.kubeconfig = strings.TrimSpace(string(b))
	// Only the test cluster, never whatever kubeconfig is around.
	os.Setenv("KUBECONFIG", env.kubeconfig)
	suffix := spec.RandomID()[:8]
	env.session = "wicktest-" + suffix
	env.namespace = "wick-test-" + suffix
	dir, err := os.MkdirTemp("", "wick-k8s-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	env.stateDir = dir
	rc, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	if err == nil {
		env.cs, err = kubernetes.NewForConfig(rc)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "engine/kubernetes: the test cluster's kubeconfig %s: %v\n", env.kubeconfig, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(3*time.Minute))
	defer cancel()
	if _, err := env.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: env.namespace}}, metav1.CreateOptions{}); err != nil {
		fmt.Fprintf(os.Stderr, "engine/kubernetes: creating the test namespace: %v\n", err)
		return 1
	}
	defer func() {
		dctx, dcancel := context.WithTimeout(context.Background(), time.Minute)
		defer dcancel()
		// A test that failed before its delete leaves pods holding wick's finalizer,
		// which nobody keeps now: the namespace would never go.
		if pl, err := env.cs.CoreV1().Pods(env.namespace).List(dctx, metav1.ListOptions{}); err == nil {
			for _, p := range pl.Items {
				if i := slices.Index(p.Finalizers, FinalizerLogs); i >= 0 {
					patch := fmt.Sprintf(`[{"op":"remove","path":"/metadata/finalizers/%d"}]`, i)
					_, _ = env.cs.CoreV1().Pods(env.namespace).Patch(dctx, p.Name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
				}
			}
		}
		_ = env.cs.CoreV1().Namespaces().Delete(dctx, env.namespace, metav1.DeleteOptions{})
	}()
	env.image = "wick-k8s-test-helper:" + suffix
	if err := helperImage(ctx, dir, env.image); err != nil {
		fmt.Fprintf(os.Stderr, "engine/kubernetes: the test image: %v\n", err)
		return 1
	}
	defer func() {
		// Off the node again: each run's image has a tag of its own.
		rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
		defer rcancel()
		rm := exec.CommandContext(rctx, "ctr", "--address", filepath.Join(clusterRoot(), "containerd", "containerd.sock"), "-n", "k8s.io", "images", "rm", "docker.io/library/"+env.image)
		rm.WaitDelay = 5 * time.Second
		if out, err := rm.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "engine/kubernetes: removing the test image from the node: %v: %s\n", err, out)
		}
	}()
	return m.Run()
}

// helperImage builds testdata/docker/helper statically, imports it into the Docker
// Engine as a one-binary image with a link per helper command (/bin/echo, /bin/exit,
// ...), moves it onto the cluster's node (scripts/k8s/load.sh) and removes it from
// the Engine.
func helperImage(ctx context.Context, dir, ref string) error {
	bin := filepath.Join(dir, "helper")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "github.com/wick-dev/wick/testdata/docker/helper")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	body, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	for _, d := range []string{"bin/", "tmp/", "etc/", "dev/", "proc/", "sys/", "data/"} {
		if err := tw.WriteHeader(&tar.Header{Name: d, Mode: 0o1777, Typeflag: tar.TypeDir, ModTime: now}); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: "bin/helper", Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg, ModTime: now}); err != nil {
		return err
	}
	if _, err := tw.Write(body); err != nil {
		return err
	}
	for _, l := range []string{"true", "false", "exit", "echo", "env", "serve", "dial", "cat", "loop", "sleep", "lines", "failtimes", "stubborn", "ishost", "steps", "raise"} {
		if err := tw.WriteHeader(&tar.Header{Name: "bin/" + l, Linkname: "helper", Typeflag: tar.TypeSymlink, Mode: 0o777, ModTime: now}); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	imp := exec.CommandContext(ctx, "docker", "import", "--change", "ENV PATH=/bin", "-", ref)
	imp.Stdin = &buf
	imp.WaitDelay = 5 * time.Second
	if out, err := imp.CombinedOutput(); err != nil {
		return fmt.Errorf("docker import: %v: %s", err, out)
	}
	defer exec.Command("docker", "rmi", ref).Run() //nolint:errcheck // best effort: the node has it
	load := exec.CommandContext(ctx, "bash", "../../scripts/k8s/load.sh", ref)
	load.WaitDelay = 5 * time.Second
	if out, err := load.CombinedOutput(); err != nil {
		return fmt.Errorf("k8s-load: %v: %s", err, out)
	}
	return nil
}

// needCluster skips a test when no test cluster is up outside CI.
func needCluster(t testing.TB) {
	t.Helper()
	if env.skip != "" {
		t.Skip(env.skip)
	}
}

// newScheduler makes a scheduler of the tests' session and state directory that makes
// apps of Jobs, as on a cluster without JobSet's CRD, whether or not the test cluster
// has it (jobset_test.go tests the JobSet path).
func newScheduler(t testing.TB) *Scheduler {
	t.Helper()
	s, err := New(sched.Config{Session: env.session, StateDir: env.stateDir})
	if err != nil {
		t.Fatal(err)
	}
	s.(*Scheduler).noJobSet = true
	return s.(*Scheduler)
}

// launch plans and schedules app in the test namespace, deleting it at the end.
func launch(t *testing.T, s *Scheduler, app *spec.AppDef, cfg spec.Cfg) string {
	t.Helper()
	if cfg == nil {
		cfg = spec.Cfg{}
	}
	cfg[OptNamespace] = env.namespace
	if _, ok := cfg[OptImagePullPolicy]; !ok {
		cfg[OptImagePullPolicy] = "Never"
	}
	sub := sched.Submission{AppID: spec.MakeAppID(app.Name), Session: env.session, App: app, Cfg: cfg}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	req, err := s.DryRun(ctx, sub)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	info := &sched.DryRunInfo{Scheduler: Name, Submission: sub, Request: req}
	if err := s.Schedule(ctx, info, nil); err != nil {
		t.Fatalf("schedule: %v", err)
	}
	t.Cleanup(func() {
		dctx, dcancel := context.WithTimeout(context.Background(), time.Minute)
		defer dcancel()
		_ = s.Delete(dctx, sub.AppID, true)
	})
	return sub.AppID
}

// waitState waits until the app is in a state ok accepts and returns its status.
func waitState(t *testing.T, s *Scheduler, id string, d time.Duration, ok func(spec.AppState) bool) spec.AppStatus {
	t.Helper()
	var st spec.AppStatus
	testkit.Wait(t, d, "app "+id+" state", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		desc, err := s.Describe(ctx, id)
		if err != nil {
			return false, err.Error()
		}
		st = desc.Status
		return ok(st.State), fmt.Sprintf("%s %s", st.State, st.Msg)
	})
	return st
}

func terminal(s spec.AppState) bool { return s.Terminal() }

// readLog reads a replica's whole log (following it to its end).
func readLog(t *testing.T, s *Scheduler, id, role string, k int, opts sched.LogOptions) []sched.Line {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(2*time.Minute))
	defer cancel()
	it, err := s.Logs(ctx, id, role, k, opts)
	if err != nil {
		t.Fatalf("logs of %s/%s/%d: %v", id, role, k, err)
	}
	defer it.Close()
	var lines []sched.Line
	for {
		l, err := it.Next(ctx)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("logs of %s/%s/%d: %v", id, role, k, err)
			}
			return lines
		}
		lines = append(lines, l)
	}
}

func texts(lines []sched.Line) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.Text
	}
	return out
}
