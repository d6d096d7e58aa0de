package components

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wick-dev/wick/components/demo"
	"github.com/wick-dev/wick/engine/spec"
)

// build parses argv for the builtin name and builds its validated AppDef.
func build(t *testing.T, name string, argv ...string) (*spec.AppDef, error) {
	t.Helper()
	c, err := Find(name, FindOptions{})
	if err != nil {
		t.Fatalf("Find(%q): %v", name, err)
	}
	args, err := c.Parse(argv, nil)
	if err != nil {
		return nil, err
	}
	return c.AppDef(args)
}

func mustBuild(t *testing.T, name string, argv ...string) *spec.AppDef {
	t.Helper()
	app, err := build(t, name, argv...)
	if err != nil {
		t.Fatalf("%s %q: %v", name, argv, err)
	}
	return app
}

func assertApp(t *testing.T, got, want *spec.AppDef) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("AppDef mismatch\ngot:  %s\nwant: %s", g, w)
	}
}

// role is a spec.Role with TorchX's defaults and the given overrides applied by the
// caller.
func role(name, image, entrypoint string, args ...string) spec.Role {
	r := spec.NewRole(name, image, entrypoint, args...)
	if r.Args == nil {
		r.Args = []string{}
	}
	return r
}

func oneRole(name string, r spec.Role) *spec.AppDef {
	return &spec.AppDef{Name: name, Roles: []spec.Role{r}}
}

func unsetLogLevel(t *testing.T) {
	t.Helper()
	t.Setenv("LOGLEVEL", "")
	os.Unsetenv("LOGLEVEL")
}

func TestBuiltinNamesAndOrder(t *testing.T) {
	var names []string
	for _, c := range Builtins() {
		names = append(names, c.Name)
		if c.Summary == "" || c.Build == nil {
			t.Errorf("%s: no summary or no Build", c.Name)
		}
		if err := c.check(); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
		for _, p := range c.Params {
			if p.Help == "" {
				t.Errorf("%s --%s: no help", c.Name, p.Name)
			}
			if !p.Required && !p.Optional {
				if _, _, err := p.parse(p.Default); err != nil {
					t.Errorf("%s --%s: bad default %q: %v", c.Name, p.Name, p.Default, err)
				}
			}
		}
	}
	want := []string{"demo.train", "dist.ddp", "dist.spmd", "utils.binary", "utils.copy", "utils.echo", "utils.python", "utils.sh", "utils.touch"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("Builtins() = %v, want %v", names, want)
	}
	// Each call builds fresh values.
	Builtins()[0].Name = "changed"
	if Builtins()[0].Name != "demo.train" {
		t.Error("Builtins shares state between calls")
	}
}

func TestBuiltinExamplesBuild(t *testing.T) {
	for _, c := range Builtins() {
		args, err := c.Parse(c.Example, nil)
		if err != nil {
			t.Errorf("%s example %q: %v", c.Name, c.Example, err)
			continue
		}
		if _, err := c.AppDef(args); err != nil {
			t.Errorf("%s example %q: %v", c.Name, c.Example, err)
		}
	}
}

var utilRes = spec.Resource{CPU: 1, GPU: 0, MemMB: 1024}

func TestEcho(t *testing.T) {
	r := role("echo", DefaultImage, "echo", "hello world")
	r.Resource = utilRes
	assertApp(t, mustBuild(t, "utils.echo"), oneRole("echo", r))

	r = role("echo", "alpine", "echo", "hi there")
	r.Resource = utilRes
	r.NumReplicas = 3
	assertApp(t, mustBuild(t, "utils.echo", "--msg", "hi there", "--image=alpine", "--num_replicas", "3"), oneRole("echo", r))
}

func TestTouch(t *testing.T) {
	r := role("touch", DefaultImage, "touch", "/tmp/f")
	r.Resource = utilRes
	assertApp(t, mustBuild(t, "utils.touch", "--file", "/tmp/f"), oneRole("touch", r))
	if _, err := build(t, "utils.touch"); err == nil || err.Error() != "missing required parameter --file" {
		t.Errorf("no --file: err = %v", err)
	}
}

func TestSh(t *testing.T) {
	unsetLogLevel(t)
	r := role("sh", DefaultImage, "sh", "-c", `echo '$HOME' 'a b' "it'"'"'s"`)
	r.Args[1] = `echo '$HOME' 'a b' 'it'"'"'s'`
	r.Resource = utilRes
	r.Env = map[string]string{"LOGLEVEL": "WARNING"}
	assertApp(t, mustBuild(t, "utils.sh", "echo", "$HOME", "a b", "it's"), oneRole("sh", r))

	// Flags after the first argument belong to the command.
	app := mustBuild(t, "utils.sh", "--num_replicas", "2", "echo", "-n", "--num_replicas", "hi")
	if got := app.Roles[0].Args; !reflect.DeepEqual(got, []string{"-c", "echo -n --num_replicas hi"}) || app.Roles[0].NumReplicas != 2 {
		t.Errorf("args = %q, replicas %d", got, app.Roles[0].NumReplicas)
	}

	t.Setenv("LOGLEVEL", "DEBUG")
	r = role("sh", "img", "bash", "-x", "'$A'")
	r.Resource = spec.Resource{CPU: 8, GPU: 1, MemMB: 32 * 1024}
	r.Env = map[string]string{"LOGLEVEL": "INFO", "A": "1"}
	r.MaxRetries = 2
	r.Mounts = []spec.Mount{{Type: spec.MountBind, Src: "/data", Dst: "/data", ReadOnly: true}}
	assertApp(t, mustBuild(t, "utils.sh", "--image", "img", "--entrypoint", "bash", "-h", "gpu.small",
		"--env", "LOGLEVEL=INFO,A=1", "--max_retries", "2", "--mounts", "type=bind,src=/data,dst=/data,readonly",
		"--", "-x", "$A"), oneRole("sh", r))

	app = mustBuild(t, "utils.sh", "true")
	if app.Roles[0].Env["LOGLEVEL"] != "DEBUG" {
		t.Errorf("LOGLEVEL from the environment: env = %v", app.Roles[0].Env)
	}
	if _, err := build(t, "utils.sh", "--mounts", "type=bind,src=/a", "true"); err == nil || !strings.Contains(err.Error(), "--mounts: malformed mount") {
		t.Errorf("bad mount: err = %v", err)
	}
	if _, err := build(t, "utils.sh", "-h", "gpu.smal", "true"); err == nil || !strings.Contains(err.Error(), `did you mean "gpu.small"`) {
		t.Errorf("bad named resource: err = %v", err)
	}
}

func TestCopy(t *testing.T) {
	r := role("torchx-utils-copy", DefaultImage, "python", "-m", "torchx.apps.utils.copy_main", "--src", "s3://a/b", "--dst", "/tmp/b")
	r.Resource = utilRes
	assertApp(t, mustBuild(t, "utils.copy", "--src", "s3://a/b", "--dst", "/tmp/b"), oneRole("torchx-utils-copy", r))
	if _, err := build(t, "utils.copy"); err == nil || err.Error() != "missing required parameters --src, --dst" {
		t.Errorf("err = %v", err)
	}
}

func TestPython(t *testing.T) {
	res := spec.Resource{CPU: 1, GPU: 0, MemMB: 1024}
	r := role("python", DefaultImage, "python", "-m", "foo.main", "--x", "1")
	r.Resource = res
	r.Env = map[string]string{"HYDRA_MAIN_MODULE": "foo.main"}
	assertApp(t, mustBuild(t, "utils.python", "-m", "foo.main", "--", "--x", "1"), oneRole("torchx_utils_python", r))

	r = role("python", DefaultImage, "python", "-c", "print(1)")
	r.Resource = res
	r.NumReplicas = 2
	assertApp(t, mustBuild(t, "utils.python", "-c", "print(1)", "--num_replicas", "2"), oneRole("torchx_utils_python", r))

	r = role("python", DefaultImage, "python", "train.py", "a")
	r.Resource = spec.Resource{CPU: 4, GPU: 2, MemMB: 1024}
	assertApp(t, mustBuild(t, "utils.python", "--script", "train.py", "--name", "job", "--cpu", "4", "--gpu", "2", "a"), oneRole("job", r))

	for _, argv := range [][]string{nil, {"-m", "a", "-c", "b"}, {"--script", "a", "-m", "b"}} {
		if _, err := build(t, "utils.python", argv...); err == nil || err.Error() != "utils.python: exactly one of -m, -c and --script needs to be specified" {
			t.Errorf("%q: err = %v", argv, err)
		}
	}
}

func TestBinary(t *testing.T) {
	r := role("binary", "<NONE>", "/bin/date", "-u", "+%s")
	r.Resource = spec.Resource{CPU: 1, GPU: 0, MemMB: 1024}
	assertApp(t, mustBuild(t, "utils.binary", "--entrypoint", "/bin/date", "--", "-u", "+%s"), oneRole("torchx_utils_binary", r))
	if _, err := build(t, "utils.binary", "--entrypoint", "date", "-u"); err == nil ||
		err.Error() != "unknown flag -u for utils.binary (arguments for the program go after --)" {
		t.Errorf("err = %v", err)
	}
	if _, err := build(t, "utils.binary"); err == nil || err.Error() != "missing required parameter --entrypoint" {
		t.Errorf("err = %v", err)
	}
}

// ddpRole is dist.ddp's role for script train.py, before the test's changes.
func ddpRole(line string, nodes int) spec.Role {
	r := role("train", DefaultImage, "bash", "-c", line)
	r.NumReplicas, r.MinReplicas = nodes, nodes
	r.Resource = spec.Resource{CPU: 2, GPU: 0, MemMB: 1024}
	r.Env = map[string]string{
		"TORCHX_TRACKING_EXPERIMENT_NAME": "default-experiment",
		"TORCHX_TRACKING_RUN_NAME":        "train",
		"LOGLEVEL":                        "WARNING",
	}
	r.PortMap = map[string]int{"c10d": 29500}
	return r
}

func TestDDP(t *testing.T) {
	unsetLogLevel(t)
	// The example of reference §2.5: two local processes rendezvousing at rank 0.
	line := `torchrun --rdzv_backend c10d --rdzv_endpoint $${${rank0_env}:=localhost}:29500 --rdzv_id '${app_id}' ` +
		`--nnodes 2 --nproc_per_node 2 --tee 3 --role '' train.py`
	assertApp(t, mustBuild(t, "dist.ddp", "-j", "2x2", "--script", "train.py"), oneRole("train", ddpRole(line, 2)))

	// After macro substitution bash sees ${TORCHX_RANK0_HOST:=localhost}:29500.
	m := spec.Macros{AppID: "train-abc", ReplicaID: "1", Rank0Env: spec.Rank0Env}
	sub := m.Apply(ddpRole(line, 2))
	wantSub := `torchrun --rdzv_backend c10d --rdzv_endpoint ${TORCHX_RANK0_HOST:=localhost}:29500 --rdzv_id 'train-abc' ` +
		`--nnodes 2 --nproc_per_node 2 --tee 3 --role '' train.py`
	if sub.Args[1] != wantSub {
		t.Errorf("substituted line\n got %s\nwant %s", sub.Args[1], wantSub)
	}

	// One node: torchelastic picks a free port; the module's last part names the role.
	line = `torchrun --rdzv_backend c10d --rdzv_endpoint localhost:0 --rdzv_id '${app_id}' ` +
		`--nnodes 1 --nproc_per_node 2 --tee 3 --role '' -m pkg.mod.trainer --lr 0.1 'a b'`
	r := ddpRole(line, 1)
	r.Name = "trainer"
	r.Env["TORCHX_TRACKING_RUN_NAME"] = "trainer"
	assertApp(t, mustBuild(t, "dist.ddp", "-m", "pkg.mod.trainer", "--", "--lr", "0.1", "a b"), oneRole("trainer", r))

	// Elastic, static rendezvous, rdzv_conf, debug, a name, a named resource, the rest.
	line = `torchrun --rdzv_backend static --rdzv_conf 'join_timeout=600,x=a b' --rdzv_endpoint $${${rank0_env}:=localhost}:1234 ` +
		`--rdzv_id '${app_id}' --nnodes 2:4 --nproc_per_node 8 --tee 1 --role '' --node_rank '${replica_id}' dir/train.v2.py`
	r = ddpRole(line, 4)
	r.Name = "train.v2"
	r.MinReplicas = 2
	r.Image = "my/img:1"
	r.Resource = spec.Resource{CPU: 32, GPU: 4, MemMB: 128 * 1024}
	r.PortMap = map[string]int{"c10d": 1234}
	r.MaxRetries = 3
	r.Mounts = []spec.Mount{{Type: spec.MountVolume, Src: "vol", Dst: "/v"}, {Type: spec.MountDevice, Src: "/dev/fuse", Dst: "/dev/fuse", Permissions: "rwm"}}
	r.Env = map[string]string{
		"TORCHX_TRACKING_EXPERIMENT_NAME": "exp",
		"TORCHX_TRACKING_RUN_NAME":        "run1",
		"LOGLEVEL":                        "INFO",
		"FOO":                             "bar",
		"CUDA_LAUNCH_BLOCKING":            "1",
		"NCCL_DESYNC_DEBUG":               "1",
		"TORCH_DISTRIBUTED_DEBUG":         "DETAIL",
		"TORCH_SHOW_CPP_STACKTRACES":      "1",
	}
	want := oneRole("run1", r)
	want.Metadata = map[string]string{"team": "ml"}
	assertApp(t, mustBuild(t, "dist.ddp", "-j", "2:4x8", "--script", "dir/train.v2.py", "--rdzv_backend", "static",
		"--rdzv_conf", "join_timeout=600,x=a b", "--rdzv-port", "1234", "--debug", "True", "--name", "exp/run1",
		"-h", "gpu.large", "--cpu", "1", "--image", "my/img:1", "--env", "FOO=bar,LOGLEVEL=INFO", "--tee", "1",
		"--max_retries", "3", "--metadata", "team=ml", "--mounts", "type=volume,src=vol,dst=/v,type=device,src=/dev/fuse"), want)
}

func TestDDPNames(t *testing.T) {
	unsetLogLevel(t)
	for _, tc := range []struct{ name, app, exp string }{
		{"/", "train", "default-experiment"},
		{"foo/bar", "bar", "foo"},
		{"foo/", "train", "foo"},
		{"/bar", "bar", "default-experiment"},
		{"foobar", "foobar", "default-experiment"},
	} {
		app := mustBuild(t, "dist.ddp", "--script", "x/train.py", "--name", tc.name)
		env := app.Roles[0].Env
		if app.Name != tc.app || env["TORCHX_TRACKING_RUN_NAME"] != tc.app || env["TORCHX_TRACKING_EXPERIMENT_NAME"] != tc.exp {
			t.Errorf("--name %q: app %q, env %v", tc.name, app.Name, env)
		}
		if app.Roles[0].Name != "train" {
			t.Errorf("--name %q: role %q", tc.name, app.Roles[0].Name)
		}
	}
}

func TestDDPErrors(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		err  string
	}{
		{nil, "dist.ddp: exactly one of --script and -m must be specified"},
		{[]string{"--script", "a.py", "-m", "a"}, "dist.ddp: exactly one of --script and -m must be specified"},
		{[]string{"--script", "a.py", "-j", "2x"}, "dist.ddp: invalid format for -j, usage example: 1:2x4 or 1x4 or 4. Given: 2x"},
		{[]string{"--script", "a.py", "-j", "0x2"}, "dist.ddp: invalid -j 0x2: a job needs at least 1 node"},
		{[]string{"--script", "a.py", "--rdzv_port", "x"}, `invalid value "x" for --rdzv_port: want an int`},
		{[]string{"--script", "a.py", "--debug=maybe"}, `invalid value "maybe" for --debug: want a bool (true or false)`},
		{[]string{"--script", "a.py", "--name", "a/b c"}, `dist.ddp: app name "b c" may hold only letters, digits, '_', '.' and '-'`},
	} {
		_, err := build(t, "dist.ddp", tc.argv...)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: err = %v, want %q", tc.argv, err, tc.err)
		}
	}
}

func TestSPMD(t *testing.T) {
	unsetLogLevel(t)
	app := mustBuild(t, "dist.spmd", "-j", "2", "--script", "train.py", "a")
	r := app.Roles[0]
	wantLine := `torchrun --rdzv_backend c10d --rdzv_endpoint $${${rank0_env}:=localhost}:29500 --rdzv_id '${app_id}' ` +
		`--nnodes 2 --nproc_per_node 1 --tee 3 --role '' train.py a`
	if r.Args[1] != wantLine || r.NumReplicas != 2 || r.Resource.GPU != 1 || r.Resource.CPU != 8 {
		t.Errorf("spmd -j 2: %+v", r)
	}
	app = mustBuild(t, "dist.spmd", "-j", "1:3", "-h", "gpu.xlarge", "-m", "a.b")
	if r := app.Roles[0]; !strings.Contains(r.Args[1], "--nnodes 1:3 --nproc_per_node 8 ") || r.MinReplicas != 1 || r.NumReplicas != 3 {
		t.Errorf("spmd -j 1:3: %+v", r)
	}
	// A mismatch with the host's GPUs warns.
	c, _ := Find("dist.spmd", FindOptions{})
	args, err := c.Parse([]string{"-j", "2x4", "--script", "t.py"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	args.Warn = func(msg string) { warned = append(warned, msg) }
	if _, err := c.AppDef(args); err != nil || len(warned) != 1 || !strings.Contains(warned[0], "nproc_per_node=4") {
		t.Errorf("warnings %q, err %v", warned, err)
	}
	if _, err := build(t, "dist.spmd", "-j", "2", "-h", "cpu.small", "--script", "t.py"); err == nil ||
		!strings.Contains(err.Error(), "nproc_per_node cannot be inferred from GPU count: cpu.small is not a GPU instance") {
		t.Errorf("cpu host: err = %v", err)
	}
	if _, err := build(t, "dist.spmd", "-j", "x", "--script", "t.py"); err == nil || !strings.Contains(err.Error(), "invalid format for -j") {
		t.Errorf("bad -j: err = %v", err)
	}
}

func TestDemoTrain(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	r := role("trainer", "<NONE>", exe, demo.Verb, "--world-size", "2", "--duration", "30s", "--rate", "20", "--steps", "0",
		"--steps-per-epoch", "200", "--progress=true", "--warnings=true")
	r.NumReplicas = 2
	r.Env = map[string]string{"WICK_REPLICA_ID": "${replica_id}"}
	r.Resource = spec.Resource{CPU: 1, GPU: 0, MemMB: 256}
	assertApp(t, mustBuild(t, "demo.train"), oneRole("demo-train", r))

	app := mustBuild(t, "demo.train", "-r", "4", "--fail_rank", "3", "--fail_after", "5", "--exit_code", "7",
		"--rate", "10000", "--duration", "1m", "--progress=false")
	o, err := demo.ParseFlags(app.Roles[0].Args[1:])
	if err != nil {
		t.Fatal(err)
	}
	if o.WorldSize != 4 || o.FailRank != 3 || o.FailAfter.Seconds() != 5 || o.ExitCode != 7 || o.Rate != 10000 ||
		o.Duration.Minutes() != 1 || o.Progress || !o.Warnings {
		t.Errorf("options from the AppDef: %+v", o)
	}
	for _, tc := range []struct {
		argv []string
		err  string
	}{
		{[]string{"--fail_rank", "2"}, "--fail_rank 2: want a rank between 0 and 1"},
		{[]string{"--duration", "soon"}, `--duration: "soon" is not a duration`},
		{[]string{"--rate", "0"}, "rate must be a positive number"},
		{[]string{"--rate", "1e300"}, "rate must be a positive number of lines per second, at most 1000000"},
		{[]string{"--replicas", "0"}, "--replicas must be at least 1"},
		{[]string{"--exit_code", "0", "--fail_rank", "0"}, "exit code must be between 1 and 255"},
	} {
		if _, err := build(t, "demo.train", tc.argv...); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: err = %v, want %q", tc.argv, err, tc.err)
		}
	}
}

// TestTemplateBuiltinsPrintAsWritten: the builtins that are templates are
// builtins/utils.yaml's entries; --print dumps the entry (no inference), and the dump
// loads back as a component file that builds the same AppDef.
func TestTemplateBuiltinsPrintAsWritten(t *testing.T) {
	for name, c := range templateBuiltins() {
		if c.Source != "" {
			t.Errorf("%s: Source %q, want none (a builtin)", name, c.Source)
		}
		for _, p := range c.Params {
			if p.Name == "image" && p.Default != DefaultImage {
				t.Errorf("%s: image default %q, want DefaultImage %q", name, p.Default, DefaultImage)
			}
		}
		out := c.Describe()
		if !strings.Contains(out, "\n"+name+":\n") || strings.Contains(out, "written out for the example arguments") {
			t.Errorf("%s: --print is not the template:\n%s", name, out)
		}
		comps, err := ParseFile("printed.yaml", []byte(out))
		if err != nil || len(comps) != 1 {
			t.Fatalf("%s: the printed component does not load: %v", name, err)
		}
		want, err := c.AppDef(mustParse(t, c, c.Example))
		if err != nil {
			t.Fatal(err)
		}
		got, err := comps[0].AppDef(mustParse(t, comps[0], c.Example))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the printed component builds\n%+v\nwant\n%+v", name, got, want)
		}
	}
}

func mustParse(t *testing.T, c *Component, argv []string) Args {
	t.Helper()
	a, err := c.Parse(argv, nil)
	if err != nil {
		t.Fatalf("%s %v: %v", c.Name, argv, err)
	}
	return a
}

// TestBuiltinNames: the names IsExternal knows the builtins by are the builtins'.
func TestBuiltinNames(t *testing.T) {
	var names []string
	for _, c := range builtins("") {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, builtinNames) {
		t.Errorf("builtinNames %q, the builtins are %q", builtinNames, names)
	}
}
