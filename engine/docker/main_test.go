package docker

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
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// testEnv is what the Engine tests share: a client, the helper image they built, and
// the names of everything they create, so that it can all be removed at the end.
type testEnv struct {
	cli      *client.Client
	image    string // the helper image: /bin/helper, /bin/true, /bin/false; WORKDIR /app
	session  string // every test app's session
	network  string // the network the tests' apps share
	repo     string // repository of the tests' workspace images
	stateDir string
	skip     string // why Engine tests skip, when they do
}

// env is set up once by TestMain.
var env testEnv

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	suffix := spec.RandomID()[:8]
	env.session = "wicktest-" + suffix
	env.network = "wick-test-" + suffix
	env.repo = "wick-test-ws-" + suffix
	dir, err := os.MkdirTemp("", "wick-docker-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	env.stateDir = dir
	// For copy_env: one variable to copy, one its pattern must not match.
	os.Setenv("WICK_DOCKER_TEST_COPY", "copied")
	os.Setenv("WICK_DOCKER_TEST_OTHER", "not copied")

	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(2*time.Minute))
	defer cancel()
	// The tests' own client reaches the Engine wick does (DOCKER_HOST, a context).
	ep, err := resolveEndpoint(os.Getenv)
	var cli *client.Client
	if err == nil {
		cli, _, err = newClient(ep)
	}
	if err == nil {
		pctx, pcancel := context.WithTimeout(ctx, testkit.Scale(5*time.Second))
		_, err = cli.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true})
		pcancel()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			fmt.Fprintf(os.Stderr, "engine/docker: CI=true but the Docker Engine is unreachable: %v\n", err)
			return 1
		}
		env.skip = fmt.Sprintf("Docker Engine unreachable (%v); these tests run when it is (and must in CI)", err)
		return m.Run()
	}
	env.cli = cli
	defer cli.Close()
	image, err := buildHelperImage(ctx, cli, dir, "wick-test-helper:"+suffix)
	if err != nil {
		fmt.Fprintf(os.Stderr, "engine/docker: building the test image: %v\n", err)
		return 1
	}
	env.image = image
	defer cleanupEngine(cli)
	if _, err := cli.NetworkCreate(ctx, env.network, client.NetworkCreateOptions{Driver: "bridge"}); err != nil {
		fmt.Fprintf(os.Stderr, "engine/docker: creating the test network: %v\n", err)
		return 1
	}
	return m.Run()
}

// needEngine skips a test when no Engine is reachable outside CI.
func needEngine(t testing.TB) {
	t.Helper()
	if env.skip != "" {
		t.Skip(env.skip)
	}
}

// buildHelperImage compiles testdata/docker/helper statically and imports it as a
// one-binary image (a docker import of a tarball: no registry, no base image).
func buildHelperImage(ctx context.Context, cli *client.Client, dir, ref string) (string, error) {
	bin := filepath.Join(dir, "helper")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "github.com/wick-dev/wick/testdata/docker/helper")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	body, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	for _, d := range []struct {
		name string
		mode int64
	}{{"bin/", 0o755}, {"tmp/", 0o1777}, {"app/", 0o755}, {"etc/", 0o755}, {"dev/", 0o755}, {"proc/", 0o755}, {"sys/", 0o755}} {
		if err := tw.WriteHeader(&tar.Header{Name: d.name, Mode: d.mode, Typeflag: tar.TypeDir, ModTime: now}); err != nil {
			return "", err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: "bin/helper", Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg, ModTime: now}); err != nil {
		return "", err
	}
	if _, err := tw.Write(body); err != nil {
		return "", err
	}
	for _, l := range []string{"true", "false"} {
		if err := tw.WriteHeader(&tar.Header{Name: "bin/" + l, Linkname: "helper", Typeflag: tar.TypeSymlink, Mode: 0o777, ModTime: now}); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	return importImage(ctx, cli, &buf, ref)
}

// importImage imports a tarball as the image ref (WORKDIR /app, PATH=/bin).
func importImage(ctx context.Context, cli *client.Client, tarball io.Reader, ref string) (string, error) {
	res, err := cli.ImageImport(ctx, client.ImageImportSource{Source: tarball, SourceName: "-"}, ref,
		client.ImageImportOptions{Changes: []string{"WORKDIR /app", "ENV PATH=/bin"}})
	if err != nil {
		return "", err
	}
	out, err := io.ReadAll(res)
	res.Close()
	if err != nil {
		return "", err
	}
	if bytes.Contains(out, []byte(`"error"`)) {
		return "", errors.New(string(out))
	}
	return ref, nil
}

// cleanupEngine removes every container, network, volume and image the tests made.
func cleanupEngine(cli *client.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	if res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", LabelSession+"="+env.session)}); err == nil {
		for _, c := range res.Items {
			_, _ = cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		}
	}
	if res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", "wick-test="+env.session)}); err == nil {
		for _, c := range res.Items {
			_, _ = cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		}
	}
	if res, err := cli.NetworkList(ctx, client.NetworkListOptions{}); err == nil {
		for _, n := range res.Items {
			if strings.HasPrefix(n.Name, env.network) {
				_, _ = cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{})
			}
		}
	}
	if res, err := cli.VolumeList(ctx, client.VolumeListOptions{}); err == nil {
		for _, v := range res.Items {
			if strings.HasPrefix(v.Name, env.network) {
				_, _ = cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true})
			}
		}
	}
	if res, err := cli.ImageList(ctx, client.ImageListOptions{Filters: client.Filters{}.Add("reference", env.repo)}); err == nil {
		for _, img := range res.Items {
			_, _ = cli.ImageRemove(ctx, img.ID, client.ImageRemoveOptions{Force: true, PruneChildren: true})
		}
	}
	for _, ref := range []string{env.image + "-sh", env.image} { // -sh: see shellImage
		_, _ = cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	}
}

// newScheduler makes a scheduler in the tests' session and state directory.
func newScheduler(t testing.TB) *Scheduler {
	t.Helper()
	s, err := New(sched.Config{Session: env.session, StateDir: env.stateDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*Scheduler)
}

// testCfg resolves run options for a test app, on the tests' network by default.
func testCfg(t testing.TB, s *Scheduler, cfg spec.Cfg) spec.Cfg {
	t.Helper()
	c := spec.Cfg{OptNetwork: env.network, OptImageRepo: env.repo}
	for k, v := range cfg {
		c[k] = v
	}
	out, err := s.RunOpts().Resolve(c)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// plan dry-runs an app with a fresh id.
func plan(t testing.TB, s *Scheduler, app *spec.AppDef, cfg spec.Cfg, workspace string) *sched.DryRunInfo {
	t.Helper()
	sub := sched.Submission{AppID: spec.MakeAppID(app.Name), Session: env.session, App: app, Cfg: testCfg(t, s, cfg), Workspace: workspace}
	req, err := s.DryRun(context.Background(), sub)
	if err != nil {
		t.Fatalf("DryRun: %v", err)
	}
	return &sched.DryRunInfo{Scheduler: Name, Submission: sub, Request: req}
}

// launch plans and schedules an app, and deletes it when the test ends.
func launch(t testing.TB, s *Scheduler, app *spec.AppDef, cfg spec.Cfg) string {
	t.Helper()
	info := plan(t, s, app, cfg, "")
	if err := s.Schedule(context.Background(), info, nil); err != nil {
		t.Fatalf("Schedule: %v", err)
	}
	deleteAtEnd(t, s, info.AppID)
	return info.AppID
}

func deleteAtEnd(t testing.TB, s *Scheduler, appID string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(30*time.Second))
		defer cancel()
		if err := s.Delete(ctx, appID, true); err != nil && !errors.Is(err, sched.ErrNotFound) {
			t.Errorf("Delete %s: %v", appID, err)
		}
	})
}

// role is a role of the helper image: helper COMMAND ARGS...
func role(name string, replicas int, args ...string) spec.Role {
	r := spec.NewRole(name, env.image, "/bin/helper", args...)
	r.NumReplicas = replicas
	return r
}

// wait polls Describe until cond holds.
func wait(t testing.TB, s *Scheduler, appID string, timeout time.Duration, cond func(*spec.AppStatus) bool) *sched.Description {
	t.Helper()
	deadline := time.Now().Add(testkit.Scale(timeout))
	for {
		d, err := s.Describe(context.Background(), appID)
		if err != nil {
			t.Fatalf("Describe %s: %v", appID, err)
		}
		if cond(&d.Status) {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("app %s: condition not met after %v; status: %+v", appID, timeout, d.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitTerminal(t testing.TB, s *Scheduler, appID string) *sched.Description {
	t.Helper()
	return wait(t, s, appID, 60*time.Second, func(st *spec.AppStatus) bool { return st.State.Terminal() })
}

// readLogs reads every line of a replica.
func readLogs(t testing.TB, s *Scheduler, appID, role string, k int, opts sched.LogOptions) []sched.Line {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(60*time.Second))
	defer cancel()
	it, err := s.Logs(ctx, appID, role, k, opts)
	if err != nil {
		t.Fatalf("Logs: %v", err)
	}
	defer it.Close()
	var lines []sched.Line
	for {
		l, err := it.Next(ctx)
		if err == io.EOF {
			return lines
		}
		if err != nil {
			t.Fatalf("Logs %s/%d: %v (after %d lines)", role, k, err, len(lines))
		}
		lines = append(lines, l)
	}
}

// containerConfig is the Engine's container config, for tests that make containers
// of their own.
type containerConfig = container.Config

func mustRegexp(t testing.TB, expr string) *regexp.Regexp {
	t.Helper()
	re, err := regexp.Compile(expr)
	if err != nil {
		t.Fatal(err)
	}
	return re
}

func texts(lines []sched.Line) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.Text
	}
	return out
}

// engineOf is the scheduler's own client of the Engine.
func engineOf(t *testing.T, s *Scheduler) *client.Client {
	t.Helper()
	cli, err := s.engine(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return cli
}
