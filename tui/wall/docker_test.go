package wall_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/docker"
	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
	"github.com/wick-dev/wick/tui"
)

// The wall over local_docker: the same wall, on containers of an image the test
// builds from testdata/docker/helper (no image is pulled), launched through a real
// runner with the builtin schedulers, read from the Docker Engine.

// helperImage imports a one-binary image of testdata/docker/helper (/helper) and
// removes it when the test ends. Without a Docker Engine it skips, or fails under
// CI=true.
func helperImage(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs containers: skipped with -short")
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but the Docker Engine is unreachable (docker info: %v)", err)
		}
		t.Skipf("no Docker Engine (docker info: %v): the wall's docker tests run when one answers, and must in CI (CI=true)", err)
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(dir, "helper"), "../../testdata/docker/helper")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the helper: %v\n%s", err, out)
	}
	ref := "wick-wall-test:" + spec.RandomID()
	imp := exec.Command("sh", "-c", "tar -C "+dir+" -c helper | docker import - "+ref)
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("docker import: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("docker", "rmi", "-f", ref).CombinedOutput(); err != nil {
			t.Errorf("docker rmi %s: %v\n%s", ref, err, out)
		}
	})
	return ref
}

// newDockerEnv is a runner over wick's builtin schedulers, in a session and on a
// network of the test's own, with a private state directory.
func newDockerEnv(t *testing.T) (*env, spec.Cfg) {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	home := t.TempDir()
	suffix := spec.RandomID()[:8]
	r := runner.New(runner.Builtin(), sched.Config{Session: "wallt" + suffix, StateDir: home, WorkDir: home, Self: []string{wickBin}})
	t.Cleanup(func() { _ = r.Close() })
	// A network of the test's own: wick creates it, and removes it with the last app
	// on it (Delete).
	return &env{t: t, home: home, r: r}, spec.Cfg{docker.OptNetwork: "wick-wall-" + suffix}
}

// runDocker launches app on local_docker and deletes it (with its containers, by
// force) when the test ends.
func (e *env) runDocker(app *spec.AppDef, cfg spec.Cfg) spec.Handle {
	e.t.Helper()
	h, err := e.r.Run(context.Background(), app, docker.Name, cfg, "", nil)
	if err != nil {
		e.t.Fatalf("run on %s: %v", docker.Name, err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
		defer cancel()
		if err := e.r.Delete(ctx, h, true); err != nil && !errors.Is(err, sched.ErrNotFound) {
			e.t.Errorf("delete %s: %v", h, err)
		}
	})
	return h
}

// helperApp is an app of one role "worker" of n replicas of the helper image, each
// running `helper ARGS...` (${replica_id} substituted in args).
func helperApp(name, image string, n int, args ...string) *spec.AppDef {
	r := spec.NewRole("worker", image, "/helper", args...)
	r.NumReplicas = n
	return &spec.AppDef{Name: name, Roles: []spec.Role{r}}
}

func TestWallOverDocker(t *testing.T) {
	t.Parallel()
	img := helperImage(t)

	t.Run("two replicas live to their end", func(t *testing.T) {
		e, cfg := newDockerEnv(t)
		// Replica k prints 30+k pairs of lines, "out i" on stdout and "err i" on
		// stderr, one pair every 150 ms: worker/0 has out 0..29, worker/1 out 0..30.
		h := e.runDocker(helperApp("dlines", img, 2, "lines", "3${replica_id}", "150ms"), cfg)
		d := e.open(h, 160, 48, nil)
		// Live: both panes titled with their state, lines coming in, following.
		d.waitFor("▸ worker/0 RUNNING", "  worker/1 RUNNING", "following", "out 3", "err 3")
		d.contains("dlines-", "2 replicas")

		// Search across both panes while they run; the counts are checked at the end.
		d.keys("/")
		d.typ("out 3")
		// Enter jumps to the latest match, pausing its pane; G follows again.
		d.keys("enter", "G")

		// The end: every line read, the summary, each pane's state and exit code.
		d.waitFor("end of logs", "Summary", "out 29", "out 30", "err 30")
		d.waitFor("worker/0 SUCCEEDED exit 0", "worker/1 SUCCEEDED exit 0", "last stderr: err 29", "last stderr: err 30")
		// "out 3" is in out 3 of both, and in out 30 of worker/1 only.
		d.contains("/out 3 3 matches", "worker/0 SUCCEEDED exit 0 1 match", "worker/1 SUCCEEDED exit 0 2 matches")
		d.keys("i")
		d.lacks("Summary")
		// stderr lines are marked in the gutter.
		d.contains("▌err 29", "▌err 30")

		// Regex, case: "ERR [12]0$" matches err 10 and err 20 in both panes.
		d.keys("/", "ctrl+u")
		d.typ(`ERR [12]0$`)
		d.keys("alt+r")
		d.waitFor("4 matches", "[regex]")
		d.keys("alt+c")
		d.waitFor("0 matches", "[regex, case]")
		// Esc in the search field clears the search.
		d.keys("esc")
		d.lacks("matches")

		// Every line of each pane, in order within each stream, as the user saves it:
		// the focused pane, then the other one.
		for range 2 {
			f := focused.FindStringSubmatch(d.screen())
			if f == nil {
				t.Fatalf("no focused pane:\n%s", d.screen())
			}
			k := int(f[1][len(f[1])-1] - '0')
			n := 30 + k
			out := filepath.Join(t.TempDir(), fmt.Sprintf("w%d.log", k))
			d.keys("S", "ctrl+u")
			d.typ(out)
			d.keys("enter")
			d.settle()
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("saving worker/%d: %v (notices %q)", k, err, d.notices)
			}
			var outs, errs []string
			for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
				switch {
				case strings.HasPrefix(l, "out "):
					outs = append(outs, l)
				case strings.HasPrefix(l, "err "):
					errs = append(errs, l)
				default:
					t.Fatalf("worker/%d: unexpected line %q", k, l)
				}
			}
			if len(outs) != n || len(errs) != n {
				t.Fatalf("worker/%d: saved %d stdout and %d stderr lines, want %d each:\n%s", k, len(outs), len(errs), n, data)
			}
			for i := range n {
				if outs[i] != fmt.Sprintf("out %d", i) || errs[i] != fmt.Sprintf("err %d", i) {
					t.Fatalf("worker/%d: line %d is %q / %q", k, i, outs[i], errs[i])
				}
			}
			d.keys("tab")
		}

		// The merged view of both replicas, with their prefixes.
		d.keys("m")
		d.contains("merged", "worker/0 out 29", "worker/1 out 30")
		d.keys("esc", "z")
		f := focused.FindStringSubmatch(d.screen())
		if f == nil {
			t.Fatalf("no focused pane:\n%s", d.screen())
		}
		other := map[string]string{"worker/0": "worker/1", "worker/1": "worker/0"}[f[1]]
		d.contains("zoomed on "+f[1], "out 29")
		d.lacks(other)
	})

	t.Run("lines past the ring are read back from the Engine", func(t *testing.T) {
		e, cfg := newDockerEnv(t)
		h := e.runDocker(helperApp("dflood", img, 2, "flood", "10000"), cfg)
		d := e.open(h, 120, 30, func(o *tui.Options) { o.RingLines = 4096 })
		d.waitFor("end of logs", "line 9999 of the flood", "worker/0 SUCCEEDED exit 0", "worker/1 SUCCEEDED exit 0")
		d.contains("4.1k older lines on disk")
		d.keys("i", "z")
		top := regexp.MustCompile(`(?m)^ line 0 of the flood`)
		// One g reads every line before the ring back (asynchronously).
		d.keys("g")
		d.waitForRe(top)
		if title := regexp.MustCompile(`▸ worker/0 [^\n]*older lines on disk`); title.MatchString(d.screen()) {
			t.Fatalf("the pane still has lines on disk:\n%s", d.screen())
		}
		d.keys("G")
		d.contains("line 9999 of the flood", "4.1k older lines on disk")
	})

	t.Run("a progress bar is live from the Engine", func(t *testing.T) {
		e, cfg := newDockerEnv(t)
		// 20000 bytes of \r redraws, then the line ends with "done" once /go exists
		// in the container (the test copies it in). The Engine stores a line without a
		// newline in pieces of 16 KiB: the first ends with "\rste" (16384 bytes of
		// 12-byte redraws), which is the bar as it shows.
		h := e.runDocker(helperApp("dbar", img, 1, "bar", "20000", "/go"), cfg)
		d := e.open(h, 120, 30, nil)
		d.waitFor("⋯ste", "RUNNING")
		desc, err := e.r.Describe(context.Background(), h)
		if err != nil {
			t.Fatal(err)
		}
		id := desc.Status.Roles[0].Replicas[0].ContainerID
		// The file goes in by `docker cp`, which runs nothing in the container: a
		// `docker exec ... write /go` races the bar, which ends the container once it
		// sees /go, and the Engine kills what still runs in it (the exec's process,
		// between its write and its exit: exit status 137 at load 25, 1 in 30 here).
		goFile := filepath.Join(t.TempDir(), "go")
		if err := os.WriteFile(goFile, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("docker", "cp", goFile, id+":/go").CombinedOutput(); err != nil {
			t.Fatalf("docker cp: %v\n%s", err, out)
		}
		d.waitFor("end of logs", " done")
		d.lacks("⋯")
	})
}
