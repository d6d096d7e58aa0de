package tui_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
	"github.com/wick-dev/wick/tui"
)

// The model tests run the UI over the real engine: a *runner.Runner with the real local
// schedulers, whose apps are real processes under real supervisors (the wick binary
// TestMain built), with their state and logs in real files.

// clockLead is how far the UI's clock is ahead of the moment a test starts. Every app
// a test launches is then between an hour and an hour and 50 seconds old on the
// screen, which the app list prints as "1h00m" on every run: ages of real apps compare
// in golden screens. (Durations of apps that ended are real and are normalized, see
// plain.)
const clockLead = time.Hour + 50*time.Second

// clock is the UI's clock in a test: it stands still unless the test moves it.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// env is the world of one test: a directory, a real runner over it, and the options
// of a UI on that runner.
type env struct {
	t testing.TB
	// root holds the state directory (WICK_HOME, with the apps' logs), the home
	// directory and the working directory the tests run in (local_cwd's replicas run
	// there).
	root  string
	r     *runner.Runner
	opts  tui.Options
	clock *clock
}

// envConfig changes what newEnvWith builds.
type envConfig struct {
	// reg is the runner's schedulers; nil means local_cwd and local_dir.
	reg *sched.Registry
	// self is the command the local schedulers start supervisors with; nil means
	// the wick binary.
	self []string
}

// newEnv is a test's world with the local schedulers, local_cwd preselected. Apps the
// test leaves are deleted when it ends (running ones are cancelled first), and the
// directory removed.
func newEnv(t testing.TB) *env { return newEnvWith(t, envConfig{}) }

func newEnvWith(t testing.TB, c envConfig) *env {
	t.Helper()
	root := newRoot(t)
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	e := setupEnv(t, root, c)
	t.Cleanup(e.deleteApps) // before the runner closes and the directory goes
	return e
}

// newRoot makes a directory whose path has the same length on every run,
// /tmp/wick-tui-<16 hex digits>, so that screens showing paths under it (log_dir's
// default, the logs of an app) wrap and cut them alike; plain replaces the digits.
func newRoot(t testing.TB) string {
	t.Helper()
	for range 100 { // 64 random bits: a second try is already a surprise
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		dir := filepath.Join("/tmp", "wick-tui-"+hex.EncodeToString(b))
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir
		}
		if !errors.Is(err, fs.ErrExist) {
			t.Fatal(err)
		}
	}
	t.Fatal("no fresh /tmp/wick-tui-* directory after 100 tries")
	return ""
}

// setupEnv builds the world of a test in root: directories, environment, working
// directory, runner, clock and UI options.
func setupEnv(t testing.TB, root string, c envConfig) *env {
	t.Helper()
	state, home, work := filepath.Join(root, "state"), filepath.Join(root, "home"), filepath.Join(root, "work")
	for _, d := range []string{state, home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("WICK_HOME", state)
	// local_cwd plans replicas in the process's working directory.
	t.Chdir(work)
	self := c.self
	if self == nil {
		self = []string{wickBinary(t)}
	}
	reg := c.reg
	if reg == nil {
		reg = &sched.Registry{}
		local.Register(reg)
	}
	r := runner.New(reg, sched.Config{Session: spec.DefaultSession, StateDir: state, WorkDir: work, Self: self})
	t.Cleanup(func() { _ = r.Close() })
	clk := &clock{t: time.Now().Add(clockLead)}
	vars := map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config")}
	return &env{
		t:     t,
		root:  root,
		r:     r,
		clock: clk,
		opts: tui.Options{
			Runner:           r,
			Components:       func() ([]*components.Component, error) { return components.Builtins(), nil },
			DefaultScheduler: local.NameCwd,
			Theme:            "dark",
			Getenv:           func(k string) string { return vars[k] },
			Now:              clk.Now,
			TickInterval:     -1,
		},
	}
}

// waitTimeout bounds the waits for apps: an echo ends in milliseconds.
const waitTimeout = 20 * time.Second

// deleteApps deletes every app of the local schedulers (and only those: a Docker
// Engine's containers may be other tests'), cancelling running ones and waiting for
// their supervisors to end, as `wick delete --force` does.
func (e *env) deleteApps() {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(waitTimeout))
	defer cancel()
	for _, name := range []string{local.NameCwd, local.NameDir} {
		apps, _ := e.r.List(ctx, name)
		for _, a := range apps {
			h, err := spec.ParseHandle(a.Handle)
			if err == nil {
				err = e.r.Delete(ctx, h, true)
			}
			if err != nil {
				e.t.Errorf("cleaning up %s: %v", a.Handle, err)
			}
		}
	}
}

// launch runs app on local_cwd and returns its handle once its replicas started.
func (e *env) launch(app *spec.AppDef) string {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(waitTimeout))
	defer cancel()
	h, err := e.r.Run(ctx, app, local.NameCwd, nil, "", nil)
	if err != nil {
		e.t.Fatalf("launch %s: %v", app.Name, err)
	}
	return h.String()
}

func (e *env) handle(h string) spec.Handle {
	e.t.Helper()
	ph, err := spec.ParseHandle(h)
	if err != nil {
		e.t.Fatal(err)
	}
	return ph
}

// wait waits for the app to end and returns its status.
func (e *env) wait(h string) *spec.AppStatus {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(waitTimeout))
	defer cancel()
	st, err := e.r.Wait(ctx, e.handle(h), 10*time.Millisecond)
	if err != nil {
		e.t.Fatalf("wait for %s: %v", h, err)
	}
	return st
}

// cancel cancels the app, as `wick cancel` from another terminal would, and waits
// for it to end.
func (e *env) cancel(h string) {
	e.t.Helper()
	if err := e.r.Cancel(context.Background(), e.handle(h)); err != nil {
		e.t.Fatalf("cancel %s: %v", h, err)
	}
	e.wait(h)
}

// remove deletes the app behind the UI's back, as `wick delete --force` from another
// terminal would.
func (e *env) remove(h string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(waitTimeout))
	defer cancel()
	if err := e.r.Delete(ctx, e.handle(h), true); err != nil {
		e.t.Fatalf("delete %s: %v", h, err)
	}
}

// echoApp is utils.echo's AppDef with the given app (and role) name and message.
func echoApp(name, msg string, replicas int) *spec.AppDef {
	r := spec.NewRole(name, components.DefaultImage, "echo", msg)
	r.NumReplicas = replicas
	return &spec.AppDef{Name: name, Roles: []spec.Role{r}}
}

// shApp runs script with sh -c in every replica, as utils.sh does.
func shApp(name, script string, replicas int) *spec.AppDef {
	r := spec.NewRole(name, components.DefaultImage, "sh", "-c", script)
	r.NumReplicas = replicas
	return &spec.AppDef{Name: name, Roles: []spec.Role{r}}
}

// sleeper is the script of a replica that runs until it is stopped.
const sleeper = "exec sleep 300"

// seeded are the handles of the apps seed launches.
type seeded struct{ eval, echo, train, sh, serve string }

// seed launches apps that end up in every state a local app stays in, oldest first,
// so that the list (newest first) reads:
//
//	serve  RUNNING    2/2
//	sh     FAILED     0/2  exit 3 (sh/0 exits 3; sh/1 is stopped, fail fast)
//	train  RUNNING    4/4
//	echo   SUCCEEDED  0/1  exit 0
//	eval   CANCELLED  0/1  exit 143 (SIGTERM)
func seed(e *env) seeded {
	e.t.Helper()
	var s seeded
	s.eval = e.launch(shApp("eval", sleeper, 1))
	e.cancel(s.eval)
	s.echo = e.launch(echoApp("echo", "hello world", 1))
	e.wait(s.echo)
	s.train = e.launch(shApp("train", sleeper, 4))
	s.sh = e.launch(shApp("sh", `[ "$WICK_REPLICA_ID" = 0 ] && exit 3; `+sleeper, 2))
	e.wait(s.sh)
	s.serve = e.launch(shApp("serve", sleeper, 2))
	return s
}

// fixtures are the roots of the app lists benchmarks share (by number of apps),
// launched once per run and removed by TestMain.
var fixtures = map[int]string{}

func removeFixtures() {
	for _, root := range fixtures {
		_ = os.RemoveAll(root)
	}
}

// manyApps is an env holding n apps that ended (alternately SUCCEEDED and FAILED, two
// replicas each), launched once per test run.
func manyApps(b *testing.B, n int) *env {
	b.Helper()
	if root, ok := fixtures[n]; ok {
		return setupEnv(b, root, envConfig{})
	}
	root := newRoot(b)
	fixtures[n] = root
	e := setupEnv(b, root, envConfig{})
	// Launch in parallel: the order of the apps does not matter here.
	next := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range next {
				name := fmt.Sprintf("job%d", i%37)
				app := echoApp(name, "hi", 2)
				if i%2 == 1 {
					app = shApp(name, "exit 1", 2)
				}
				ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
				h, err := e.r.Run(ctx, app, local.NameCwd, nil, "", nil)
				if err == nil {
					_, err = e.r.Wait(ctx, h, 20*time.Millisecond)
				}
				cancel()
				if err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatalf("launching %d apps: %v", n, err)
	}
	return e
}
