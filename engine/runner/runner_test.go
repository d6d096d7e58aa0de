package runner

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

func newRunner(t *testing.T) *Runner {
	t.Helper()
	r := New(Builtin(), sched.Config{StateDir: t.TempDir(), WorkDir: t.TempDir(), Self: []string{"/nonexistent/wick"}})
	t.Cleanup(func() { r.Close() })
	return r
}

func echoApp() *spec.AppDef {
	return &spec.AppDef{Name: "echo", Roles: []spec.Role{spec.NewRole("echo", "img", "echo", "hi")}}
}

func TestDryRunInjectsTorchXEnvOnACopy(t *testing.T) {
	t.Setenv(EnvParentRunID, "parent-1")
	r := newRunner(t)
	app := echoApp()
	info, err := r.DryRun(context.Background(), app, "local_cwd", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	env := info.App.Roles[0].Env
	if want := "local_cwd://wick/${app_id}"; env[EnvJobID] != want {
		t.Errorf("%s = %q, want %q", EnvJobID, env[EnvJobID], want)
	}
	if env[EnvSessionID] == "" || env[EnvParentRunID] != "parent-1" {
		t.Errorf("env %v lacks the session or parent run id", env)
	}
	if len(app.Roles[0].Env) != 0 {
		t.Errorf("the caller's AppDef was changed: %v", app.Roles[0].Env)
	}
	if !strings.HasPrefix(info.AppID, "echo-") || info.Handle().String() != "local_cwd://wick/"+info.AppID {
		t.Errorf("app id %q, handle %s", info.AppID, info.Handle())
	}
	if info.Cfg["log_dir"] == nil {
		t.Errorf("run options were not resolved with defaults: %v", info.Cfg)
	}
}

func TestDryRunRejectsBadInput(t *testing.T) {
	r := newRunner(t)
	ctx := context.Background()
	noEntry := echoApp()
	noEntry.Roles[0].Entrypoint = ""
	zero := echoApp()
	zero.Roles[0].NumReplicas = 0
	for name, c := range map[string]struct {
		app   *spec.AppDef
		sched string
		cfg   spec.Cfg
		want  error
	}{
		"empty entrypoint":   {noEntry, "local_cwd", nil, spec.ErrEmptyEntrypoint},
		"zero replicas":      {zero, "local_cwd", nil, spec.ErrBadReplicas},
		"no roles":           {&spec.AppDef{Name: "x"}, "local_cwd", nil, spec.ErrNoRoles},
		"unknown scheduler":  {echoApp(), "aws_batch", nil, sched.ErrUnknownScheduler},
		"unknown run option": {echoApp(), "local_cwd", spec.Cfg{"log_dri": "/tmp"}, spec.ErrInvalidRunOpt},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := r.DryRun(ctx, c.app, c.sched, c.cfg, "")
			if !errors.Is(err, c.want) {
				t.Errorf("got %v, want %v", err, c.want)
			}
		})
	}
}

func TestUnknownHandles(t *testing.T) {
	r := newRunner(t)
	ctx := context.Background()
	h := spec.Handle{Scheduler: "local_cwd", Session: "wick", AppID: "ghost-bcdfghjklmnp"}
	if _, err := r.Status(ctx, h); !errors.Is(err, sched.ErrNotFound) || !strings.Contains(err.Error(), h.String()) {
		t.Errorf("Status: %v", err)
	}
	if err := r.Cancel(ctx, h); !errors.Is(err, sched.ErrNotFound) {
		t.Errorf("Cancel: %v", err)
	}
	h.Scheduler = "nope"
	if _, err := r.Status(ctx, h); !errors.Is(err, sched.ErrUnknownScheduler) {
		t.Errorf("Status on an unknown scheduler: %v", err)
	}
}

// TestListGoesOnWhenASchedulerIsDown: with the Docker Engine unreachable, the local
// apps are still listed and the failure is reported.
func TestListGoesOnWhenASchedulerIsDown(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	r := newRunner(t)
	apps, errs := r.List(context.Background(), "")
	if len(apps) != 0 {
		t.Errorf("apps in an empty state dir: %v", apps)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "local_docker") {
		t.Errorf("errors %v, want one naming local_docker", errs)
	}
}

func TestComponentCalls(t *testing.T) {
	r := newRunner(t)
	ctx := context.Background()
	defaults := components.Lookup{Defaults: func(name string) map[string]string {
		if name == "utils.echo" {
			return map[string]string{"msg": "from config"}
		}
		return nil
	}}
	info, err := r.DryRunComponent(ctx, "utils.echo", nil, "local_cwd", nil, "", defaults)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.App.Roles[0].Args; len(got) != 1 || got[0] != "from config" {
		t.Errorf("config default not applied: args %q", got)
	}
	info, err = r.DryRunComponent(ctx, "utils.echo", []string{"--msg", "flag wins"}, "local_cwd", nil, "", defaults)
	if err != nil || info.App.Roles[0].Args[0] != "flag wins" {
		t.Errorf("flag did not win: %v %v", err, info)
	}
	var ce *ComponentError
	for _, c := range []struct {
		name string
		args []string
	}{{"utils.ecoh", nil}, {"utils.touch", nil}, {"utils.echo", []string{"--num_replicas", "0"}}} {
		if _, err := r.DryRunComponent(ctx, c.name, c.args, "local_cwd", nil, "", components.Lookup{}); !errors.As(err, &ce) {
			t.Errorf("%s %v: want a ComponentError, got %v", c.name, c.args, err)
		}
	}
}
