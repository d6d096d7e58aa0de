package docker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/wick-dev/wick/engine/gpus"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// gpuApp is an app of one role whose replicas ask for gpu GPUs each.
func gpuApp(name string, replicas, gpu int, args ...string) *spec.AppDef {
	r := role("trainer", replicas, args...)
	r.Resource.GPU = gpu
	return &spec.AppDef{Name: name, Roles: []spec.Role{r}}
}

// containerGPUs are the device ids each container of a planned app gets, in order.
func containerGPUs(info *sched.DryRunInfo) [][]string {
	var out [][]string
	for _, c := range info.Request.(*Request).Containers {
		out = append(out, c.GPUDevices)
	}
	return out
}

// TestGPULeasesWithTheEngine: on a machine of four GPUs (the launcher's
// CUDA_VISIBLE_DEVICES), docker apps take machine-wide leases as the local schedulers
// do, in the same directory. The Engine here has no GPU runtime, so a GPU container
// cannot start: its launch fails at the start, leaves nothing, and gives its leases
// back. An app of the Engine that runs and holds GPUs 0 and 1 (its leases taken as
// its launch takes them) keeps them from the next docker plan (which gets 2 and 3,
// each container its own, and the Engine stores a device request for exactly that
// device), from a local app (the lease's kind is asked whether it runs), and refuses
// a third app naming the holder. Once its containers have exited the GPUs are free.
// A lease with no container yet holds for its launch's grace, and no longer.
func TestGPULeasesWithTheEngine(t *testing.T) {
	needEngine(t)
	t.Setenv(gpus.EnvVisible, "0,1,2,3")
	s := newScheduler(t)
	ctx := context.Background()

	// A launch whose containers cannot start gives its GPUs back.
	info := plan(t, s, gpuApp("nogpu", 2, 1, "true"), nil, "")
	if got := containerGPUs(info); !slices.EqualFunc(got, [][]string{{"0"}, {"1"}}, slices.Equal) {
		t.Fatalf("first app's GPUs %q, want [[0] [1]]", got)
	}
	if got := info.Request.(*Request).GPUs; !slices.Equal(got, []string{"0", "1"}) {
		t.Errorf("leased at launch: %q", got)
	}
	err := s.Schedule(ctx, info, nil)
	deleteAtEnd(t, s, info.AppID)
	if err == nil || !strings.Contains(err.Error(), "device driver") {
		t.Fatalf("a GPU container started on an Engine without a GPU runtime: %v", err)
	}
	if owner, held := s.leases().Holder("0"); held {
		t.Errorf("the failed launch left its lease of GPU 0 to %s", owner)
	}

	// An app that runs on the Engine, holding GPUs 0 and 1.
	holder := launch(t, s, &spec.AppDef{Name: "holder", Roles: []spec.Role{role("trainer", 1, "loop")}}, nil)
	wait(t, s, holder, 60*time.Second, func(st *spec.AppStatus) bool { return st.State == spec.Running })
	if err := s.leases().Take(holder, []string{"0", "1"}); err != nil {
		t.Fatal(err)
	}
	local := gpus.At(env.stateDir, gpus.KindLocal)
	if got := local.Free([]string{"0", "1", "2", "3"}); !slices.Equal(got, []string{"2", "3"}) {
		t.Errorf("a local app sees free %q, want [2 3]", got)
	}
	next := plan(t, s, gpuApp("next", 2, 1, "true"), nil, "")
	if got := containerGPUs(next); !slices.EqualFunc(got, [][]string{{"2"}, {"3"}}, slices.Equal) {
		t.Errorf("next app's GPUs %q, want [[2] [3]]", got)
	}
	// What the Engine is asked for, and keeps: exactly that device, no count, and no
	// CUDA_VISIBLE_DEVICES of the launcher's (inside, the container's devices count
	// from 0).
	c := next.Request.(*Request).Containers[1]
	opts, err := createOptions(&c, next.Request.(*Request).record)
	if err != nil {
		t.Fatal(err)
	}
	opts.Name += "-probe"
	res, err := env.cli.ContainerCreate(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		env.cli.ContainerRemove(context.Background(), res.ID, client.ContainerRemoveOptions{Force: true})
	})
	in, err := env.cli.ContainerInspect(ctx, res.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	drs := in.Container.HostConfig.DeviceRequests
	if len(drs) != 1 || drs[0].Count != 0 || !slices.Equal(drs[0].DeviceIDs, []string{"3"}) {
		t.Errorf("the Engine holds device requests %+v, want exactly GPU 3", drs)
	}
	for _, e := range in.Container.Config.Env {
		if strings.HasPrefix(e, "CUDA_VISIBLE_DEVICES=") || strings.HasPrefix(e, "NVIDIA_VISIBLE_DEVICES=") {
			t.Errorf("the container's env holds %s", e)
		}
	}

	// A third app: too few free, the holder named.
	sub := sched.Submission{AppID: spec.MakeAppID("third"), Session: env.session, App: gpuApp("third", 3, 1, "true"), Cfg: testCfg(t, s, nil)}
	_, err = s.DryRun(ctx, sub)
	if !errors.Is(err, gpus.ErrBusy) || !strings.Contains(err.Error(), holder) || !strings.Contains(err.Error(), "2 of this machine's 4 are free") {
		t.Errorf("3 GPUs of 2 free: %v", err)
	}

	// The holder's containers exit: its GPUs are free.
	if err := s.Cancel(ctx, holder); err != nil {
		t.Fatal(err)
	}
	testkit.Wait(t, 60*time.Second, "the holder's lease to end", func() (bool, string) {
		owner, held := local.Holder("0")
		return !held, owner
	})

	// A lease whose app has no container: held while its launch may be creating
	// them, then free.
	if err := s.leases().Take("creating-abc", []string{"2"}); err != nil {
		t.Fatal(err)
	}
	if owner, held := local.Holder("2"); !held || owner != "creating-abc" {
		t.Errorf("a fresh lease with no container yet: held %v by %q", held, owner)
	}
	old := time.Now().Add(-launchGrace - time.Minute)
	if err := os.Chtimes(filepath.Join(env.stateDir, "local", "devices", "2"), old, old); err != nil {
		t.Fatal(err)
	}
	if owner, held := local.Holder("2"); held {
		t.Errorf("a lease past its launch grace with no container is held by %s", owner)
	}
}

// TestGPULeaseEngineAbsent: where no Engine runs (its socket is missing) no
// container does, and a docker lease holds nothing; given a pool, a plan refuses the
// devices that a live lease holds (a *gpus.BusyError, which a sweep's queue waits on).
func TestGPULeaseEngineAbsent(t *testing.T) {
	t.Setenv(client.EnvOverrideHost, "unix://"+filepath.Join(t.TempDir(), "no.sock"))
	home := t.TempDir()
	s, err := New(sched.Config{Session: "sess", StateDir: home})
	if err != nil {
		t.Fatal(err)
	}
	ds := s.(*Scheduler)
	if err := ds.leases().Take("gone-abc", []string{"0"}); err != nil {
		t.Fatal(err)
	}
	if owner, held := gpus.At(home, gpus.KindLocal).Holder("0"); held {
		t.Errorf("a docker lease held by %s with no Engine", owner)
	}
	// A lease of a kind this program does not know holds its device: given a pool
	// with it, the plan is refused with a *gpus.BusyError (a sweep's queue waits on
	// it); a pool of free devices is leased whole.
	if err := gpus.At(home, "elsewhere").Take("other-abc", []string{"1"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := ds.RunOpts().Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	sub := sched.Submission{AppID: "point-abc", Session: "sess", App: gpuApp("point", 2, 1, "true"), Cfg: cfg, Devices: []string{"0", "1"}}
	_, err = ds.DryRun(context.Background(), sub)
	var busy *gpus.BusyError
	if !errors.As(err, &busy) || !slices.Equal(busy.Devices, []string{"1"}) || busy.Holders["1"] != "other-abc" {
		t.Errorf("a pool with a held device: %v", err)
	}
	sub.Devices = []string{"0", "2"}
	got, err := ds.DryRun(context.Background(), sub)
	if err != nil {
		t.Fatalf("a free pool: %v", err)
	}
	if g := got.(*Request).GPUs; !slices.Equal(g, []string{"0", "2"}) {
		t.Errorf("leased %q, want [0 2]", g)
	}
}

// TestCopiedCudaNotInGPUContainers: copy_env CUDA_* copies this machine's
// CUDA_VISIBLE_DEVICES (2,3), which inside a container given GPUs 2 and 3 of its own
// would name devices it does not have (its devices count from 0): it is left out, with
// a warning. Set by the env option or the role's env, it is the user's and kept.
func TestCopiedCudaNotInGPUContainers(t *testing.T) {
	t.Setenv(gpus.EnvVisible, "2,3")
	s, err := New(sched.Config{Session: "sess"})
	if err != nil {
		t.Fatal(err)
	}
	plan := func(cfg spec.Cfg, roleEnv map[string]string) *Request {
		t.Helper()
		resolved, err := s.RunOpts().Resolve(cfg)
		if err != nil {
			t.Fatal(err)
		}
		app := gpuApp("cuda", 2, 1, "env")
		app.Roles[0].Env = roleEnv
		got, err := s.DryRun(context.Background(), sched.Submission{AppID: "cuda-abc", Session: "sess", App: app, Cfg: resolved, Devices: []string{"2", "3"}})
		if err != nil {
			t.Fatal(err)
		}
		return got.(*Request)
	}
	req := plan(spec.Cfg{OptCopyEnv: []string{"CUDA_*"}}, nil)
	for _, c := range req.Containers {
		if v, ok := c.Env[gpus.EnvVisible]; ok {
			t.Errorf("%s: copy_env gave it %s=%s", c.Name, gpus.EnvVisible, v)
		}
	}
	if w := strings.Join(req.Warnings, "\n"); strings.Count(w, "copy_env's CUDA_VISIBLE_DEVICES") != 1 {
		t.Errorf("warnings %q", req.Warnings)
	}
	req = plan(spec.Cfg{OptCopyEnv: []string{"CUDA_*"}, OptEnv: map[string]string{gpus.EnvVisible: "0"}}, nil)
	if v := req.Containers[1].Env[gpus.EnvVisible]; v != "0" || len(req.Warnings) != 0 {
		t.Errorf("env option's value: %q, warnings %q", v, req.Warnings)
	}
	req = plan(spec.Cfg{OptCopyEnv: []string{"CUDA_*"}}, map[string]string{gpus.EnvVisible: "0"})
	if v := req.Containers[0].Env[gpus.EnvVisible]; v != "0" {
		t.Errorf("role's value: %q", v)
	}
}
