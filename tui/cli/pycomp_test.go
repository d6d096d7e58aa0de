package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/components/pycomp"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/internal/testkit"
)

// torchxPython is the interpreter the tests run TorchX with (Debian's: make setup
// installs the packages the vendored TorchX imports).
const torchxPython = "/usr/bin/python3"

// torchxVendor is ../shared/vendor/python beside the repository (TorchX b72ba038).
func torchxVendor() string {
	return filepath.Join("..", "..", "..", "shared", "vendor", "python")
}

// pyHarness is a harness whose wick (in-process and the binary) asks the vendored
// TorchX for .py components; it skips (fails under CI=true) when that TorchX does not
// import. my_trainer.py (TorchX's docs' my_trainer, see pyTrainer) is in its work dir.
func pyHarness(t *testing.T) *harness {
	t.Helper()
	vendor, err := filepath.Abs(torchxVendor())
	if err != nil {
		t.Fatal(err)
	}
	check := exec.Command(torchxPython, "-c", "import torchx.specs.finder, torchx.components.utils")
	check.Env = append(os.Environ(), "PYTHONPATH="+vendor)
	if out, err := check.CombinedOutput(); err != nil {
		msg := "the vendored TorchX does not import (" + vendor + "; make setup installs python3-yaml python3-fsspec python3-tabulate python3-filelock): " + string(out)
		if testkit.InCI() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Setenv("PYTHONPATH", vendor)
	t.Setenv("WICK_PYTHON", torchxPython) // for the binary; h.env for in-process runs
	// The time limit that stops a component that hangs, grown with the load: at load
	// 30 on 2 cores importing TorchX took more than its default 30 s.
	timeout := testkit.Scale(pycomp.DefaultTimeout).String()
	t.Setenv(pycomp.EnvTimeout, timeout)
	h := newHarness(t)
	h.env["WICK_PYTHON"] = torchxPython
	h.env[pycomp.EnvTimeout] = timeout
	if err := os.WriteFile(filepath.Join(h.work, "my_trainer.py"), []byte(pyTrainer), 0o644); err != nil {
		t.Fatal(err)
	}
	return h
}

// pyTrainer is TorchX's docs' component file (`torchx run ~/my_trainer_spec.py:my_trainer`,
// my_trainer(foo: int, bar: str); pytorch/torchx b72ba038 torchx/cli/__init__.py:78),
// with a body that runs anywhere: echo, or the Docker tests' /helper.
const pyTrainer = `import torchx.specs as specs


def my_trainer(foo: int, bar: str, image: str = "/tmp", entrypoint: str = "echo", *script_args: str) -> specs.AppDef:
    """Trains my model.

    Args:
        foo: number of epochs
        bar: dataset name
        image: where it runs
        entrypoint: the program
        script_args: more arguments
    """
    return specs.AppDef(
        name="my_trainer",
        roles=[
            specs.Role(
                name="trainer",
                image=image,
                entrypoint=entrypoint,
                args=[*script_args, "epochs=" + str(foo), "data=" + bar],
                env={"LOGLEVEL": "INFO"},
            )
        ],
    )
`

func TestPyComponentDryRun(t *testing.T) {
	h := pyHarness(t)
	r := h.run("run", "--dryrun", "my_trainer.py:my_trainer", "--foo", "3", "--bar", "imagenet")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"name: my_trainer", "entrypoint:   echo", "args:         [epochs=3, data=imagenet]", "argv:     [echo, epochs=3, data=imagenet]"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run lacks %q:\n%s", want, r.stdout)
		}
	}
	r = h.run("run", "--dryrun", "--json", "-s", "local_docker", "./my_trainer.py:my_trainer", "--foo=1", "--bar", "b", "--image", "alpine", "--", "x", "y")
	if r.code != 0 {
		t.Fatalf("json: exit %d: %s", r.code, r.stderr)
	}
	var info sched.DryRunInfo
	if err := json.Unmarshal([]byte(r.stdout), &info); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	role := info.App.Roles[0]
	if role.Image != "alpine" || strings.Join(role.Args, " ") != "x y epochs=1 data=b" || role.Env["LOGLEVEL"] != "INFO" {
		t.Errorf("JSON role: %+v", role)
	}
	// slurm plans it too (a dry run needs no cluster).
	if r := h.run("run", "--dryrun", "-s", "slurm", "my_trainer.py:my_trainer", "--foo", "1", "--bar", "b"); r.code != 0 || !strings.Contains(r.stdout, "sbatch") {
		t.Errorf("slurm dry run: exit %d %s\n%s", r.code, r.stderr, r.stdout)
	}
}

func TestPyComponentHelpAndErrors(t *testing.T) {
	h := pyHarness(t)
	r := h.run("run", "my_trainer.py:my_trainer", "--help")
	if r.code != 0 {
		t.Fatalf("--help: exit %d %s", r.code, r.stderr)
	}
	// The usage line names the component as it was typed: the file dropped from it was
	// a command that does not run (#36).
	if want := "usage: wick run [RUN OPTIONS] ./my_trainer.py:my_trainer [FLAGS]"; !strings.Contains(h.run("run", "./my_trainer.py:my_trainer", "-h").stdout, want) {
		t.Errorf("./my_trainer.py:my_trainer -h lacks %q", want)
	}
	for _, want := range []string{"usage: wick run [RUN OPTIONS] my_trainer.py:my_trainer [FLAGS]", "Trains my model.", "--foo int", "number of epochs (required)", "--image string", `where it runs (default: "/tmp")`, "script_args..."} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help lacks %q:\n%s", want, r.stdout)
		}
	}
	if err := os.WriteFile(filepath.Join(h.work, "broken.py"), []byte("import torchx.specs as specs\nX = 1 / 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"my_trainer.py:my_trainer", "--foo", "x", "--bar", "b"}, "wick: my_trainer.py:my_trainer: argument --foo: invalid int value: 'x'"},
		{[]string{"broken.py:train"}, "wick: broken.py:train raised broken.py:2: ZeroDivisionError: division by zero"},
		{[]string{"my_trainer.py:nothere"}, "wick: my_trainer.py:nothere is not a TorchX component: Function nothere does not exist in file my_trainer.py"},
		// A typo of a builtin is still wick's own error, after TorchX knew no such name.
		{[]string{"utils.ech"}, `wick: unknown component "utils.ech" (did you mean "utils.echo"?)`},
	} {
		for _, mode := range [][]string{{"run", "--dryrun"}, {"run"}} {
			r := h.run(append(mode, tc.args...)...)
			if r.code != ExitUsage || strings.TrimSpace(r.stderr) != tc.want && !strings.HasPrefix(r.stderr, tc.want) {
				t.Errorf("%q: exit %d, stderr %q, want %q", tc.args, r.code, r.stderr, tc.want)
			}
			assertOneLineError(t, r.stderr, tc.want[len("wick: "):])
		}
	}
	// Nothing was launched.
	if r := h.run("list", "--json"); r.code != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("after errors, wick list: %d %q", r.code, r.stdout)
	}
	// No Python at all: one line, how to install TorchX, or use YAML.
	h.env["WICK_PYTHON"] = filepath.Join(h.work, "no-python3")
	r = h.run("run", "my_trainer.py:my_trainer", "--foo", "1", "--bar", "b")
	assertOneLineError(t, r.stderr, "pip install torchx")
	if r.code != ExitUsage && r.code != 1 || !strings.Contains(r.stderr, "YAML component") {
		t.Errorf("no python: exit %d %q", r.code, r.stderr)
	}
	// A TorchX builtin's name without TorchX: wick's unknown component, saying why.
	r = h.run("run", "utils.booth", "--x1", "1", "--x2", "2")
	assertOneLineError(t, r.stderr, `unknown component "utils.booth"`)
	if r.code != ExitUsage || !strings.Contains(r.stderr, "TorchX's components were not searched: no Python that imports torchx") {
		t.Errorf("utils.booth without TorchX: exit %d %q", r.code, r.stderr)
	}
}

func TestPyComponentRunsLocally(t *testing.T) {
	h := pyHarness(t)
	r := h.exec("run", "my_trainer.py:my_trainer", "--foo", "2", "--bar", "mnist", "--", "starting")
	if r.code != 0 || !strings.Contains(r.stderr, "trainer/0 starting epochs=2 data=mnist") {
		t.Fatalf("attached run: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
}

func TestPyComponentRunsOnDocker(t *testing.T) {
	img := dockerImage(t)
	h := pyHarness(t)
	r := h.exec("run", "-s", "local_docker", "my_trainer.py:my_trainer", "--foo", "2", "--bar", "mnist", "--image", img, "--entrypoint", "/helper", "--", "echo")
	if r.code != 0 || !strings.Contains(r.stderr, "trainer/0 epochs=2 data=mnist") {
		t.Fatalf("docker run: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	t.Cleanup(func() { h.exec("delete", "--force", strings.TrimSpace(r.stdout)) })
}

func TestBuiltinsListsTorchXComponents(t *testing.T) {
	h := pyHarness(t)
	// A .py file on the search path: its components are listed as FILE:NAME.
	dir := filepath.Join(h.work, ".wick", "components")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "team.py"), []byte(pyTrainer), 0o644); err != nil {
		t.Fatal(err)
	}
	r := h.run("builtins")
	if r.code != 0 {
		t.Fatalf("exit %d %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, ".wick/components/team.py:my_trainer Trains my model. (torchx)") {
		t.Errorf("builtins lacks the search path's .py component:\n%s", r.stdout)
	}
	_, torchx, ok := strings.Cut(r.stdout, "components from TorchX")
	if !ok {
		t.Fatalf("no TorchX section:\n%s", r.stdout)
	}
	// TorchX b72ba038's builtins wick has no Go copy of; wick's own are not repeated.
	for _, want := range []string{"metrics.tensorboard", "serve.torchserve", "utils.booth", "(torchx)"} {
		if !strings.Contains(torchx, want) {
			t.Errorf("TorchX section lacks %q:\n%s", want, torchx)
		}
	}
	if strings.Contains(torchx, "dist.ddp") || strings.Contains(torchx, "utils.echo") {
		t.Errorf("TorchX section repeats wick's builtins:\n%s", torchx)
	}
	r = h.run("builtins", "--json")
	var items []struct{ Name, From, Source string }
	if err := json.Unmarshal([]byte(r.stdout), &items); err != nil {
		t.Fatalf("builtins --json: %v\n%s", err, r.stdout)
	}
	from := map[string]string{}
	for _, it := range items {
		from[it.Name] = it.From
	}
	if from["utils.booth"] != "torchx" || from["utils.echo"] != "" || from["serve.torchserve"] != "torchx" {
		t.Errorf("builtins --json from: %v", from)
	}
	r = h.run("run", "--dryrun", "utils.booth", "--x1", "1", "--x2", "2")
	if r.code != 0 || !strings.Contains(r.stdout, "torchx.apps.utils.booth_main") {
		t.Errorf("utils.booth dry run: exit %d %s\n%s", r.code, r.stderr, r.stdout)
	}
}

// BenchmarkPyDryRun times `wick run --dryrun FILE.py:FN` (the wick binary, which runs
// the TorchX helper) beside `torchx run --dryrun` of the same component with the same
// TorchX (the bound: at most 1.2x), and beside what the machine can do: Python
// importing torchx.specs, and wick's dry run of a builtin (no Python).
func BenchmarkPyDryRun(b *testing.B) {
	vendor, err := filepath.Abs(torchxVendor())
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "my_trainer.py"), []byte(pyTrainer), 0o644); err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(), "PYTHONPATH="+vendor, "WICK_PYTHON="+torchxPython,
		"WICK_HOME="+filepath.Join(dir, "state"), "HOME="+dir, "NO_COLOR=1")
	check := exec.Command(torchxPython, "-c", "import tabulate, torchx.specs")
	check.Env = env
	if out, err := check.CombinedOutput(); err != nil {
		b.Skipf("the vendored TorchX does not import: %v %s", err, out)
	}
	comp := []string{"my_trainer.py:my_trainer", "--foo", "1", "--bar", "b"}
	run := func(b *testing.B, argv []string) time.Duration {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Env = work, env
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %v\n%s", argv, err, out)
		}
		return time.Since(start)
	}
	wick := append([]string{builtWick, "run", "--dryrun"}, comp...)
	torchx := append([]string{torchxPython, "-m", "torchx.cli.main", "run", "--dryrun", "-s", "local_cwd"}, comp...)
	// Interleaved, in alternating order, so that a busy machine's load weighs on both
	// alike: the ratio is the figure.
	b.Run("wick-vs-torchx", func(b *testing.B) {
		var w, x time.Duration
		n := 0
		for b.Loop() {
			if n%2 == 0 {
				w += run(b, wick)
				x += run(b, torchx)
			} else {
				x += run(b, torchx)
				w += run(b, wick)
			}
			n++
		}
		b.ReportMetric(float64(w.Milliseconds())/float64(n), "wick-ms/op")
		b.ReportMetric(float64(x.Milliseconds())/float64(n), "torchx-ms/op")
		b.ReportMetric(float64(w)/float64(x), "wick/torchx")
	})
	for _, bc := range []struct {
		name string
		argv []string
	}{
		{"python-import-torchx.specs", []string{torchxPython, "-c", "import torchx.specs"}},
		{"wick-builtin-no-python", []string{builtWick, "run", "--dryrun", "utils.echo"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				run(b, bc.argv)
			}
		})
	}
}

func TestPyComponentRunsOnSlurm(t *testing.T) {
	needSlurm(t)
	h := pyHarness(t)
	r := h.exec("run", "-s", "slurm", "my_trainer.py:my_trainer", "--foo", "4", "--bar", "cifar", "--", "on-slurm")
	if r.code != 0 || !strings.Contains(r.stderr, "trainer/0 on-slurm epochs=4 data=cifar") || !strings.Contains(r.stderr, "SUCCEEDED") {
		t.Fatalf("slurm run: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
}
