package tui_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/docker"
	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// scopeImage imports the docker test helper as an image; without an Engine the test is
// skipped, and fails under CI=true.
func scopeImage(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs containers: skipped with -short")
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but the Docker Engine is unreachable (docker info: %v)", err)
		}
		t.Skipf("no Docker Engine (docker info: %v): the scope test runs when one answers, and must in CI (CI=true)", err)
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "helper"), "../testdata/docker/helper")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the helper: %v\n%s", err, out)
	}
	ref := fmt.Sprintf("wick-tui-scope:%d", time.Now().UnixNano())
	if out, err := exec.Command("sh", "-c", "tar -C "+dir+" -c helper | docker import - "+ref).CombinedOutput(); err != nil {
		t.Fatalf("docker import: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", ref).Run() })
	return ref
}

// TestListShowsThisHomesDockerAppsByDefault: the Engine is shared, and the app list
// showed every home's local_docker apps. It shows this WICK_HOME's; A (and
// `wick list --all`) lists the others too.
func TestListShowsThisHomesDockerAppsByDefault(t *testing.T) {
	img := scopeImage(t)
	reg := &sched.Registry{}
	local.Register(reg)
	reg.Register(docker.Name, docker.New)
	e := newEnvWith(t, envConfig{reg: reg})
	other := runner.New(reg, sched.Config{Session: spec.DefaultSession, StateDir: t.TempDir(), WorkDir: t.TempDir()})
	t.Cleanup(func() { _ = other.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(2*time.Minute))
	defer cancel()
	app := func(name string) *spec.AppDef {
		r := spec.NewRole("worker", img, "/helper", "echo", name)
		return &spec.AppDef{Name: name, Roles: []spec.Role{r}}
	}
	wait := func(r *runner.Runner, h spec.Handle) {
		t.Helper()
		if _, err := r.Wait(ctx, h, 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	theirs, err := other.Run(ctx, app("theirs"), docker.Name, nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Delete(context.Background(), theirs, true) })
	wait(other, theirs)

	d := newDriver(t, e.opts, 160, 24)
	d.send(tick())
	// Other homes' containers are not even listed (the Engine filters on the home's
	// label): this home has no app yet.
	d.contains("No apps yet")
	d.lacks(theirs.String())

	mine, err := e.r.Run(ctx, app("mine"), docker.Name, nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.r.Delete(context.Background(), mine, true) })
	wait(e.r, mine)
	d.send(tick())
	d.contains(mine.String())
	d.lacks(theirs.String())
	d.keys("A")
	d.contains(mine.String(), theirs.String(), "every WICK_HOME")
	d.keys("A")
	d.lacks(theirs.String())

	list := func(args ...string) string {
		cmd := exec.Command(wickBinary(t), append([]string{"list", "-s", docker.Name}, args...)...)
		cmd.Env = append(os.Environ(), "WICK_HOME="+e.r.StateDir(), "NO_COLOR=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("wick list %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := list(); !strings.Contains(out, mine.AppID) || strings.Contains(out, theirs.AppID) {
		t.Errorf("wick list shows another home's app, or not this one's:\n%s", out)
	}
	if out := list("--all"); !strings.Contains(out, mine.AppID) || !strings.Contains(out, theirs.AppID) {
		t.Errorf("wick list --all lacks an app:\n%s", out)
	}
}
