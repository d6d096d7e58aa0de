package pycomp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// myResources is a package registering named resources the way TorchX documents it
// (torchx/specs/__init__.py:167-195 at b72ba038, get_named_resources: "Create a module
// and define your resource retrieval function" gpu_x_1 -> Resource(cpu=2,
// memMB=64 * 1024, gpu=2), then "[torchx.named_resources] gpu_x_1 =
// my_module.resources:gpu_x_1" in entry_points.txt), plus what TorchX also takes: a
// name of its own table (gpu.small, which the entry point replaces: _load_named_resources
// merges the entry points last), capabilities and devices, a function that raises and
// one that makes no Resource.
const myResources = `from typing import Dict

from torchx.specs import Resource


def gpu_x_1() -> Dict[str, Resource]:
    return Resource(cpu=2, memMB=64 * 1024, gpu=2)


def my_small() -> Resource:
    return Resource(cpu=6, gpu=1, memMB=12000)


def efa_host() -> Resource:
    return Resource(
        cpu=96, gpu=8, memMB=1100000,
        capabilities={"node.kubernetes.io/instance-type": "p4d.24xlarge"},
        devices={"vpc.amazonaws.com/efa": 4},
    )


def cpu_box() -> Resource:
    return Resource(cpu=16, gpu=0, memMB=32768)


def boom() -> Resource:
    raise ValueError("no such cluster")


def not_one():
    return {"cpu": 1}
`

const myEntryPoints = `[torchx.named_resources]
gpu_x_1 = my_module.resources:gpu_x_1
gpu.small = my_module.resources:my_small
efa_host = my_module.resources:efa_host
cpu_box = my_module.resources:cpu_box
boom = my_module.resources:boom
not_one = my_module.resources:not_one
`

// resourceSite is a site directory holding my_module and its installed distribution
// (a dist-info with entry_points.txt, as pip installs it), dated an hour back so that
// a discovery of it may be cached at once.
func resourceSite(t *testing.T) string {
	t.Helper()
	site := t.TempDir()
	writeFile(t, filepath.Join(site, "my_module", "__init__.py"), "")
	writeFile(t, filepath.Join(site, "my_module", "resources.py"), myResources)
	dist := filepath.Join(site, "my_module-0.1.dist-info")
	writeFile(t, filepath.Join(dist, "METADATA"), "Metadata-Version: 2.1\nName: my-module\nVersion: 0.1\n")
	writeFile(t, filepath.Join(dist, "entry_points.txt"), myEntryPoints)
	ageTree(t, site)
	return site
}

// ageTree dates every file and directory under root an hour back.
func ageTree(t *testing.T, root string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	err := filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNamedResourceEntryPointsDifferential builds the shared builtins with -h naming
// entry point resources, through wick's Go builtins (the bridge reading the entry
// points) and through TorchX itself in the same environment: the AppDefs agree.
func TestNamedResourceEntryPointsDifferential(t *testing.T) {
	site := resourceSite(t)
	b := newBridge(t, t.TempDir(), site)
	b.CacheDir = t.TempDir()
	vectors := []diffVector{
		{Comp: "utils.sh", Argv: []string{"-h", "gpu_x_1", "nvidia-smi"}},
		{Comp: "utils.python", Argv: []string{"-h", "gpu_x_1", "-c", "print(1)"}},
		{Comp: "utils.sh", Argv: []string{"-h", "gpu.small", "true"}},
		{Comp: "utils.sh", Argv: []string{"-h", "cpu.small", "true"}}, // TorchX's own, untouched
		{Comp: "utils.sh", Argv: []string{"-h", "aws_t3.medium", "true"}},
		{Comp: "dist.ddp", Argv: []string{"-h", "efa_host", "-j", "2x8", "--script", "t.py"}},
		{Comp: "dist.ddp", Argv: []string{"-h", "gpu.small", "--script", "t.py"}},
		{Comp: "dist.spmd", Argv: []string{"-j", "2", "-h", "gpu_x_1", "--script", "t.py"}},
		{Comp: "dist.spmd", Argv: []string{"-j", "3", "--script", "t.py"}}, // default -h gpu.small, replaced
		{Comp: "dist.spmd", Argv: []string{"-j", "2", "-h", "cpu_box", "--script", "t.py"}},
		{Comp: "dist.spmd", Argv: []string{"-j", "1", "-h", "boom", "--script", "t.py"}},
		{Comp: "utils.sh", Argv: []string{"-h", "boom", "true"}},
		{Comp: "utils.sh", Argv: []string{"-h", "gpu_x_2", "true"}},
	}
	torchx := runTorchXBatch(t, vectors, site)
	ctx := context.Background()
	lookup := components.Lookup{Find: components.FindOptions{External: b}}
	for i, v := range vectors {
		name := fmt.Sprintf("%s %q", v.Comp, v.Argv)
		c, err := components.Find(v.Comp, components.FindOptions{})
		if err != nil {
			t.Fatal(err)
		}
		args, err := c.Parse(v.Argv, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		lookup.Ready(ctx, &args)
		got, err := c.AppDef(args)
		x := torchx[i]
		switch {
		case err != nil && x.Error != "":
		case err != nil:
			t.Errorf("%s: wick refuses what TorchX takes: %v", name, err)
		case x.Error != "":
			t.Errorf("%s: TorchX refuses (%s), wick takes: %+v", name, x.Error, got.Roles[0].Resource)
		default:
			for _, d := range diffApps(got, toApp(x.App)) {
				t.Errorf("%s: %s differs:\n wick   %s\n torchx %s", name, d.field, d.wick, d.torchx)
			}
		}
	}
}

// TestNamedResourceEntryPoints: what a user sees of an entry point resource, and the
// errors of one that fails, each on one line naming the entry point.
func TestNamedResourceEntryPoints(t *testing.T) {
	site := resourceSite(t)
	b := newBridge(t, t.TempDir(), site)
	ctx := context.Background()
	r, ok, err := b.NamedResource(ctx, "efa_host")
	want := spec.Resource{CPU: 96, GPU: 8, MemMB: 1100000,
		Capabilities: map[string]string{"node.kubernetes.io/instance-type": "p4d.24xlarge"},
		Devices:      map[string]int{"vpc.amazonaws.com/efa": 4}}
	if err != nil || !ok || !reflect.DeepEqual(r, want) {
		t.Errorf("efa_host: %+v %v %v, want %+v", r, ok, err, want)
	}
	if _, ok, err := b.NamedResource(ctx, "gpu.large"); ok || err != nil {
		t.Errorf("gpu.large (no entry point): ok %v, err %v; want wick's own table to answer", ok, err)
	}
	for name, want := range map[string]string{
		"gpu_x_2": `unknown named resource "gpu_x_2" (did you mean "gpu_x_1"?)`,
		"boom":    "named resource boom (torchx.named_resources = my_module.resources:boom) raised " + filepath.Join(site, "my_module", "resources.py") + ":27: ValueError: no such cluster",
		"not_one": "named resource not_one (torchx.named_resources = my_module.resources:not_one): it made a dict, not a torchx.specs.Resource",
	} {
		_, _, err := b.NamedResource(ctx, name)
		if err == nil || err.Error() != want {
			t.Errorf("%s: err = %v\nwant %s", name, err, want)
		}
	}

	// Through the Runner, as wick run and the UI's preview build a component.
	r2 := runner.New(runner.Builtin(), sched.Config{StateDir: t.TempDir()})
	_, app, err := r2.Materialize(ctx, "dist.spmd", []string{"-j", "2", "-h", "gpu_x_1", "--script", "t.py"},
		components.Lookup{Find: components.FindOptions{External: b}})
	if err != nil {
		t.Fatal(err)
	}
	if res := app.Roles[0].Resource; !reflect.DeepEqual(res, spec.Resource{CPU: 2, GPU: 2, MemMB: 64 * 1024}) {
		t.Errorf("dist.spmd -h gpu_x_1 resource %+v", res)
	}
	if !strings.Contains(strings.Join(app.Roles[0].Args, " "), "--nproc_per_node 2") {
		t.Errorf("dist.spmd -j 2 -h gpu_x_1: want nproc_per_node from the entry point's 2 GPUs: %q", app.Roles[0].Args)
	}
	_, _, err = r2.Materialize(ctx, "utils.sh", []string{"-h", "boom", "true"},
		components.Lookup{Find: components.FindOptions{External: b}})
	if err == nil || !strings.Contains(err.Error(), "utils.sh: named resource boom") || strings.Contains(err.Error(), "\n") {
		t.Errorf("utils.sh -h boom: %v", err)
	}
}

// countingPython is an interpreter that counts its starts in a file, then runs
// Debian's python3.
func countingPython(t *testing.T) (py string, starts func() int) {
	t.Helper()
	dir := t.TempDir()
	count := filepath.Join(dir, "starts")
	py = writeFile(t, filepath.Join(dir, "python3"), "#!/bin/sh\necho >>'"+count+"'\nexec "+testPython+" \"$@\"\n")
	if err := os.Chmod(py, 0o755); err != nil {
		t.Fatal(err)
	}
	return py, func() int {
		b, _ := os.ReadFile(count)
		return strings.Count(string(b), "\n")
	}
}

// TestEntryPointDiscoveryIsCached: which entry points exist is read once per
// environment and kept on disk; a later process asks Python nothing while nothing
// changed, and sees an installed package, an edited entry_points.txt and another
// PYTHONPATH.
func TestEntryPointDiscoveryIsCached(t *testing.T) {
	needTorchX(t)
	site := t.TempDir()
	ageTree(t, site)
	py, starts := countingPython(t)
	cache := t.TempDir()
	work := t.TempDir()
	bridge := func(extra ...string) *Bridge {
		b := newBridge(t, work, extra...)
		b.Python, b.CacheDir = py, cache
		return b
	}
	ctx := context.Background()
	lookup := func(b *Bridge, name string, wantOK bool, wantStarts int, when string) {
		t.Helper()
		_, ok, err := b.NamedResource(ctx, name)
		if err != nil || ok != wantOK {
			t.Fatalf("%s: %s: ok %v, err %v; want ok %v", when, name, ok, err, wantOK)
		}
		if n := starts(); n != wantStarts {
			t.Errorf("%s: %s: Python started %d times in all, want %d", when, name, n, wantStarts)
		}
	}
	lookup(bridge(site), "gpu.small", false, 1, "no entry points, first process")
	lookup(bridge(site), "gpu.small", false, 1, "no entry points, second process")
	files, _ := filepath.Glob(filepath.Join(cache, "python", "entrypoints-*.json"))
	if len(files) != 1 {
		t.Fatalf("cache files %q, want one", files)
	}
	if st, err := os.Stat(files[0]); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("cache file mode: %v %v, want 0600", st.Mode(), err)
	}

	// pip install: a new dist-info in the site directory.
	writeFile(t, filepath.Join(site, "my_module", "__init__.py"), "")
	writeFile(t, filepath.Join(site, "my_module", "resources.py"), myResources)
	writeFile(t, filepath.Join(site, "my_module-0.1.dist-info", "entry_points.txt"), "[torchx.named_resources]\ngpu_x_1 = my_module.resources:gpu_x_1\n")
	ageTree(t, site)
	lookup(bridge(site), "gpu_x_1", true, 3, "installed") // discovery, then the resource
	lookup(bridge(site), "gpu.small", false, 3, "installed, another process")

	// The entry_points.txt edited in place.
	writeFile(t, filepath.Join(site, "my_module-0.1.dist-info", "entry_points.txt"), myEntryPoints)
	ageTree(t, filepath.Join(site, "my_module-0.1.dist-info", "entry_points.txt"))
	lookup(bridge(site), "gpu.small", true, 5, "edited")

	// Another PYTHONPATH is another environment.
	lookup(bridge(), "gpu.small", false, 6, "without the site")
	lookup(bridge(), "gpu.small", false, 6, "without the site, again")

	// No Python at all, or one that is not Python: wick's table answers for its own
	// names; another name says why the entry points were not read.
	broken := writeFile(t, filepath.Join(work, "broken-python"), "#!/bin/sh\necho 'pyenv: python3: command not found' >&2\nexit 127\n")
	if err := os.Chmod(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, py := range []string{filepath.Join(work, "no-such-python"), broken} {
		b := bridge(site)
		b.Python = py
		if _, ok, err := b.NamedResource(ctx, "gpu.small"); ok || err != nil {
			t.Errorf("%s: gpu.small: ok %v, err %v; want wick's table to answer", py, ok, err)
		}
	}
	b := bridge(site)
	b.Python = broken
	_, _, err := b.NamedResource(ctx, "gpu_x_1")
	if err == nil || !strings.HasPrefix(err.Error(), `unknown named resource "gpu_x_1": the torchx.named_resources entry points of `+broken+" could not be read: ") ||
		!strings.Contains(err.Error(), "pyenv: python3: command not found") {
		t.Errorf("gpu_x_1 with a broken Python: %v", err)
	}
}

// BenchmarkNamedResourceNotRegistered is the cost a -h that no entry point names adds
// to a process: a fresh Bridge per iteration, with the discovery on disk (cached) and
// without a cache directory (Python asked each time).
func BenchmarkNamedResourceNotRegistered(b *testing.B) {
	needTorchX(b)
	ctx := context.Background()
	warm := newBridge(b, b.TempDir())
	for _, c := range []struct{ name, cache string }{{"cached", b.TempDir()}, {"uncached", ""}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				br := &Bridge{Python: warm.Python, Dir: warm.Dir, Env: warm.Env, CacheDir: c.cache}
				if _, ok, err := br.NamedResource(ctx, "gpu.small"); ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
	}
}
