package pycomp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// myTrainer is the component file of TorchX's own docs: `torchx run
// ~/my_trainer_spec.py:my_trainer` with my_trainer(foo: int, bar: str) -> specs.AppDef
// (pytorch/torchx b72ba038, torchx/cli/__init__.py:78; seeds/002_9d4b836ea8d226f1.txt),
// its body (omitted there "for brevity") written as a TorchX user would.
const myTrainer = `import torchx.specs as specs


def my_trainer(foo: int, bar: str, lr: float = 0.01, *script_args: str) -> specs.AppDef:
    """Trains my model.

    It runs train.py on two nodes.

    Args:
        foo: number of epochs
        bar: dataset name
        lr: learning rate
        script_args: extra arguments of train.py
    """
    return specs.AppDef(
        name="my_trainer",
        roles=[
            specs.Role(
                name="trainer",
                image="ghcr.io/me/train:1.0",
                entrypoint="python",
                args=["train.py", "--epochs", str(foo), "--data", bar, "--lr", str(lr), *script_args],
                env={"LOGLEVEL": "INFO"},
                num_replicas=2,
                max_retries=3,
                resource=specs.resource(cpu=4, gpu=1, memMB=8192),
                port_map={"tb": 6006},
                mounts=specs.parse_mounts(["type=bind", "src=/data", "dst=/data", "readonly"]),
            )
        ],
    )
`

func TestFileComponentAppDef(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "my_trainer_spec.py"), myTrainer)
	b := newBridge(t, dir)
	comp, app, err := b.Materialize(context.Background(), "my_trainer_spec.py:my_trainer",
		[]string{"--foo", "3", "--bar=imagenet", "--", "--seed", "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &spec.AppDef{Name: "my_trainer", Roles: []spec.Role{{
		Name: "trainer", Image: "ghcr.io/me/train:1.0", Entrypoint: "python",
		Args:        []string{"train.py", "--epochs", "3", "--data", "imagenet", "--lr", "0.01", "--seed", "1"},
		Env:         map[string]string{"LOGLEVEL": "INFO"},
		NumReplicas: 2, MaxRetries: 3, RetryPolicy: spec.RetryApplication,
		Resource: spec.Resource{CPU: 4, GPU: 1, MemMB: 8192},
		PortMap:  map[string]int{"tb": 6006},
		Mounts:   []spec.Mount{{Type: spec.MountBind, Src: "/data", Dst: "/data", ReadOnly: true}},
	}}}
	if !reflect.DeepEqual(app, want) {
		t.Errorf("AppDef:\n got %+v\nwant %+v", app, want)
	}
	if comp.Name != "my_trainer" || comp.Source != filepath.Join(dir, "my_trainer_spec.py") || comp.From != components.FromTorchX {
		t.Errorf("component %q from %q (%q), want my_trainer from the file, torchx", comp.Name, comp.Source, comp.From)
	}
	if comp.Summary != "Trains my model." || comp.Help != "It runs train.py on two nodes." {
		t.Errorf("summary %q, help %q", comp.Summary, comp.Help)
	}
	wantParams := []components.Param{
		{Name: "foo", Type: components.Int, Required: true, Help: "number of epochs"},
		{Name: "bar", Type: components.String, Required: true, Help: "dataset name"},
		{Name: "lr", Type: components.Float, Default: "0.01", Help: "learning rate"},
	}
	if !reflect.DeepEqual(comp.Params, wantParams) {
		t.Errorf("params:\n got %+v\nwant %+v", comp.Params, wantParams)
	}
	if comp.Varargs != "script_args" || comp.VarargsHelp != "extra arguments of train.py" {
		t.Errorf("varargs %q (%q)", comp.Varargs, comp.VarargsHelp)
	}
}

func TestArgumentErrorsAreTorchXsOwn(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "c.py"), myTrainer)
	b := newBridge(t, dir)
	for _, tc := range []struct {
		argv []string
		want string
	}{
		// argparse's messages, as `torchx run` prints them after "error: ".
		{[]string{"--foo", "x", "--bar", "b"}, "c.py:my_trainer: argument --foo: invalid int value: 'x'"},
		{[]string{"--foo", "1"}, "c.py:my_trainer: the following arguments are required: --bar"},
		{[]string{"--foo", "1", "--bar", "b", "--lr", "fast"}, "c.py:my_trainer: argument --lr: invalid float value: 'fast'"},
	} {
		_, _, err := b.Materialize(context.Background(), "c.py:my_trainer", tc.argv, nil)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: error %v, want %q", tc.argv, err, tc.want)
		}
	}
	// .torchxconfig's [component:NAME] defaults reach TorchX's parser.
	_, app, err := b.Materialize(context.Background(), "c.py:my_trainer", []string{"--foo", "1"}, map[string]string{"bar": "cifar", "lr": "0.5"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(app.Roles[0].Args, " "); got != "train.py --epochs 1 --data cifar --lr 0.5" {
		t.Errorf("args with defaults: %q", got)
	}
}

func TestHelpNeedsNoParse(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "c.py"), myTrainer)
	b := newBridge(t, dir)
	for _, argv := range [][]string{{"--help"}, {"-h"}, {"--foo", "x", "-h"}} {
		comp, _, err := b.Materialize(context.Background(), "c.py:my_trainer", argv, nil)
		if !errors.Is(err, components.ErrHelp) || comp == nil {
			t.Fatalf("%q: %v, want help", argv, err)
		}
		u := comp.Usage()
		for _, want := range []string{"Trains my model.", "--foo int", "number of epochs (required)", "--lr float", "learning rate (default: 0.01)", "script_args...", "extra arguments of train.py"} {
			if !strings.Contains(u, want) {
				t.Errorf("usage lacks %q:\n%s", want, u)
			}
		}
	}
}

func TestBadComponentFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "raises.py"), "import torchx.specs as specs\n\nCONF = {}\nPORT = CONF['port']\n")
	writeFile(t, filepath.Join(dir, "raises_in_fn.py"), `import torchx.specs as specs


def train(n: int = 1) -> specs.AppDef:
    """Train.

    Args:
        n: nodes
    """
    if n > 1:
        raise ValueError("only one node here")
    return specs.AppDef(name="t", roles=[specs.Role(name="t", image="i", entrypoint="e")])
`)
	writeFile(t, filepath.Join(dir, "syntax.py"), "import torchx.specs as specs\n\ndef train(n: int = 1) -> specs.AppDef\n    pass\n")
	writeFile(t, filepath.Join(dir, "notcomp.py"), "def helper(x):\n    return x\n")
	writeFile(t, filepath.Join(dir, "notapp.py"), `import torchx.specs as specs


def train(n: int = 1) -> specs.AppDef:
    """Train.

    Args:
        n: nodes
    """
    return {"name": "t"}
`)
	b := newBridge(t, dir)
	for _, tc := range []struct{ name, want string }{
		// The file as the user named it, and the line that raised.
		{"raises.py:train", "raises.py:train raised raises.py:4: KeyError: 'port'"},
		{"raises_in_fn.py:train", "raises_in_fn.py:train raised raises_in_fn.py:11: ValueError: only one node here"},
		{"syntax.py:train", "raises SyntaxError"}, // checked below
		{"notcomp.py:helper", "notcomp.py:helper is not a TorchX component: "},
		{"notcomp.py:nothere", "notcomp.py:nothere is not a TorchX component: Function nothere does not exist in file notcomp.py"},
		{"notapp.py:train", "notapp.py:train raised TypeError: Expected a component that returns `AppDef`, but got `<class 'dict'>`"},
		{"missing.py:train", `unknown component "missing.py:train": missing.py: no such file`},
	} {
		argv := []string{}
		if tc.name == "raises_in_fn.py:train" {
			argv = []string{"--n", "2"}
		}
		_, app, err := b.Materialize(context.Background(), tc.name, argv, nil)
		if err == nil || app != nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") {
			t.Errorf("%s: error on several lines: %q", tc.name, msg)
		}
		switch tc.name {
		case "syntax.py:train":
			want := "syntax.py:3: SyntaxError: "
			if !strings.HasPrefix(msg, want) {
				t.Errorf("%s: %q, want %q...", tc.name, msg, want)
			}
		case "notcomp.py:helper":
			if !strings.HasPrefix(msg, tc.want) || !strings.Contains(msg, "missing return annotation") {
				t.Errorf("%s: %q, want %q... missing return annotation", tc.name, msg, tc.want)
			}
		default:
			if msg != tc.want {
				t.Errorf("%s:\n got %q\nwant %q", tc.name, msg, tc.want)
			}
		}
	}
}

func TestTracebackWhenAsked(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "raises.py"), "import torchx.specs as specs\n\nCONF = {}\nPORT = CONF['port']\n")
	b := newBridge(t, dir)
	b.Traceback = true
	_, _, err := b.Materialize(context.Background(), "raises.py:train", nil, nil)
	if err == nil {
		t.Fatal("no error")
	}
	first, tb, _ := strings.Cut(err.Error(), "\n")
	if first != "raises.py:train raised raises.py:4: KeyError: 'port'" || !strings.HasPrefix(tb, "Traceback (most recent call last):") || !strings.HasSuffix(tb, "KeyError: 'port'") {
		t.Errorf("with traceback:\n%s", err)
	}
}

func TestStdoutNoiseDoesNotCorruptTheAnswer(t *testing.T) {
	dir := t.TempDir()
	// A component that prints at import and while building, on both streams, JSON
	// included, and closes nothing of wick's.
	writeFile(t, filepath.Join(dir, "noisy.py"), `import sys
import torchx.specs as specs

print('{"app": {"name": "evil"}}')
sys.stderr.write("loading noisy\n")


def train(n: int = 1) -> specs.AppDef:
    """Train.

    Args:
        n: nodes
    """
    print("building", n)
    print("}{", file=sys.stderr)
    return specs.AppDef(name="noisy", roles=[specs.Role(name="t", image="i", entrypoint="echo", args=["ok"])])
`)
	b := newBridge(t, dir)
	_, app, err := b.Materialize(context.Background(), "noisy.py:train", []string{"--n", "2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if app.Name != "noisy" || app.Roles[0].Entrypoint != "echo" || app.Roles[0].Args[0] != "ok" {
		t.Errorf("app %+v", app)
	}
}

func TestHangingComponentTimesOut(t *testing.T) {
	dir := t.TempDir()
	// It starts a child that would keep the answer pipe open too: the time limit kills
	// the whole process group.
	writeFile(t, filepath.Join(dir, "hang.py"), `import subprocess, time
import torchx.specs as specs

subprocess.Popen(["sleep", "600"])
time.sleep(600)
`)
	b := newBridge(t, dir)
	// The limit always expires here (the component never answers): the shortest that
	// says so in whole seconds.
	b.Timeout = time.Second
	start := time.Now()
	_, _, err := b.Materialize(context.Background(), "hang.py:train", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "TorchX did not answer within 1s") || !strings.Contains(err.Error(), EnvTimeout) {
		t.Fatalf("error %v, want the time limit", err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("took %v to give up", d)
	}
}

func TestNoPythonNoTorchX(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "c.py"), myTrainer)
	b := &Bridge{Python: filepath.Join(dir, "no-such-python3"), Dir: dir}
	_, _, err := b.Materialize(context.Background(), "c.py:my_trainer", nil, nil)
	if !errors.Is(err, components.ErrNoTorchX) || !strings.Contains(err.Error(), "pip install torchx") || !strings.Contains(err.Error(), "YAML component") {
		t.Errorf("no python: %v", err)
	}
	needTorchX(t)
	// Debian's python3 without the vendored TorchX on its path.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PYTHONPATH=") {
			env = append(env, kv)
		}
	}
	b = &Bridge{Python: testPython, Dir: dir, Env: append(env, "PYTHONNOUSERSITE=1")}
	_, _, err = b.Materialize(context.Background(), "c.py:my_trainer", nil, nil)
	want := "c.py:my_trainer: TorchX is not importable: /usr/bin/python3 cannot import torchx (No module named 'torchx' (/usr/bin/python3)): install TorchX for it (pip install torchx), name another interpreter with $WICK_PYTHON, or write the component as a YAML component file (wick builtins --print utils.echo)"
	if !errors.Is(err, components.ErrNoTorchX) || err.Error() != want {
		t.Errorf("no torchx:\n got %v\nwant %s", err, want)
	}
	if all, err := b.All(context.Background()); !errors.Is(err, components.ErrNoTorchX) || len(all) != 0 {
		t.Errorf("All without TorchX: %d, %v", len(all), err)
	}
}

func TestCacheByFileAndArguments(t *testing.T) {
	dir := t.TempDir()
	counter := filepath.Join(dir, "loads")
	// Each load of the file (each Python run) appends a line to counter.
	src := "open(" + quotePy(counter) + ", 'a').write('x\\n')\n" + myTrainer
	file := writeFile(t, filepath.Join(dir, "c.py"), src)
	b := newBridge(t, dir)
	loads := func() int {
		data, _ := os.ReadFile(counter)
		return strings.Count(string(data), "\n")
	}
	ctx := context.Background()
	argv := []string{"--foo", "1", "--bar", "b"}
	for range 3 {
		if _, _, err := b.Materialize(ctx, "c.py:my_trainer", argv, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := loads(); n != 1 {
		t.Errorf("3 identical calls loaded the file %d times, want 1", n)
	}
	if _, _, err := b.Materialize(ctx, "c.py:my_trainer", []string{"--foo", "2", "--bar", "b"}, nil); err != nil {
		t.Fatal(err)
	}
	if n := loads(); n != 2 {
		t.Errorf("new arguments: %d loads, want 2", n)
	}
	// An edit of the file (a new mtime and size) is read again.
	later := time.Now().Add(2 * time.Second)
	if err := os.WriteFile(file, []byte(src+"\n# edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(file, later, later); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Materialize(ctx, "c.py:my_trainer", argv, nil); err != nil {
		t.Fatal(err)
	}
	if n := loads(); n != 3 {
		t.Errorf("after an edit: %d loads, want 3", n)
	}
}

// quotePy writes s as a Python string literal (paths of temp dirs: no quotes in them).
func quotePy(s string) string { return "'" + s + "'" }

func TestTorchXBuiltinsWickLacks(t *testing.T) {
	b := newBridge(t, t.TempDir())
	ctx := context.Background()
	all, err := b.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]*components.Component{}
	for _, c := range all {
		names[c.Name] = c
	}
	// TorchX b72ba038's builtins: torchx/components/{dist,utils,metrics,serve}.py.
	for _, n := range []string{"dist.ddp", "dist.spmd", "utils.booth", "utils.echo", "metrics.tensorboard", "serve.torchserve"} {
		if c := names[n]; c == nil || c.From != components.FromTorchX {
			t.Errorf("All lacks %s", n)
		}
	}
	// utils.booth (torchx/components/utils.py:275-317 at b72ba038): x1 and x2 required
	// floats, then trial_idx=0, tracker_base="/tmp/torchx-util-booth", image=torchx.IMAGE;
	// one role torchx-utils-booth running python -m torchx.apps.utils.booth_main with
	// str() of each, on Resource(cpu=1, gpu=0, memMB=1024).
	comp, app, err := b.Materialize(ctx, "utils.booth", []string{"--x1", "1.5", "--x2", "2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if comp.Name != "utils.booth" || comp.Source != "" || comp.Params[0].Type != components.Float || !comp.Params[0].Required {
		t.Errorf("booth component: %+v", comp)
	}
	r := app.Roles[0]
	wantArgs := []string{"-m", "torchx.apps.utils.booth_main", "--x1", "1.5", "--x2", "2.0", "--trial_idx", "0", "--tracker_base", "/tmp/torchx-util-booth"}
	if app.Name != "torchx-utils-booth" || r.Name != "torchx-utils-booth" || r.Entrypoint != "python" || !reflect.DeepEqual(r.Args, wantArgs) ||
		r.Image != components.DefaultImage || !reflect.DeepEqual(r.Resource, spec.Resource{CPU: 1, GPU: 0, MemMB: 1024}) || r.NumReplicas != 1 {
		t.Errorf("booth AppDef: %s %+v", app.Name, r)
	}
}

func TestEntryPointComponents(t *testing.T) {
	// A package registering its components the way TorchX documents ([torchx.components]
	// foo = test.bar; torchx/specs/finder.py get_components at b72ba038): an installed
	// distribution's entry_points.txt.
	site := t.TempDir()
	writeFile(t, filepath.Join(site, "mycomps", "__init__.py"), "")
	writeFile(t, filepath.Join(site, "mycomps", "train.py"), myTrainer)
	writeFile(t, filepath.Join(site, "mycomps-0.1.dist-info", "METADATA"), "Metadata-Version: 2.1\nName: mycomps\nVersion: 0.1\n")
	writeFile(t, filepath.Join(site, "mycomps-0.1.dist-info", "entry_points.txt"), "[torchx.components]\nmy = mycomps\n")
	b := newBridge(t, t.TempDir(), site)
	ctx := context.Background()
	_, app, err := b.Materialize(ctx, "my.train.my_trainer", []string{"--foo", "5", "--bar", "x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if app.Name != "my_trainer" || app.Roles[0].Args[2] != "5" {
		t.Errorf("entry point app: %+v", app)
	}
	// With entry points registered, TorchX loads only those (not its builtins).
	_, _, err = b.Materialize(ctx, "utils.booth", []string{"--x1", "1", "--x2", "2"}, nil)
	if !errors.Is(err, components.ErrNoSuchComponent) {
		t.Errorf("utils.booth beside entry points: %v, want unknown component", err)
	}
}

// TestRunnerRecordsTheFileForRelaunch: the Runner plans a .py component through the
// bridge, and records the call with the file's absolute path, so that a relaunch
// (with edits) from another directory finds the same file.
func TestRunnerRecordsTheFileForRelaunch(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "c.py"), myTrainer)
	b := newBridge(t, dir)
	r := runner.New(runner.Builtin(), sched.Config{StateDir: t.TempDir(), WorkDir: dir, Self: []string{"/nonexistent/wick"}})
	argv := []string{"--foo", "2", "--bar", "b"}
	info, err := r.DryRunComponent(context.Background(), "c.py:my_trainer", argv, "local_cwd", nil, "", components.Lookup{
		Find: components.FindOptions{WorkDir: dir, External: b},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "c.py") + ":my_trainer"; info.Call == nil || info.Call.Component != want || !reflect.DeepEqual(info.Call.Args, argv) {
		t.Fatalf("call %+v, want %s %q", info.Call, want, argv)
	}
	// The relaunch finds it by that name, with its typed parameters for the form.
	comp, err := components.Find(info.Call.Component, components.FindOptions{External: b})
	if err != nil || comp.Name != "my_trainer" || len(comp.Params) != 3 || comp.Params[0].Type != components.Int {
		t.Fatalf("relaunch find: %+v, %v", comp, err)
	}
	// A bad argument is a ComponentError (a usage error), with the component for --help.
	_, err = r.DryRunComponent(context.Background(), "c.py:my_trainer", []string{"--foo", "x"}, "local_cwd", nil, "", components.Lookup{
		Find: components.FindOptions{WorkDir: dir, External: b},
	})
	var ce *runner.ComponentError
	if !errors.As(err, &ce) || ce.Component == nil {
		t.Errorf("bad argument: %v", err)
	}
}

func TestConfigure(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	settings := map[string]string{"python": "/opt/py/bin/python3", "timeout": "2m"}
	b, err := Configure("/w", getenv, settings)
	if err != nil || b.Python != "/opt/py/bin/python3" || b.Timeout != 2*time.Minute || b.Dir != "/w" || b.Traceback {
		t.Fatalf(".torchxconfig settings: %+v %v", b, err)
	}
	env[EnvPython], env[EnvTimeout], env[EnvTraceback] = "/venv/bin/python", "5s", "1"
	if b, err = Configure("/w", getenv, settings); err != nil || b.Python != "/venv/bin/python" || b.Timeout != 5*time.Second || !b.Traceback {
		t.Fatalf("the environment wins: %+v %v", b, err)
	}
	if b, err = Configure("", func(string) string { return "" }, nil); err != nil || b.python() != "python3" || b.timeout() != 30*time.Second {
		t.Fatalf("defaults: %+v %v", b, err)
	}
	env[EnvTimeout] = "soon"
	if _, err = Configure("", getenv, nil); err == nil || err.Error() != `$WICK_PYTHON_TIMEOUT: "soon" is not a duration such as 30s or 2m` {
		t.Errorf("bad timeout: %v", err)
	}
	delete(env, EnvTimeout)
	if _, err = Configure("", getenv, map[string]string{"timeout": "-1s"}); err == nil || !strings.HasPrefix(err.Error(), "[wick:python] timeout: ") {
		t.Errorf("bad [wick:python] timeout: %v", err)
	}
}

// TestFileListsItsComponents: the listing of a .py file on the search path holds the
// functions TorchX's linter accepts as components, and none of the others.
func TestFileListsItsComponents(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "team.py"), myTrainer+"\n\ndef helper(x):\n    return x\n")
	writeFile(t, filepath.Join(dir, "broken.py"), "def f(:\n")
	b := newBridge(t, dir)
	comps, err := b.File(context.Background(), "team.py")
	if err != nil {
		t.Fatal(err)
	}
	if len(comps) != 1 || comps[0].Name != "my_trainer" || comps[0].Source != filepath.Join(dir, "team.py") || len(comps[0].Params) != 3 {
		t.Fatalf("components of team.py: %+v", comps)
	}
	if _, err := b.File(context.Background(), "broken.py"); err == nil || !strings.HasPrefix(err.Error(), filepath.Join(dir, "broken.py")+":1: SyntaxError: ") {
		t.Errorf("broken.py: %v", err)
	}
	// components.All lists them with the search path.
	all, errs := components.All(components.FindOptions{Dirs: []string{dir}, External: b})
	if len(errs) != 1 {
		t.Errorf("All: errors %v, want broken.py's", errs)
	}
	if !slices.ContainsFunc(all, func(c *components.Component) bool {
		return c.Name == "my_trainer" && c.Source == filepath.Join(dir, "team.py")
	}) {
		t.Errorf("All lacks team.py:my_trainer")
	}
}
