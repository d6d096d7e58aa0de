package pycomp

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/spec"
)

// conformanceCases are argument vectors of the builtins wick and TorchX both have.
// Sources: TorchX's own component tests and docstrings (pytorch/torchx), and the edge
// cases wick's parser has to agree on.
var conformanceCases = []struct {
	comp string
	argv []string
	src  string
}{
	// torchx/components/test/dist_test.py (059fa0fd) :16-18, test_ddp_mounts.
	{"dist.ddp", []string{"--script", "foo.py", "--mounts", "type=bind,src=/dst,dst=/dst,readonly"}, "dist_test.py:16"},
	// :20-34, test_ddp_parse_j: -j 1, 1x2, 1:2x3.
	{"dist.ddp", []string{"--script", "foo.py", "-j", "1"}, "dist_test.py:22"},
	{"dist.ddp", []string{"--script", "foo.py", "-j", "1x2"}, "dist_test.py:22"},
	{"dist.ddp", []string{"--script", "foo.py", "-j", "1:2x3"}, "dist_test.py:22"},
	// torchx/components/dist.py (b72ba038) :182-186, ddp's usage lines.
	{"dist.ddp", []string{"-j", "2x8", "--name", "my_experiment/trial_1", "--script", "path/to/my/trainer.py", "--", "-foo", "bar"}, "dist.py:183"},
	{"dist.ddp", []string{"-j", "2x8", "--name", "my_experiment/trial_1", "-m", "path.to.my.trainer", "--", "-foo", "bar"}, "dist.py:185"},
	// Edge cases: a named resource, env and resources, retries, elastic, debug, tee,
	// a module with varargs, the rendezvous options.
	{"dist.ddp", []string{"--script", "train.py", "-h", "gpu.small", "-j", "2x4"}, "edge"},
	{"dist.ddp", []string{"--script", "train.py", "--cpu", "8", "--gpu", "2", "--memMB", "4096", "--env", "A=1,B=2", "--max_retries", "3"}, "edge"},
	{"dist.ddp", []string{"-m", "pkg.train", "-j", "1:4x2", "--debug", "True", "--tee", "1", "--", "--lr", "0.1"}, "edge"},
	{"dist.ddp", []string{"--script", "train.py", "--rdzv_port", "29501", "--rdzv_backend", "static"}, "edge"},
	{"dist.ddp", []string{"--script", "train.py", "-j", "2"}, "edge"},
	{"dist.ddp", []string{"--script", "train.py", "--env", "A=1,B=x,y", "--", "--", "--flag"}, "edge"},
	// Both refuse these: the comparison is then that both do.
	{"dist.ddp", []string{"--script", "train.py", "--env", "A=1,B=x=y"}, "refused"},
	{"dist.ddp", []string{"--script", "train.py", "-j", "0x2"}, "refused"},
	{"utils.echo", []string{"--num_replicas", "two"}, "refused"},
	// dist.spmd: dist.py:88-90 usage lines (by script, by module).
	{"dist.spmd", []string{"-j", "2x8", "--name", "my_experiment/trial_1", "--script", "path/to/my/trainer.py", "--", "-foo", "bar"}, "dist.py:88"},
	{"dist.spmd", []string{"-j", "2x8", "--name", "my_experiment/trial_1", "-m", "path.to.my.trainer", "--", "-foo", "bar"}, "dist.py:90"},
	{"dist.spmd", []string{"--script", "train.py", "-h", "gpu.medium", "--env", "X=y", "--mounts", "type=volume,src=vol,dst=/v"}, "edge"},
	// torchx/components/test/utils_test.py (efa57c75): sh, python, touch, echo, copy;
	// with arguments a user would give.
	{"utils.echo", nil, "utils_test.py:23"},
	{"utils.echo", []string{"--msg", "hello world", "--num_replicas", "3"}, "edge"},
	{"utils.echo", []string{"--msg", `it's "quoted" $HOME ${app_id}`}, "edge"},
	{"utils.touch", []string{"--file", "/tmp/f"}, "utils_test.py:20"},
	{"utils.copy", []string{"--src", "/a", "--dst", "s3://b/c"}, "utils_test.py:26"},
	{"utils.sh", []string{"echo", "hi"}, "utils_test.py:14"},
	{"utils.sh", []string{"--", "sh", "-c", "echo $X && exit 3"}, "edge"},
	{"utils.sh", []string{"--num_replicas", "2", "--env", "A=B", "--max_retries", "1", "--", "echo", "$A"}, "edge"},
	{"utils.sh", []string{"-h", "cpu.small", "--mounts", "type=bind,src=/a,dst=/b", "--", "ls", "/b"}, "edge"},
	{"utils.python", []string{"-c", "print(1)"}, "utils_test.py:17"},
	{"utils.python", []string{"--script", "main.py", "--", "--lr", "0.1"}, "edge"},
	{"utils.python", []string{"-m", "http.server", "--num_replicas", "2", "--cpu", "4", "--gpu", "1", "--memMB", "2048", "--name", "srv"}, "edge"},
	{"utils.binary", []string{"--entrypoint", "/bin/date", "--", "-u"}, "edge"},
}

// difference is a deliberate difference between wick's Go builtin and TorchX's, on one
// field of the AppDef: documented here, and in the README's list.
type difference struct {
	comp, field string
	why         string
}

// deliberate lists them (none in the AppDef at TorchX b72ba038: every field of every
// case agrees); paramDifferences lists those of the parameters.
var deliberate = []difference{}

// paramDifferences are the parameters wick's builtins add to TorchX's: "param NAME"
// for one TorchX lacks.
var paramDifferences = []difference{
	{"dist.ddp", "param metadata", "wick's dist.ddp takes --metadata for the scheduler (TorchX's ddp has none; TorchX's AppDef metadata is empty)"},
	{"dist.spmd", "param metadata", "as dist.ddp"},
	{"utils.copy", "param mounts", "wick's utils.copy takes --mounts (docker), so that a copy can read a bind-mounted host path; TorchX's has none"},
	{"utils.python", "param mounts", "as utils.copy"},
}

// TestConformanceWithTorchX compares, field by field, the AppDef of each builtin both
// have with TorchX's, for each argument vector of conformanceCases.
func TestConformanceWithTorchX(t *testing.T) {
	b := newBridge(t, t.TempDir())
	ctx := context.Background()
	used := map[difference]bool{}
	// TorchX's AppDefs first, four Pythons at a time (each is a process start).
	torchx := make([]*spec.AppDef, len(conformanceCases))
	errs := make([]error, len(conformanceCases))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, tc := range conformanceCases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			_, torchx[i], errs[i] = b.Materialize(ctx, tc.comp, tc.argv, nil)
		}()
	}
	wg.Wait()
	for i, tc := range conformanceCases {
		name := tc.comp + " " + strings.Join(tc.argv, " ")
		comp, err := components.Find(tc.comp, components.FindOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		args, err := comp.Parse(tc.argv, nil)
		var got *spec.AppDef
		if err == nil {
			got, err = comp.AppDef(args)
		}
		want := torchx[i]
		if tc.src == "refused" && (err == nil || errs[i] == nil) {
			t.Errorf("%s: refused by wick (%v) and TorchX (%v)? want both", name, err, errs[i])
			continue
		}
		switch {
		case err != nil && errs[i] != nil:
			continue // both refuse it
		case err != nil:
			t.Errorf("%s: wick refuses what TorchX takes: %v", name, err)
			continue
		case errs[i] != nil:
			t.Errorf("%s: TorchX refuses what wick takes: %v", name, errs[i])
			continue
		}
		for _, d := range diffApps(got, want) {
			i := slices.IndexFunc(deliberate, func(x difference) bool { return x.comp == tc.comp && x.field == d.field })
			if i >= 0 {
				used[deliberate[i]] = true
				continue
			}
			t.Errorf("%s (%s): %s differs:\n wick   %s\n torchx %s", name, tc.src, d.field, d.wick, d.torchx)
		}
	}
	checkParams(t, b, used)
	for _, d := range slices.Concat(deliberate, paramDifferences) {
		if !used[d] {
			t.Errorf("documented difference %s %s never occurs: drop it from the list", d.comp, d.field)
		}
	}
}

type fieldDiff struct{ field, wick, torchx string }

// diffApps lists the fields that differ: the app's name and roles' count, then per
// role name, image, entrypoint, args, env, replicas, retries (count and policy),
// resources, ports and mounts.
func diffApps(w, x *spec.AppDef) []fieldDiff {
	var out []fieldDiff
	add := func(field string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			out = append(out, fieldDiff{field, fmt.Sprintf("%v", a), fmt.Sprintf("%v", b)})
		}
	}
	add("name", w.Name, x.Name)
	if len(w.Roles) != len(x.Roles) {
		add("roles", len(w.Roles), len(x.Roles))
		return out
	}
	for i := range w.Roles {
		a, b := w.Roles[i], x.Roles[i]
		add("role name", a.Name, b.Name)
		add("image", a.Image, b.Image)
		add("entrypoint", a.Entrypoint, b.Entrypoint)
		add("args", a.Args, b.Args)
		add("env", nonNil(a.Env), nonNil(b.Env))
		add("num_replicas", a.NumReplicas, b.NumReplicas)
		add("min_replicas", a.MinReplicas, b.MinReplicas)
		add("max_retries", a.MaxRetries, b.MaxRetries)
		add("retry_policy", a.RetryPolicy, b.RetryPolicy)
		add("resource", resourceText(a.Resource), resourceText(b.Resource))
		add("port_map", nonNil(a.PortMap), nonNil(b.PortMap))
		add("mounts", fmt.Sprint(a.Mounts), fmt.Sprint(b.Mounts))
	}
	return out
}

func nonNil[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

func resourceText(r spec.Resource) string {
	return fmt.Sprintf("cpu=%d gpu=%d memMB=%d capabilities=%v devices=%v", r.CPU, r.GPU, r.MemMB, nonNil(r.Capabilities), nonNil(r.Devices))
}

// checkParams compares each builtin's parameters with TorchX's: name, type, whether
// required or optional, default; extra parameters only as paramDifferences says.
func checkParams(t *testing.T, b *Bridge, used map[difference]bool) {
	t.Helper()
	all, err := b.All(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	torchx := map[string]*components.Component{}
	for _, c := range all {
		torchx[c.Name] = c
	}
	for _, c := range components.Builtins() {
		x := torchx[c.Name]
		if x == nil {
			continue // demo.train: wick's own
		}
		for _, p := range c.Params {
			i := slices.IndexFunc(x.Params, func(q components.Param) bool { return q.Name == p.Name })
			if i < 0 {
				d := slices.IndexFunc(paramDifferences, func(d difference) bool { return d.comp == c.Name && d.field == "param "+p.Name })
				if d < 0 {
					t.Errorf("%s: wick has --%s, TorchX does not", c.Name, p.Name)
				} else {
					used[paramDifferences[d]] = true
				}
				continue
			}
			q := x.Params[i]
			if p.Type != q.Type || p.Required != q.Required || p.Optional != q.Optional || !sameDefault(p, q) {
				t.Errorf("%s --%s: wick %s required=%v optional=%v default %q; TorchX %s required=%v optional=%v default %q",
					c.Name, p.Name, p.Type, p.Required, p.Optional, p.Default, q.Type, q.Required, q.Optional, q.Default)
			}
		}
		for _, q := range x.Params {
			if !slices.ContainsFunc(c.Params, func(p components.Param) bool { return p.Name == q.Name }) {
				t.Errorf("%s: TorchX has --%s, wick does not", c.Name, q.Name)
			}
		}
		if c.Varargs != x.Varargs {
			t.Errorf("%s: varargs %q, TorchX %q", c.Name, c.Varargs, x.Varargs)
		}
	}
}

// sameDefault compares defaults as values: TorchX writes bools True/False, wick
// true/false.
func sameDefault(p, q components.Param) bool {
	if p.Type == components.Bool {
		return strings.EqualFold(p.Default, q.Default)
	}
	return p.Default == q.Default
}
