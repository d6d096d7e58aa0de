package docker

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/gpus"
	"github.com/wick-dev/wick/engine/ranks/watch"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// These tests need no Engine.

func dryRun(t *testing.T, app *spec.AppDef, cfg spec.Cfg, workspace string) (*Request, error) {
	t.Helper()
	s, err := New(sched.Config{Session: "sess"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err = s.RunOpts().Resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// What the Runner checks before a scheduler's DryRun (sched.Scheduler.DryRun).
	if err := app.Validate(); err != nil {
		return nil, err
	}
	req, err := s.DryRun(context.Background(), sched.Submission{AppID: "trainer-bcd0123456789", Session: "sess", App: app, Cfg: cfg, Workspace: workspace})
	if err != nil {
		return nil, err
	}
	return req.(*Request), nil
}

func TestDryRun(t *testing.T) {
	t.Setenv("WICK_UNIT_COPY_A", "a")
	t.Setenv("WICK_UNIT_COPY_B", "b")
	t.Setenv("WICK_UNIT_OTHER", "x")
	mounts, err := spec.ParseMounts("type=bind,src=/data,dst=/data,readonly,type=volume,src=cache,dst=/cache,type=device,src=/dev/fuse")
	if err != nil {
		t.Fatal(err)
	}
	trainer := spec.NewRole("trainer", "pytorch:2", "python", "-m", "train", "--id", "${app_id}", "--rank", "${replica_id}", "--root", "${img_root}/x", "--master", "$${${rank0_env}}")
	trainer.NumReplicas = 2
	trainer.Env = map[string]string{"WICK_UNIT_COPY_B": "role", "FROM_ROLE": "${replica_id}", "FROM_CFG": "role wins"}
	trainer.Resource = spec.Resource{CPU: 4, GPU: 2, MemMB: 2048, Devices: map[string]int{"vpc.amazonaws.com/efa": 2, "example.com/thing": 1}}
	trainer.Mounts = mounts
	trainer.PortMap = map[string]int{"tensorboard": 6006}
	trainer.MaxRetries = 3
	ps := spec.NewRole("ps", "redis:7", "redis-server")
	app := &spec.AppDef{Name: "trainer", Roles: []spec.Role{trainer, ps}}
	orig := app.Clone()

	req, err := dryRun(t, app, spec.Cfg{
		OptCopyEnv:    []string{"WICK_UNIT_COPY_*"},
		OptEnv:        map[string]string{"FROM_CFG": "cfg", "ONLY_CFG": "1"},
		OptShmSize:    "2g",
		OptPrivileged: true,
		OptNetwork:    "mynet",
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(app.Roles, orig.Roles, func(a, b spec.Role) bool { return slices.Equal(a.Args, b.Args) }) {
		t.Error("DryRun changed the caller's AppDef")
	}
	if req.AppID != "trainer-bcd0123456789" || req.Session != "sess" || req.Network != "mynet" || req.Build != nil || len(req.Containers) != 3 {
		t.Fatalf("request %+v", req)
	}
	c := req.Containers[1]
	name := "trainer-bcd0123456789-trainer-1"
	if c.Name != name || c.Hostname != name || c.Role != "trainer" || c.Replica != 1 || c.Image != "pytorch:2" {
		t.Errorf("identity %+v", c)
	}
	wantCmd := []string{"python", "-m", "train", "--id", "trainer-bcd0123456789", "--rank", "1", "--root", "/x", "--master", "${TORCHX_RANK0_HOST}"}
	if !slices.Equal(c.Command, wantCmd) {
		t.Errorf("command %q, want %q", c.Command, wantCmd)
	}
	for k, v := range map[string]string{
		"WICK_UNIT_COPY_A": "a", "WICK_UNIT_COPY_B": "role", "FROM_ROLE": "1", "FROM_CFG": "role wins", "ONLY_CFG": "1",
		"TORCHX_RANK0_HOST": "trainer-bcd0123456789-trainer-0", "TORCHX_IMAGE": "pytorch:2",
		"WICK_APP_ID": "trainer-bcd0123456789", "WICK_ROLE": "trainer", "WICK_REPLICA_ID": "1",
		"PYTHONUNBUFFERED": "1", "TORCHELASTIC_ERROR_FILE": "/run/wick/error.json",
	} {
		if c.Env[k] != v {
			t.Errorf("env %s=%q, want %q", k, c.Env[k], v)
		}
	}
	if _, ok := c.Env["WICK_UNIT_OTHER"]; ok {
		t.Error("copy_env copied a variable its patterns do not match")
	}
	if c.Labels[LabelAppID] != req.AppID || c.Labels[LabelRole] != "trainer" || c.Labels[LabelReplicaID] != "1" || c.Labels[LabelSession] != "sess" ||
		c.Labels[LabelTorchXAppID] != req.AppID || c.Labels[LabelTorchXRoleName] != "trainer" || c.Labels[LabelTorchXReplicaID] != "1" {
		t.Errorf("labels %v", c.Labels)
	}
	if _, ok := c.Labels[LabelApp]; ok {
		t.Error("the app record is in the printed labels")
	}
	var rec appRecord
	if err := json.Unmarshal([]byte(req.record), &rec); err != nil || rec.App.Roles[0].Args[3] != "${app_id}" || rec.Cfg[OptShmSize] != "2g" {
		t.Errorf("app record %s: %v", req.record, err)
	}
	wantMounts := []MountSpec{{Type: spec.MountBind, Source: "/data", Target: "/data", ReadOnly: true}, {Type: spec.MountVolume, Source: "cache", Target: "/cache"},
		{Type: spec.MountVolume, Target: "/run/wick"}} // the error file's anonymous volume
	if !slices.Equal(c.Mounts, wantMounts) {
		t.Errorf("mounts %+v", c.Mounts)
	}
	wantDevices := []DeviceSpec{
		{Host: "/dev/fuse", Container: "/dev/fuse", Permissions: "rwm"},
		{Host: "/dev/infiniband/uverbs0", Container: "/dev/infiniband/uverbs0", Permissions: "rwm"},
		{Host: "/dev/infiniband/uverbs1", Container: "/dev/infiniband/uverbs1", Permissions: "rwm"},
	}
	if !slices.Equal(c.Devices, wantDevices) {
		t.Errorf("devices %+v", c.Devices)
	}
	if c.Resources != (Resources{NanoCPUs: 4e9, MemoryBytes: 2048 << 20, GPUs: 2, ShmBytes: 2 << 30}) {
		t.Errorf("resources %+v", c.Resources)
	}
	if c.Log.Driver != "json-file" || len(c.Log.Options) != 1 || c.Log.Options["max-size"] != unrotated {
		t.Errorf("log %+v: want json-file, never rotated", c.Log)
	}
	// port_map is not published unless asked (TorchX does not publish it).
	if len(c.Ports) != 0 || len(req.Containers[0].Ports) != 0 {
		t.Errorf("ports %+v and %+v", req.Containers[0].Ports, c.Ports)
	}
	if c.Restart != (RestartSpec{Policy: "on-failure", MaxRetries: 3}) || !c.Init || !c.Privileged || c.StopTimeout != DefaultStopTimeout || c.Network != "mynet" {
		t.Errorf("policies %+v %v %v %d %s", c.Restart, c.Init, c.Privileged, c.StopTimeout, c.Network)
	}
	p := req.Containers[2]
	if p.Resources != (Resources{ShmBytes: 2 << 30}) || p.Restart.Policy != "no" || len(p.Command) != 1 || p.Env["TORCHX_RANK0_HOST"] != "trainer-bcd0123456789-trainer-0" {
		t.Errorf("ps %+v", p)
	}
	// GPU warnings first: whether the machine has enough (nvidia-smi), and that the
	// two trainers share the same GPUs.
	warns := strings.Join(req.Warnings, "\n")
	if len(req.Warnings) < 3 || !strings.Contains(warns, "2 containers ask for GPUs") || !strings.Contains(warns, "example.com/thing") || !strings.Contains(warns, "per replica") {
		t.Errorf("warnings %q", req.Warnings)
	}
	if gpus.Count(context.Background()) < 2 && !strings.Contains(warns, "2 GPUs per container but") {
		t.Errorf("no warning of missing GPUs: %q", req.Warnings)
	}
	if !strings.Contains(req.record, "share them") {
		t.Errorf("the warnings are not in the app record, for describe")
	}

	// The request prints as JSON, fields in order.
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"app_id":"trainer-bcd0123456789","session":"sess","network":"mynet","containers":[{"name":`) {
		t.Errorf("JSON %.200s", b)
	}
	// And the create request is well formed.
	opts, err := createOptions(&req.Containers[0], req.record)
	if err != nil {
		t.Fatal(err)
	}
	h := opts.HostConfig
	if opts.Name != "trainer-bcd0123456789-trainer-0" || opts.Config.Entrypoint[0] != "python" || len(opts.Config.Cmd) != 10 ||
		h.NanoCPUs != 4e9 || h.Memory != 2048<<20 || h.ShmSize != 2<<30 || !*h.Init || !h.Privileged ||
		len(h.DeviceRequests) != 1 || h.DeviceRequests[0].Count != 2 || !slices.Equal(h.DeviceRequests[0].Capabilities[0], []string{"compute", "utility"}) ||
		len(h.Mounts) != 3 || len(h.Devices) != 3 || len(h.PortBindings) != 0 || string(h.RestartPolicy.Name) != "on-failure" ||
		opts.Config.Labels[LabelApp] != req.record {
		t.Errorf("create options %+v %+v", opts.Config, h)
	}
}

// Without shm_size, /dev/shm is as large as the memory limit (TorchX); port_map is
// published on loopback only when publish_ports asks for it; a role that names its own
// error file gets no error volume.
func TestDryRunDefaults(t *testing.T) {
	r := spec.NewRole("trainer", "pytorch:2", "python")
	r.NumReplicas = 2
	r.Resource = spec.Resource{CPU: 1, MemMB: 512}
	r.PortMap = map[string]int{"c10d": 29500}
	own := spec.NewRole("own", "pytorch:2", "python")
	own.Env = map[string]string{"TORCHELASTIC_ERROR_FILE": "/out/err.json", "PYTHONUNBUFFERED": ""}
	app := &spec.AppDef{Name: "trainer", Roles: []spec.Role{r, own}}
	req, err := dryRun(t, app, spec.Cfg{OptPublishPorts: true, OptLogOpts: map[string]string{"max-size": "100m", "max-file": "3"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	c0, c1, o := req.Containers[0], req.Containers[1], req.Containers[2]
	if c0.Log.Options["max-size"] != "100m" || c0.Log.Options["max-file"] != "3" {
		t.Errorf("log_opts not applied: %+v", c0.Log)
	}
	if c0.Resources.ShmBytes != 512<<20 || o.Resources.ShmBytes != 0 {
		t.Errorf("shm %d and %d", c0.Resources.ShmBytes, o.Resources.ShmBytes)
	}
	if !slices.Equal(c0.Ports, []PortSpec{{Name: "c10d", ContainerPort: 29500, HostPort: 29500}}) ||
		!slices.Equal(c1.Ports, []PortSpec{{Name: "c10d", ContainerPort: 29500, HostPort: 0}}) {
		t.Errorf("ports %+v and %+v", c0.Ports, c1.Ports)
	}
	opts, err := createOptions(&c0, req.record)
	if err != nil {
		t.Fatal(err)
	}
	for port, binds := range opts.HostConfig.PortBindings {
		if len(binds) != 1 || binds[0].HostIP.String() != "127.0.0.1" || binds[0].HostPort != "29500" {
			t.Errorf("port %v bound to %+v, want 127.0.0.1:29500", port, binds)
		}
	}
	if o.Env["TORCHELASTIC_ERROR_FILE"] != "/out/err.json" || o.Env["PYTHONUNBUFFERED"] != "" || len(o.Mounts) != 0 {
		t.Errorf("own error file: env %v mounts %v", o.Env, o.Mounts)
	}
}

func TestDryRunErrors(t *testing.T) {
	ok := &spec.AppDef{Name: "x", Roles: []spec.Role{spec.NewRole("r", "img", "/bin/true")}}
	for _, c := range []struct {
		name string
		app  *spec.AppDef
		cfg  spec.Cfg
		ws   string
		want string
	}{
		{"bad shm", ok, spec.Cfg{OptShmSize: "lots"}, "", "shm_size"},
		{"negative stop", ok, spec.Cfg{OptStopTimeout: -1}, "", "stop_timeout"},
		{"absurd stop", ok, spec.Cfg{OptStopTimeout: 9999999999}, "", "between 0 and 86400"},
		{"no roles", &spec.AppDef{Name: "x"}, nil, "", "no roles"},
		{"no image", &spec.AppDef{Name: "x", Roles: []spec.Role{spec.NewRole("r", "", "/bin/true")}}, nil, "", "no image"},
		// Issue 38: a path is local_dir's image; the Engine was asked GET /images//tmp/json/json.
		{"image is a path", &spec.AppDef{Name: "x", Roles: []spec.Role{spec.NewRole("r", "/tmp/json", "/bin/true")}}, nil, "", `image "/tmp/json" is a path, not a Docker image`},
		{"image not a reference", &spec.AppDef{Name: "x", Roles: []spec.Role{spec.NewRole("r", "Not An Image", "/bin/true")}}, nil, "", `image "Not An Image" is not a Docker image reference`},
		{"bad port", &spec.AppDef{Name: "x", Roles: []spec.Role{{Name: "r", Image: "i", Entrypoint: "e", NumReplicas: 1, PortMap: map[string]int{"p": 70000}}}}, nil, "", "not a port"},
		{"workspace missing", ok, nil, "/nonexistent/ws", "workspace"},
		{"bad image_repo", ok, spec.Cfg{OptImageRepo: "Not A Repo"}, t.TempDir(), "image_repo"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := dryRun(t, c.app, c.cfg, c.ws)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestContainerName(t *testing.T) {
	for _, c := range []struct {
		app, role string
		k         int
		want      string
	}{
		{"echo-kf2vb0x9qwm3", "echo", 0, "echo-kf2vb0x9qwm3-echo-0"},
		// TorchX keeps the last 30 characters of the app id and the first 30 of the role.
		{"a-very-long-application-name-here-kf2vb0x9qwm3", "trainer", 3, "ication-name-here-kf2vb0x9qwm3-trainer-3"},
		{"x", "a-role-name-that-goes-on-and-on-and-on", 1, "x-a-role-name-that-goes-on-and-o-1"},
		// Docker's names start with a letter or digit.
		{"__.app", "r", 0, "app-r-0"},
	} {
		if got := containerName(c.app, c.role, c.k); got != c.want {
			t.Errorf("containerName(%q, %q, %d) = %q, want %q", c.app, c.role, c.k, got, c.want)
		}
	}
}

func TestWorkspacePlan(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main.py", "print('hi')\n")
	write("data/big.bin", "ignored")
	write(".dockerignore", "data\n")
	app := &spec.AppDef{Name: "ws", Roles: []spec.Role{spec.NewRole("main", "base:1", "python"), spec.NewRole("side", "other:1", "x")}}
	plan := func() *Request {
		t.Helper()
		req, err := dryRun(t, app, spec.Cfg{OptImageRepo: "example.com/me/ws"}, dir)
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	req := plan()
	b := req.Build
	if b == nil || b.Role != "main" || b.Context != dir || b.BaseImage != "base:1" || b.Dockerfile != "" || b.Files != 1 ||
		!strings.HasPrefix(b.Tag, "example.com/me/ws:") || req.Containers[0].Image != b.Tag || req.Containers[1].Image != "other:1" ||
		req.Containers[0].Env["TORCHX_IMAGE"] != b.Tag {
		t.Fatalf("build %+v, images %s %s", b, req.Containers[0].Image, req.Containers[1].Image)
	}
	// Same content, new times: same tag. Ignored files do not count.
	write("main.py", "print('hi')\n")
	write("data/big.bin", "changed but ignored")
	if again := plan().Build.Tag; again != b.Tag {
		t.Errorf("tag changed from %s to %s with the same content", b.Tag, again)
	}
	write("main.py", "print('bye')\n")
	if changed := plan().Build.Tag; changed == b.Tag {
		t.Error("tag did not change with the content")
	}
	write("Dockerfile.torchx", "ARG IMAGE\nFROM $IMAGE\n")
	if p := plan().Build; p.Dockerfile != torchxDockerfile || p.Files != 3 {
		t.Errorf("with Dockerfile.torchx: %+v", p)
	}
}

func TestIgnore(t *testing.T) {
	ig, err := parseIgnore(strings.NewReader("# comment\n\n*.pyc\n/build\nlogs/**\n**/secret*\n!logs/keep.txt\ndocs/*.md\n!docs/README.md\n[ab].txt\n"))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		"x.pyc": true, "pkg/x.pyc": false, "build": true, "build/out/a": true, "src/build": false,
		"logs/a.log": true, "logs/keep.txt": false, "secret.key": true, "a/b/secret.txt": true,
		"docs/x.md": true, "docs/README.md": false, "docs/sub/x.md": false, "a.txt": true, "c.txt": false, "main.py": false,
	} {
		if got := ig.excluded(path); got != want {
			t.Errorf("excluded(%q) = %v, want %v", path, got, want)
		}
	}
	if _, err := parseIgnore(strings.NewReader("[unterminated\n")); err == nil {
		t.Error("a bad pattern parsed")
	}
}

func TestCopyEnv(t *testing.T) {
	got := copyEnv([]string{"AWS_*", "HOME", "X?"}, []string{"AWS_KEY=k", "AWS_=e", "HOME=/h", "HOMER=no", "XY=1", "XYZ=no", "PATH=/bin", "=bad"})
	want := map[string]string{"AWS_KEY": "k", "AWS_": "e", "HOME": "/h", "XY": "1"}
	if len(got) != len(want) {
		t.Errorf("copyEnv = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("copyEnv[%s] = %q, want %q", k, got[k], v)
		}
	}
}

// An Engine that cannot be reached gives one line naming the socket or DOCKER_HOST.
func TestUnreachable(t *testing.T) {
	for _, c := range []struct{ host, want string }{
		{"unix:///nonexistent/docker.sock", "DOCKER_HOST=unix:///nonexistent/docker.sock: the socket does not exist"},
		{"tcp://127.0.0.1:1", "DOCKER_HOST=tcp://127.0.0.1:1"},
	} {
		t.Run(c.host, func(t *testing.T) {
			t.Setenv("DOCKER_HOST", c.host)
			s, err := New(sched.Config{Session: "s"})
			if err != nil {
				t.Fatal(err) // New never connects
			}
			defer s.Close()
			_, err = s.Describe(context.Background(), "app-x")
			if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Describe: %v, want one line containing %q", err, c.want)
			}
			t.Log(err)
			if _, err := s.List(context.Background()); !errors.Is(err, ErrUnreachable) {
				t.Errorf("List: %v", err)
			}
		})
	}
}

func TestJoinErrs(t *testing.T) {
	a, b := errors.New("a"), errors.New("b")
	if joinErrs(nil, nil) != nil || joinErrs(a) != a {
		t.Error("joinErrs of none or one")
	}
	err := joinErrs(a, nil, b)
	if err.Error() != "a; b" || !errors.Is(err, a) || !errors.Is(err, b) {
		t.Errorf("joinErrs = %v", err)
	}
}

// The dry run shows a torchrun node's command as it is submitted: wrapped by the
// shell that starts the workers' sampler first (see watch.go), TorchX's command its
// tail; a role that is not watched keeps TorchX's command alone. The wrapper leaves
// PWD and SHLVL out of the node's environment unless the role sets them.
func TestDryRunWrapsWatchedNodes(t *testing.T) {
	node := func(name string, env map[string]string, args ...string) spec.Role {
		r := spec.NewRole(name, "torch:2", "torchrun", args...)
		r.Env = env
		return r
	}
	app := &spec.AppDef{Name: "trainer", Roles: []spec.Role{
		node("ddp", nil, "--nproc_per_node", "2", "train.py"),
		node("pwd", map[string]string{"PWD": "/x"}, "--nproc_per_node", "2", "train.py"),
		node("one", nil, "--nproc_per_node", "1", "train.py"),
		node("ownfile", map[string]string{"TORCHELASTIC_ERROR_FILE": "/tmp/e.json"}, "--nproc_per_node", "2", "train.py"),
		spec.NewRole("plain", "torch:2", "python", "train.py"),
	}}
	req, err := dryRun(t, app, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"torchrun", "--nproc_per_node", "2", "train.py"}
	for _, c := range req.Containers {
		argv, wrapped := watch.Unwrap(errorDir, c.Command)
		switch c.Role {
		case "ddp", "pwd":
			if !wrapped || !slices.Equal(argv, want) || c.Command[0] != "/bin/sh" || c.Command[4] != watch.Sampler(errorDir) {
				t.Errorf("%s: command %q, want the wrapper around %q", c.Role, c.Command, want)
			}
			unset := "unset PWD SHLVL; "
			if c.Role == "pwd" {
				unset = "unset SHLVL; "
			}
			if !strings.HasSuffix(c.Command[2], unset+`exec "$@"`) {
				t.Errorf("%s: the wrapper does not end with %q:\n%s", c.Role, unset+`exec "$@"`, c.Command[2])
			}
		default:
			if wrapped || c.Command[0] == "/bin/sh" {
				t.Errorf("%s: command %q is wrapped: no sampler watches it", c.Role, c.Command)
			}
		}
	}
}
