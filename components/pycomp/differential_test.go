package pycomp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// The differential test: argument vectors for every builtin wick and TorchX share,
// each run through wick's Go builtin and through TorchX itself (materialize_appdef,
// ../shared/vendor/python, under /usr/bin/python3: one Python process for the whole
// batch, testdata/differential.py). An outcome agrees when both refuse the vector, or
// both build the same AppDef field by field (diffApps). Every other outcome must be a
// documented difference (docs/torchx.md: knownDifference), or the test fails.
//
// The vectors: the cases of conformanceCases (TorchX's own tests and docstrings, cited
// there), the cases below (pytorch/torchx's tests, cited by file and line, and issue
// #33's), and diffRandom random draws per builtin over each flag's valid and invalid
// values and spellings. The seed is printed; WICK_DIFF_SEED=N replays a run.

// diffRandom is how many random vectors each shared builtin gets per run.
const diffRandom = 60

// diffCases are vectors from pytorch/torchx's tests (torchx/components/test/
// dist_test.py, utils_test.py; torchx/specs/test/builders_test.py, at 059fa0fd) and
// from issue #33, with .torchxconfig [component:NAME] defaults where the case has them.
var diffCases = []diffVector{
	// issue #33: a bool takes the next token; 0 is false and --image stays a flag.
	{Comp: "dist.ddp", Argv: []string{"--script", "t.py", "--debug", "0", "--image", "foo:1"}, Src: "issue 33"},
	{Comp: "dist.ddp", Argv: []string{"--scr", "t.py"}, Src: "issue 33: abbreviation"},
	{Comp: "dist.ddp", Argv: []string{"--script", "a.py", "--script", "b.py"}, Src: "issue 33: last value wins"},
	{Comp: "dist.spmd", Argv: []string{"-j", "2x8", "-h", "aws_p4d.24xlarge", "--script", "t.py"}, Src: "dist.py:96 (spmd docstring)"},
	// builders_test.py: bool arguments as strings ("True"/"False"), varargs after "--".
	{Comp: "dist.ddp", Argv: []string{"--script", "t.py", "--debug", "True"}, Src: "builders_test.py (test_load_from_fn_bool)"},
	{Comp: "dist.ddp", Argv: []string{"--script", "t.py", "--debug", "False"}, Src: "builders_test.py (test_load_from_fn_bool)"},
	{Comp: "utils.sh", Argv: []string{"--", "echo", "--x", "-y"}, Src: "builders_test.py (test_varargs)"},
	// .torchxconfig [component:dist.ddp] defaults, as strings (config.py load_sections).
	{Comp: "dist.ddp", Argv: []string{"--script", "t.py"}, Defaults: map[string]string{"j": "2x4", "debug": "True", "env": "A=B,C=D"}, Src: "config.py:358 (component defaults)"},
	{Comp: "dist.ddp", Argv: []string{"--script", "t.py"}, Defaults: map[string]string{"debug": "1"}, Src: "issue 33: debug = 1"},
	{Comp: "dist.ddp", Argv: []string{"--script", "t.py", "-j", "1x1"}, Defaults: map[string]string{"j": "2x4", "cpu": "4"}, Src: "config.py: argv wins over defaults"},
	{Comp: "utils.sh", Argv: nil, Defaults: map[string]string{"args": "-a b --c=d e"}, Src: "config.py:384 (vararg default)"},
}

// diffVector is one argument vector and its outcome on each side.
type diffVector struct {
	Comp     string            `json:"name"`
	Argv     []string          `json:"argv"`
	Defaults map[string]string `json:"defaults,omitempty"`
	Src      string            `json:"-"`
}

type torchxOutcome struct {
	App   *appJSON `json:"app"`
	Error string   `json:"error"`
}

// knownDifference names the documented difference (docs/torchx.md) that explains a
// vector wick refuses and TorchX takes, or "".
func knownDifference(wickErr error) string {
	msg := wickErr.Error()
	switch {
	case strings.Contains(msg, "app name ") && (strings.Contains(msg, "may hold only") || strings.Contains(msg, "must start with")):
		return "app names must be safe as a path"
	case strings.Contains(msg, "TorchX would read it as false"), strings.Contains(msg, "want a bool (true or false)"):
		return "a bool's value TorchX reads as false is an error"
	case strings.Contains(msg, "a node needs at least 1 process"):
		return "-j Nx0 is refused"
	case strings.Contains(msg, "a resource cannot be negative"):
		return "negative resources are refused"
	}
	return ""
}

// knownExtension names the documented difference that explains a vector TorchX
// refuses and wick takes, or "".
func knownExtension(v diffVector) string {
	if v.Comp == "dist.spmd" && slices.ContainsFunc(v.Argv, elasticJ.MatchString) {
		return "dist.spmd -j MIN:MAXxM is read (TorchX's StructuredJArgument raises)"
	}
	return ""
}

// elasticJ is a -j value with MIN:MAX nodes.
var elasticJ = regexp.MustCompile(`(^|=)[0-9]+:[0-9]+x[0-9]+$`)

func TestDifferentialWithTorchX(t *testing.T) {
	needTorchX(t)
	seed := diffSeedFromEnv(t)
	t.Logf("seed %d (replay: WICK_DIFF_SEED=%d go test -run TestDifferentialWithTorchX ./components/pycomp)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	vectors := slices.Clone(diffCases)
	for _, c := range conformanceCases {
		vectors = append(vectors, diffVector{Comp: c.comp, Argv: c.argv, Src: c.src})
	}
	for _, c := range sharedBuiltins(t) {
		for range diffRandom {
			vectors = append(vectors, diffVector{Comp: c.Name, Argv: randomArgv(rng, c), Src: "random"})
		}
	}
	torchx := runTorchXBatch(t, vectors)

	agree, documented := 0, map[string]int{}
	for i, v := range vectors {
		name := fmt.Sprintf("%s %q (%s)", v.Comp, v.Argv, v.Src)
		if len(v.Defaults) > 0 {
			name += fmt.Sprintf(" defaults %v", v.Defaults)
		}
		got, err := wickAppDef(v)
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
			if d := knownExtension(v); d != "" {
				documented[d]++
				continue
			}
			t.Errorf("%s: TorchX refuses what wick takes: %s", name, x.Error)
		default:
			diffs := diffApps(got, toApp(x.App))
			if len(diffs) == 0 {
				agree++
				continue
			}
			for _, d := range diffs {
				t.Errorf("%s: %s differs:\n wick   %s\n torchx %s", name, d.field, d.wick, d.torchx)
			}
		}
	}
	n := 0
	for _, k := range documented {
		n += k
	}
	t.Logf("agreement: %d of %d vectors agree; %d differ as documented %v; %d differ otherwise (seed %d)",
		agree, len(vectors), n, documented, len(vectors)-agree-n, seed)
}

// sharedBuiltins are wick's Go builtins that TorchX also has.
func sharedBuiltins(t *testing.T) []*components.Component {
	var out []*components.Component
	for _, c := range components.Builtins() {
		if c.Name != "demo.train" {
			out = append(out, c)
		}
	}
	if len(out) != 8 {
		t.Fatalf("%d shared builtins, want 8", len(out))
	}
	return out
}

// wickAppDef builds v's AppDef with wick's Go builtin.
func wickAppDef(v diffVector) (*spec.AppDef, error) {
	c, err := components.Find(v.Comp, components.FindOptions{})
	if err != nil {
		return nil, err
	}
	args, err := c.Parse(v.Argv, v.Defaults)
	if err != nil {
		return nil, err
	}
	return c.AppDef(args)
}

// runTorchXBatch builds every vector's AppDef with TorchX, in one Python process,
// with the extra PYTHONPATH entries first (packages registering entry points).
func runTorchXBatch(t *testing.T, vectors []diffVector, extra ...string) []torchxOutcome {
	t.Helper()
	in, err := json.Marshal(vectors)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(2*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, testPython, filepath.Join("testdata", "differential.py"))
	cmd.Env = append(torchxEnv(t, extra...), "LOGLEVEL=WARNING")
	cmd.Stdin = bytes.NewReader(in)
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("TorchX's side: %v\n%s", err, stderr.String())
	}
	var res []torchxOutcome
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(vectors) {
		t.Fatalf("TorchX's side: %d answers for %d vectors: %v", len(res), len(vectors), err)
	}
	return res
}

// Values a random vector draws from, per parameter: valid ones and invalid ones
// (each side must refuse those, or differ as documented).
var diffValues = map[string][]string{
	"j":            {"1", "2", "1x2", "2x4", "1:2x3", "2:4x1", "0x2", "x", "2x0", "-1"},
	"h":            {"gpu.small", "cpu.nano", "gpu.large", "aws_p4d.24xlarge", "aws_t3.medium", "aws_g5.12xlarge", "nosuch"},
	"env":          {"A=1", "A=1,B=2", "A=1,B=x,y", "K=a;b,L=2", "A=1,B=x=y", "novalue", ""},
	"mounts":       {"type=bind,src=/a,dst=/b", "type=volume,src=v,dst=/v", "type=bind,src=/a,dst=/b,readonly", "type=bind,src=/a,dst=/b,type=volume,src=v,dst=/v", "type=nfs,src=a,dst=b", "bad"},
	"script":       {"train.py", "a/b.py", "x"},
	"m":            {"pkg.train", "mod"},
	"name":         {"/", "exp/run", "foo/", "/bar", "trial", "a/b/c"},
	"image":        {"foo:1", "ghcr.io/x/y:2", "img"},
	"debug":        {"True", "true", "False", "false", "0", "no", "off", "1", "yes", "maybe"},
	"rdzv_backend": {"c10d", "static", "etcd"},
	"rdzv_conf":    {"timeout=60", "join_timeout=10,timeout=5"},
	"rdzv_port":    {"29500", "1", "0", "x"},
	"tee":          {"0", "1", "2", "3", "x"},
	"cpu":          {"0", "1", "4", "64", "-1", "x", "1.5"},
	"gpu":          {"0", "1", "8", "-1", "x"},
	"memMB":        {"0", "512", "4096", "-1", "x"},
	"num_replicas": {"1", "2", "3", "x"},
	"max_retries":  {"0", "1", "3", "x"},
	"msg":          {"hello", "hello world", "it's $HOME", ""},
	"file":         {"/tmp/f", "f.txt"},
	"src":          {"/a", "s3://b/c"},
	"dst":          {"/b", "s3://d/e"},
	"entrypoint":   {"/bin/date", "python3"},
	"c":            {"print(1)", "import sys; print(sys.argv)"},
}

// diffSkip are parameters wick's builtins have and TorchX's lack (paramDifferences):
// never drawn.
var diffSkip = map[string]bool{"metadata": true}

// randomArgv draws an argument vector for c: some of its parameters (the required
// ones most of the time), each in one of argparse's spellings (--p v, --p=v, -p v for
// a one-letter name, an unambiguous abbreviation, given twice), then maybe varargs.
func randomArgv(rng *rand.Rand, c *components.Component) []string {
	var argv []string
	for _, p := range c.Params {
		if diffSkip[p.Name] || (c.Name == "utils.copy" || c.Name == "utils.python") && p.Name == "mounts" {
			continue
		}
		use := rng.IntN(4) == 0
		if p.Required {
			use = rng.IntN(10) != 0
		}
		if (p.Name == "script" || p.Name == "m") && c.Name != "utils.python" {
			use = false // one of them, below
		}
		if !use {
			continue
		}
		argv = append(argv, spell(rng, c, p.Name, value(rng, p))...)
	}
	if c.Name == "dist.ddp" || c.Name == "dist.spmd" {
		switch rng.IntN(10) {
		case 0: // neither: both must refuse
		case 1:
			argv = append(argv, spell(rng, c, "script", "t.py")...)
			argv = append(argv, spell(rng, c, "m", "pkg.mod")...)
		case 2, 3, 4:
			argv = append(argv, spell(rng, c, "m", diffValues["m"][rng.IntN(2)])...)
		default:
			argv = append(argv, spell(rng, c, "script", diffValues["script"][rng.IntN(3)])...)
		}
	}
	if c.Varargs != "" && rng.IntN(2) == 0 {
		tails := [][]string{{"--", "--lr", "0.1"}, {"arg1", "-x", "--y=2"}, {"--", "-foo", "bar"}, {"echo", "hi"}}
		argv = append(argv, tails[rng.IntN(len(tails))]...)
	}
	return argv
}

// value draws a value for p.
func value(rng *rand.Rand, p components.Param) string {
	if vs, ok := diffValues[p.Name]; ok {
		return vs[rng.IntN(len(vs))]
	}
	switch p.Type {
	case components.Int:
		return []string{"0", "1", "7", "x"}[rng.IntN(4)]
	case components.Bool:
		return diffValues["debug"][rng.IntN(len(diffValues["debug"]))]
	}
	return []string{"v", "a b", "x,y"}[rng.IntN(3)]
}

// spell writes --name value in one of the spellings argparse reads.
func spell(rng *rand.Rand, c *components.Component, name, v string) []string {
	long := "--" + name
	switch rng.IntN(6) {
	case 0:
		return []string{long + "=" + v}
	case 1:
		if len(name) == 1 {
			return []string{"-" + name, v}
		}
	case 2:
		if abbr := abbreviation(c, name); abbr != "" {
			return []string{"--" + abbr, v}
		}
	case 3:
		// Given twice: the last value wins.
		other := diffValues[name]
		first := v
		if len(other) > 0 {
			first = other[rng.IntN(len(other))]
		}
		return []string{long + "=" + first, long, v}
	}
	if strings.HasPrefix(v, "-") || v == "" {
		return []string{long + "=" + v} // argparse reads "-x" after a flag as a flag
	}
	return []string{long, v}
}

// abbreviation is the shortest prefix of name that no other parameter (nor --help)
// starts with, if it is shorter than name.
func abbreviation(c *components.Component, name string) string {
	for n := 1; n < len(name); n++ {
		pre := name[:n]
		unique := !strings.HasPrefix("help", pre)
		for _, p := range c.Params {
			if p.Name != name && strings.HasPrefix(p.Name, pre) {
				unique = false
			}
		}
		if unique {
			return pre
		}
	}
	return ""
}

// diffSeedFromEnv is WICK_DIFF_SEED, else a seed from the clock.
func diffSeedFromEnv(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("WICK_DIFF_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("WICK_DIFF_SEED=%s: %v", s, err)
		}
		seed = n
	}
	return seed
}
