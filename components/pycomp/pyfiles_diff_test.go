package pycomp

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestPyComponentsDifferentialWithTorchX: .py components, wick's AppDef (the Bridge:
// what `wick run FILE.py:FN` and TorchX's builtins wick lacks launch) against the
// AppDef TorchX materializes itself (testdata/differential.py, one Python process for
// the batch), field by field. The components: TorchX's own that wick has no copy of
// (torchx/components/utils.py, metrics.py, serve.py), the my_trainer of TorchX's docs
// (pycomp_test.go), and userComps, written as users write them (defaults, bools,
// lists, dicts, Optional, varargs); the vectors: the cases below and seeded random
// draws (WICK_DIFF_SEED replays). wick's side starts one Python per vector (the
// Bridge's cost, as a user pays it), so the draws are few.
func TestPyComponentsDifferentialWithTorchX(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "my_trainer_spec.py"), myTrainer)
	writeFile(t, filepath.Join(dir, "user.py"), userComps)
	b := newBridge(t, dir)
	seed, rng := pyDiffSeed(t)

	vectors := slices.Clone(pyDiffCases)
	for range 24 {
		vectors = append(vectors, randomUserVector(rng))
	}
	// differential.py runs in the package directory: give it the files' paths.
	abs := make([]diffVector, len(vectors))
	for i, v := range vectors {
		abs[i] = v
		if f, fn, ok := cutFile(v.Comp); ok {
			abs[i].Comp = filepath.Join(dir, f) + ":" + fn
		}
	}
	torchx := runTorchXBatch(t, abs)

	start := time.Now()
	agree, documented := 0, map[string]int{}
	for i, v := range vectors {
		name := fmt.Sprintf("%s %q (%s)", v.Comp, v.Argv, v.Src)
		_, got, err := b.Materialize(context.Background(), v.Comp, v.Argv, v.Defaults)
		x := torchx[i]
		switch {
		case err != nil && x.Error != "":
			agree++
		case err != nil:
			if d := knownDifference(err); d != "" {
				documented[d]++
				continue
			}
			t.Errorf("%s: wick refuses what TorchX takes: %v", name, err)
		case x.Error != "":
			t.Errorf("%s: TorchX refuses what wick takes: %s", name, x.Error)
		default:
			diffs := diffApps(got, toApp(x.App))
			if len(diffs) == 0 {
				agree++
			}
			for _, d := range diffs {
				t.Errorf("%s: %s differs:\n wick   %s\n torchx %s", name, d.field, d.wick, d.torchx)
			}
		}
	}
	t.Logf("agreement: %d of %d .py vectors agree; %d differ as documented %v (seed %d); wick's side %.1f s",
		agree, len(vectors), sum(documented), documented, seed, time.Since(start).Seconds())
}

// cutFile splits "FILE.py:FN".
func cutFile(name string) (string, string, bool) {
	i := len(name) - 1
	for i >= 0 && name[i] != ':' {
		i--
	}
	if i < 0 || filepath.Ext(name[:i]) != ".py" {
		return "", "", false
	}
	return name[:i], name[i+1:], true
}

// pyDiffSeed is the seed of a run: WICK_DIFF_SEED, else the clock.
func pyDiffSeed(t *testing.T) (uint64, *rand.Rand) {
	t.Helper()
	seed := diffSeedFromEnv(t)
	t.Logf("seed %d (replay: WICK_DIFF_SEED=%d go test -run %s ./components/pycomp)", seed, seed, t.Name())
	return seed, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// userComps are components as users write them: defaults, bools, lists, dicts,
// Optional, varargs (the argument types torchx/specs/builders.py parses).
const userComps = `from typing import Dict, List, Optional

import torchx.specs as specs


def trainer(
    *script_args: str,
    lr: float = 0.1,
    epochs: int = 3,
    debug: bool = False,
    tags: Optional[List[str]] = None,
    env: Optional[Dict[str, str]] = None,
    name: Optional[str] = None,
    nnodes: int = 1,
) -> specs.AppDef:
    """Trains a model.

    Args:
        script_args: arguments of train.py
        lr: learning rate
        epochs: number of epochs
        debug: print more
        tags: tags of the run
        env: extra environment
        name: the run's name
        nnodes: number of nodes
    """
    args = ["train.py", "--lr", str(lr), "--epochs", str(epochs)]
    if debug:
        args.append("--debug")
    for t in tags or []:
        args += ["--tag", t]
    return specs.AppDef(
        name=name or "trainer",
        roles=[
            specs.Role(
                name="trainer",
                image="img:1",
                entrypoint="python",
                args=args + list(script_args),
                env=dict(env or {}),
                num_replicas=nnodes,
                resource=specs.Resource(cpu=2, gpu=0, memMB=2048),
            )
        ],
    )


def sweep(
    model: str,
    sizes: List[int],
    ratios: Dict[str, float],
    dry: bool = True,
    seed: Optional[int] = None,
) -> specs.AppDef:
    """A component with required lists and dicts.

    Args:
        model: the model
        sizes: batch sizes
        ratios: mix of datasets
        dry: do not train
        seed: random seed
    """
    args = [model] + [str(s) for s in sizes] + ["%s=%s" % kv for kv in sorted(ratios.items())]
    if seed is not None:
        args.append("--seed=%d" % seed)
    return specs.AppDef(
        name="sweep",
        roles=[specs.Role(name="s", image="img:1", entrypoint="echo", args=args + (["--dry"] if dry else []))],
    )
`

// pyDiffCases: TorchX's own components wick lacks (torchx/components/utils.py booth
// and binary, metrics.py tensorboard, serve.py torchserve: their docstrings' and
// tests' arguments), my_trainer (TorchX's docs), and userComps.
var pyDiffCases = []diffVector{
	{Comp: "utils.booth", Argv: []string{"--x1", "1", "--x2", "2"}, Src: "utils.py booth"},
	{Comp: "utils.booth", Argv: []string{"--x1", "-1.5", "--x2=3", "--trial_idx", "2", "--tracker_base", "/tmp/t"}, Src: "utils.py booth"},
	{Comp: "utils.booth", Argv: []string{"--x1", "x", "--x2", "2"}, Src: "utils.py booth: not a float"},
	{Comp: "utils.booth", Argv: nil, Src: "utils.py booth: required"},
	{Comp: "utils.binary", Argv: []string{"--entrypoint", "/bin/date", "--", "-u"}, Src: "utils.py binary"},
	{Comp: "utils.binary", Argv: []string{"--entrypoint", "echo", "--env", "A=1,B=2", "--max_retries", "2", "a"}, Src: "utils.py binary"},
	{Comp: "metrics.tensorboard", Argv: []string{"--logdir", "/tmp/logs"}, Src: "metrics.py tensorboard"},
	{Comp: "metrics.tensorboard", Argv: []string{"--logdir", "/tmp/logs", "--duration", "30", "--port", "6007"}, Src: "metrics.py tensorboard"},
	{Comp: "serve.torchserve", Argv: []string{"--model_path", "s3://m/model.mar", "--management_api", "http://localhost:8081"}, Src: "serve.py torchserve"},
	{Comp: "serve.torchserve", Argv: []string{"--model_path", "m.mar", "--management_api", "http://h:8081", "--params", "batch_size=4,initial_workers=2"}, Src: "serve.py torchserve"},
	{Comp: "my_trainer_spec.py:my_trainer", Argv: []string{"--foo", "3", "--bar=imagenet", "--", "--seed", "1"}, Src: "cli/__init__.py:78 my_trainer"},
	{Comp: "my_trainer_spec.py:my_trainer", Argv: []string{"--foo", "3"}, Src: "my_trainer: bar required"},
	{Comp: "my_trainer_spec.py:my_trainer", Argv: []string{"--foo", "3", "--bar", "x"}, Defaults: map[string]string{"lr": "0.5"}, Src: "my_trainer: [component:] default"},
	{Comp: "user.py:trainer", Argv: nil, Src: "user: all defaults"},
	{Comp: "user.py:trainer", Argv: []string{"--debug", "True", "--tags", "a,b", "--env", "A=1,B=2", "--name", "r1", "--", "--x", "1"}, Src: "user: every type"},
	{Comp: "user.py:trainer", Argv: []string{"--debug", "False", "--epochs", "x"}, Src: "user: bad int"},
	{Comp: "user.py:trainer", Argv: []string{"--nnodes", "2", "--lr=1e-3"}, Defaults: map[string]string{"epochs": "9", "debug": "True"}, Src: "user: defaults from .torchxconfig"},
	{Comp: "user.py:sweep", Argv: []string{"--model", "m", "--sizes", "1,2,4", "--ratios", "a=0.5,b=0.5"}, Src: "user: lists and dicts"},
	{Comp: "user.py:sweep", Argv: []string{"--model", "m", "--sizes", "1,x", "--ratios", "a=1"}, Src: "user: bad list item"},
	{Comp: "user.py:sweep", Argv: []string{"--model", "m", "--sizes", "8", "--ratios", "a=1", "--dry", "False", "--seed", "7"}, Src: "user: Optional[int]"},
}

// randomUserVector draws a vector for userComps' trainer.
func randomUserVector(rng *rand.Rand) diffVector {
	pick := func(vs ...string) string { return vs[rng.IntN(len(vs))] }
	var argv []string
	for _, p := range []struct {
		name string
		vals []string
	}{
		{"lr", []string{"0.1", "1e-4", "x"}},
		{"epochs", []string{"1", "10", "-1", "x"}},
		{"debug", []string{"True", "False", "true", "0"}},
		{"tags", []string{"a", "a,b", ""}},
		{"env", []string{"A=1", "A=1,B=2", "bad"}},
		{"name", []string{"run", "a b"}},
		{"nnodes", []string{"1", "2", "0"}},
	} {
		if rng.IntN(3) != 0 {
			continue
		}
		v := pick(p.vals...)
		if rng.IntN(2) == 0 || v == "" || v[0] == '-' {
			argv = append(argv, "--"+p.name+"="+v)
		} else {
			argv = append(argv, "--"+p.name, v)
		}
	}
	if rng.IntN(2) == 0 {
		argv = append(argv, "--", pick("--data", "x"), "1")
	}
	return diffVector{Comp: "user.py:trainer", Argv: argv, Src: "random"}
}

// sum adds up the counts of m.
func sum(m map[string]int) int {
	n := 0
	for _, k := range m {
		n += k
	}
	return n
}
