package remote_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/kubernetes/remote"
	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// serveVerb makes this test binary a helper: it serves the local_cwd scheduler of the
// state directory it is given over its stdin and stdout, as wick-kubernetes serves the
// kubernetes one. The protocol is the same whatever the scheduler; local_cwd runs real
// processes with no cluster.
const serveVerb = "serve-local"

func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == local.SuperviseVerb {
		if err := local.Supervise(context.Background(), os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "wick:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) > 2 && os.Args[1] == serveVerb {
		os.Exit(serveLocal(os.Args[2]))
	}
	if len(os.Args) > 2 && os.Args[1] == "serve" { // remote.HelperArgs (caps_test.go)
		os.Exit(serveArgs(os.Args[2:]))
	}
	if len(os.Args) > 2 && os.Args[1] == "exec" { // remote.Exec's command (caps_test.go)
		os.Exit(remote.ServeExec(context.Background(), local.NewCwd, os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

func serveLocal(stateDir string) int {
	srv := remote.NewServer(os.Stdout)
	s, err := local.NewCwd(sched.Config{Session: "t", StateDir: stateDir, WorkDir: stateDir, Self: []string{os.Args[0]}, Warn: srv.Warn})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := srv.Serve(context.Background(), s, os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// remoteRunner is a Runner whose local_cwd runs in a helper process (this binary).
func remoteRunner(t *testing.T) (*runner.Runner, string) {
	t.Helper()
	dir := t.TempDir()
	probe, err := local.NewCwd(sched.Config{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	opts := probe.RunOpts()
	reg := &sched.Registry{}
	reg.Register(local.NameCwd, func(cfg sched.Config) (sched.Scheduler, error) {
		return remote.NewClient(local.NameCwd, opts, cfg, func() ([]string, error) {
			return []string{os.Args[0], serveVerb, dir}, nil
		}, nil), nil
	})
	r := runner.New(reg, sched.Config{Session: "t", StateDir: dir, WorkDir: dir, Self: []string{os.Args[0]}})
	t.Cleanup(func() { _ = r.Close() })
	return r, dir
}

func shApp(name, script string, replicas int) *spec.AppDef {
	return &spec.AppDef{Name: name, Roles: []spec.Role{{Name: "r", Image: ".", Entrypoint: "sh", Args: []string{"-c", script}, NumReplicas: replicas}}}
}

func readAll(ctx context.Context, t *testing.T, it sched.LogIterator) []string {
	t.Helper()
	defer it.Close()
	var out []string
	for {
		l, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("log: %v (after %q)", err, out)
		}
		out = append(out, l.Text)
	}
}

// An app launched, waited for, read, described, listed and deleted through the helper
// is what the scheduler itself gives: its state, exit code, lines and definition; a
// launch's steps reach the caller, an unknown app is ErrNotFound.
func TestAppThroughTheHelper(t *testing.T) {
	r, _ := remoteRunner(t)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(60*time.Second))
	defer cancel()
	var mu sync.Mutex
	var steps []string
	h, err := r.Run(ctx, shApp("echo", `echo "hello $0"; echo oops >&2; exit 3`, 2), local.NameCwd, nil, "", func(s string) {
		mu.Lock()
		steps = append(steps, s)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Wait(ctx, h, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != spec.Failed {
		t.Fatalf("state %s, want FAILED: %+v", st.State, st)
	}
	// local_cwd fails fast: the first replica to exit 3 fails the app and the other is
	// stopped (CANCELLED) unless it had exited 3 too; which one is first is the
	// machine's business.
	failed := -1
	for _, rep := range st.Roles[0].Replicas {
		switch {
		case rep.State == spec.Failed && rep.ExitCode != nil && *rep.ExitCode == 3:
			if failed < 0 {
				failed = rep.ID
			}
		case rep.State != spec.Cancelled:
			t.Errorf("replica %d: %s, want FAILED with exit code 3, or CANCELLED by the other's failure", rep.ID, rep.State)
		}
	}
	if failed < 0 {
		t.Fatalf("no replica FAILED with exit code 3: %+v", st.Roles[0].Replicas)
	}
	it, err := r.LogLines(ctx, h, "r", failed, sched.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lines := readAll(ctx, t, it)
	slices.Sort(lines)
	if want := []string{"hello sh", "oops"}; !slices.Equal(lines, want) {
		t.Errorf("replica %d's lines %q, want %q", failed, lines, want)
	}
	d, err := r.Describe(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if d.App == nil || len(d.App.Roles) != 1 || d.App.Roles[0].NumReplicas != 2 {
		t.Errorf("described app %+v, want the one launched (1 role of 2 replicas)", d.App)
	}
	apps, errs := r.List(ctx, local.NameCwd)
	if len(errs) > 0 || len(apps) != 1 || apps[0].Handle != h.String() {
		t.Errorf("list: %+v %v, want %s alone", apps, errs, h)
	}
	if err := r.Delete(ctx, h, false); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Describe(ctx, h); !errors.Is(err, sched.ErrNotFound) {
		t.Errorf("describe of a deleted app: %v, want ErrNotFound", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(steps) == 0 {
		t.Error("no step of the launch reached the caller")
	}
}

// A follow of a running app's log gets its lines as they come and ends when the app,
// cancelled through the helper, ends; Ready says when a line waits.
func TestFollowAndCancelThroughTheHelper(t *testing.T) {
	r, _ := remoteRunner(t)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(60*time.Second))
	defer cancel()
	h, err := r.Run(ctx, shApp("sleeper", `echo one; echo two; exec sleep 600`, 1), local.NameCwd, nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.LogLines(ctx, h, "r", 0, sched.LogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	l, err := it.Next(ctx)
	if err != nil || l.Text != "one" {
		t.Fatalf("first line %q, %v; want one", l.Text, err)
	}
	rd, ok := it.(sched.Readier)
	if !ok {
		t.Fatal("the helper's log iterator has no Ready")
	}
	testkit.Wait(t, 10*time.Second, "the second line ready", func() (bool, string) { return rd.Ready(), "not ready" })
	if l, err := it.Next(ctx); err != nil || l.Text != "two" {
		t.Fatalf("second line %q, %v; want two", l.Text, err)
	}
	if err := r.Cancel(ctx, h); err != nil {
		t.Fatal(err)
	}
	if l, err := it.Next(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("after the cancel: %q, %v; want the end of the lines", l.Text, err)
	}
	st, err := r.Wait(ctx, h, 20*time.Millisecond)
	if err != nil || st.State != spec.Cancelled {
		t.Fatalf("state %v, %v; want CANCELLED", st, err)
	}
}

// A helper that ends (or is not one) fails the call with what it said, and the next
// call starts a new one.
func TestHelperThatEndsFailsTheCall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(30*time.Second))
	defer cancel()
	c := remote.NewClient("x", nil, sched.Config{}, func() ([]string, error) {
		return []string{"sh", "-c", "echo no cluster here >&2; exit 7"}, nil
	}, nil)
	defer c.Close()
	for range 2 {
		_, err := c.Describe(ctx, "app")
		if err == nil || !strings.Contains(err.Error(), "exit status 7") || !strings.Contains(err.Error(), "no cluster here") {
			t.Errorf("describe: %v, want the helper's exit and its message", err)
		}
	}
}

// Listing with no app recorded asks no helper: `wick list` of a machine without
// Kubernetes, or without the helper, starts nothing and fails nothing. A call that
// needs the helper, when there is none, says where it was looked for and how to get it.
func TestNoHelperNeededToListNothing(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	s, err := remote.New(sched.Config{StateDir: dir, Self: []string{filepath.Join(dir, "wick")}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(10*time.Second))
	defer cancel()
	if apps, err := s.List(ctx); err != nil || len(apps) != 0 {
		t.Errorf("list: %v, %v; want nothing", apps, err)
	}
	_, err = s.Describe(ctx, "app")
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, remote.Helper)) || !strings.Contains(err.Error(), "make build") {
		t.Errorf("describe without the helper: %v, want where it was looked for and make build", err)
	}
	if got := s.RunOpts().Names(); !slices.Contains(got, remote.OptNamespace) {
		t.Errorf("run options %v, want namespace among them without the helper", got)
	}
}

// The real helper, against a server that does not answer: the error is the
// scheduler's own (its address) and still an ErrUnreachable (wick exits 4 for it).
func TestKubernetesHelperUnreachable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds wick-kubernetes")
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, remote.Helper), "github.com/wick-dev/wick/cmd/wick-kubernetes")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: ns}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kc)
	s, err := remote.New(sched.Config{StateDir: dir, Self: []string{filepath.Join(dir, "wick")}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(60*time.Second))
	defer cancel()
	_, err = s.Describe(ctx, "app")
	if !errors.Is(err, sched.ErrUnreachable) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("describe: %v, want ErrUnreachable naming 127.0.0.1:1", err)
	}
}
