package tui_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/components/pycomp"
	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/internal/testkit"
)

// torchxVendor is ../shared/vendor/python beside the repository, made absolute when
// the package loads (tests change directory).
var torchxVendor, _ = filepath.Abs(filepath.Join("..", "..", "shared", "vendor", "python"))

// withTorchX gives e's UI the user's TorchX: the vendored TorchX source
// (../shared/vendor/python beside the repository, b72ba038) run by Debian's python3.
// It skips (fails under CI=true) when that TorchX does not import.
func withTorchX(t *testing.T, e *env) components.FindOptions {
	t.Helper()
	vendor := torchxVendor
	var environ []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PYTHONPATH=") {
			environ = append(environ, kv)
		}
	}
	environ = append(environ, "PYTHONPATH="+vendor, "PYTHONDONTWRITEBYTECODE=1")
	check := exec.Command("/usr/bin/python3", "-c", "import torchx.specs.finder, torchx.components.utils")
	check.Env = environ
	if out, err := check.CombinedOutput(); err != nil {
		msg := "the vendored TorchX does not import (make setup installs what it needs): " + string(out)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	work, err := os.Getwd() // setupEnv changed into its work directory
	if err != nil {
		t.Fatal(err)
	}
	find := components.FindOptions{WorkDir: work, Dirs: components.DefaultDirs(work, ""), External: &pycomp.Bridge{Python: "/usr/bin/python3", Dir: work, Env: environ, Timeout: testkit.Scale(pycomp.DefaultTimeout)}}
	e.opts.Find = find
	e.opts.Components = func() ([]*components.Component, error) {
		all, errs := components.All(find)
		if len(errs) > 0 {
			return all, errs[0]
		}
		return all, nil
	}
	return find
}

// TestPickerAndFormOfATorchXBuiltin: the picker lists TorchX's builtins wick lacks,
// marked torchx; the form has their typed fields, checked as typed without Python; the
// preview is TorchX's AppDef.
func TestPickerAndFormOfATorchXBuiltin(t *testing.T) {
	e := newEnv(t)
	find := withTorchX(t, e)
	// A .py component file on the search path is listed too, as its file's.
	team := filepath.Join(find.WorkDir, ".wick", "components", "team.py")
	if err := os.MkdirAll(filepath.Dir(team), 0o755); err != nil {
		t.Fatal(err)
	}
	src := "import torchx.specs as specs\n\n\ndef my_trainer(foo: int) -> specs.AppDef:\n    \"\"\"Trains my model.\n\n    Args:\n        foo: epochs\n    \"\"\"\n    return specs.AppDef(name=\"t\", roles=[specs.Role(name=\"t\", image=\"/tmp\", entrypoint=\"echo\", args=[str(foo)])])\n"
	if err := os.WriteFile(team, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	d := newDriver(t, e.opts, 140, 36)
	d.keys("n")
	d.typ("my_tr")
	d.contains("my_trainer", "[team.py · torchx] Trains my model.", team, "--foo int required")
	d.keys("ctrl+u")
	d.typ("booth")
	d.contains("utils.booth", "[torchx]", "from TorchX", "--x1 float required", "--tracker_base string = /tmp/torchx-util-booth")
	d.keys("enter")
	d.contains("Arguments", "x1", "x2", "trial_idx")
	row := func(name string) string {
		for _, l := range strings.Split(d.screen(), "\n") {
			if strings.HasPrefix(strings.TrimLeft(l, " ▸"), "*"+name+" ") {
				return l
			}
		}
		t.Fatalf("no row %s:\n%s", name, d.screen())
		return ""
	}
	d.typ("one") // x1 is a float
	if !strings.Contains(row("x1"), "✗") {
		t.Errorf("x1 = one is not refused: %s", row("x1"))
	}
	d.keys("ctrl+u")
	d.typ("1.5")
	if r := row("x1"); strings.Contains(r, "✗") || !strings.Contains(r, "float") {
		t.Errorf("x1 = 1.5: %s", r)
	}
	d.keys("tab")
	d.typ("2")
	d.keys("enter")
	d.contains("=== APPLICATION ===", "name: torchx-utils-booth", "- torchx.apps.utils.booth_main", "- \"1.5\"", "- \"2.0\"", "memMB: 1024")
}

// TestRelaunchWithEditsOfAPyComponent: an app launched from FILE.py:FN is relaunched
// with edits: the form of that file's component, filled with the arguments it ran
// with; the edit reaches TorchX and the new app runs.
func TestRelaunchWithEditsOfAPyComponent(t *testing.T) {
	e := newEnv(t)
	find := withTorchX(t, e)
	// TorchX's docs' my_trainer(foo: int, bar: str) (pytorch/torchx b72ba038,
	// torchx/cli/__init__.py:78), running echo.
	// Each load of the file (each Python run) appends a line to loads.
	loads := filepath.Join(find.WorkDir, "loads")
	count := func() int {
		data, _ := os.ReadFile(loads)
		return strings.Count(string(data), "\n")
	}
	src := "open('" + loads + "', 'a').write('x\\n')\n" + `import torchx.specs as specs


def my_trainer(foo: int, bar: str = "mnist") -> specs.AppDef:
    """Trains my model.

    Args:
        foo: number of epochs
        bar: dataset name
    """
    return specs.AppDef(name="my_trainer", roles=[specs.Role(
        name="trainer", image="/tmp", entrypoint="echo", args=["epochs=" + str(foo), "data=" + bar])])
`
	if err := os.WriteFile(filepath.Join(find.WorkDir, "my_trainer.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	info, err := e.r.DryRunComponent(ctx, "my_trainer.py:my_trainer", []string{"--foo", "3"}, local.NameCwd, nil, "", components.Lookup{Find: find})
	if err != nil {
		t.Fatal(err)
	}
	hd, err := e.r.Schedule(ctx, info, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := hd.String()
	e.wait(h)

	d := newDriver(t, e.opts, 120, 32)
	d.send(tick())
	d.selected(h)
	d.keys("e")
	d.contains("my_trainer", "│3", "bar")
	before := count()
	d.keys("ctrl+u")
	d.typ("71")
	d.keys("backspace")
	if n := count(); n != before {
		t.Errorf("typing in the form ran Python %d times", n-before)
	}
	d.keys("enter")
	d.contains("args:         [epochs=7, data=mnist]")
	// Back to the form and the same preview again: answered from the cache.
	d.keys("esc")
	d.contains("│7")
	d.keys("enter")
	d.contains("args:         [epochs=7, data=mnist]")
	if n := count(); n != before+1 {
		t.Errorf("two previews of one call ran Python %d times, want 1", n-before)
	}
	d.keys("enter")
	d.contains("launched local_cwd://wick/my_trainer-", "2 apps")
	nh := selectedHandle(t, d)
	if st := e.wait(nh); st.State.String() != "SUCCEEDED" {
		t.Errorf("relaunch %s: %s", nh, st.State)
	}
}
