package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/internal/testkit"
)

// The differential tests of the command line against the real TorchX
// (../shared/vendor/python under /usr/bin/python3, one Python process per batch:
// testdata/torchx_diff.py):
//
//   - TestConfigDifferentialWithTorchX: .torchxconfig files (home and project,
//     $TORCHXCONFIG, unknown options, None, [component:utils.echo], [cli:run]) and -cfg
//     strings, for every scheduler wick and TorchX share, resolved by TorchX's own
//     config.apply / runopts.cfg_from_str / runopts.resolve and by `wick run --dryrun
//     --json` (its "cfg"), compared option by option;
//   - TestRunFlagsDifferentialWithTorchX: `run` command lines, parsed by CmdRun's own
//     argparse parser (torchx/cli/cmd_run.py) and by wick run --dryrun.
//
// The cases are pytorch/torchx's tests (torchx/runner/test/config_test.py at
// b72ba038, cited by line) and its docs, plus seeded random draws. The seed is
// printed; WICK_DIFF_SEED=N replays a run. Every outcome agrees or is a documented
// difference (docs/torchx.md), or the test fails.

// diffSeed is the seed of a differential run: WICK_DIFF_SEED, else the clock.
func diffSeed(t *testing.T) (uint64, *rand.Rand) {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("WICK_DIFF_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("WICK_DIFF_SEED=%s: %v", s, err)
		}
		seed = n
	}
	t.Logf("seed %d (replay: WICK_DIFF_SEED=%d go test -run %s ./tui/cli)", seed, seed, t.Name())
	return seed, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// torchxBatch answers reqs with TorchX, in one Python process started in an empty
// directory with an empty HOME (TorchX reads ./.torchxconfig and ~/.torchxconfig at
// import for its CLI's defaults).
func torchxBatch(t *testing.T, reqs []map[string]any) []map[string]any {
	t.Helper()
	vendor, err := filepath.Abs(torchxVendor())
	if err != nil {
		t.Fatal(err)
	}
	check := exec.Command(torchxPython, "-c", "import torchx.cli.cmd_run, torchx.runner.config")
	check.Env = append(os.Environ(), "PYTHONPATH="+vendor)
	if out, err := check.CombinedOutput(); err != nil {
		msg := "the vendored TorchX does not import (" + vendor + "; make setup installs python3-yaml python3-fsspec python3-tabulate python3-filelock): " + string(out)
		if testkit.InCI() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	in, err := json.Marshal(reqs)
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "torchx_diff.py"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(2*time.Minute))
	defer cancel()
	empty := t.TempDir()
	cmd := exec.CommandContext(ctx, torchxPython, script)
	cmd.Dir = empty
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + empty, "PYTHONPATH=" + vendor,
		"PYTHONDONTWRITEBYTECODE=1", "LOGLEVEL=WARNING", "TORCHX_INTERNAL_SESSION_ID=00000000-0000-4000-8000-000000000000"}
	cmd.Stdin = bytes.NewReader(in)
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("TorchX's side: %v\n%s", err, stderr.String())
	}
	t.Logf("TorchX's side: %d cases in one Python process, %.1f s", len(reqs), time.Since(start).Seconds())
	var res []map[string]any
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(reqs) {
		t.Fatalf("TorchX's side: %d answers for %d cases: %v", len(res), len(reqs), err)
	}
	return res
}

// dryRunJSON is what the tests read of wick run --dryrun --json.
type dryRunJSON struct {
	Scheduler string         `json:"scheduler"`
	Cfg       map[string]any `json:"cfg"`
	App       struct {
		Roles []struct {
			Entrypoint string            `json:"entrypoint"`
			Args       []string          `json:"args"`
			Env        map[string]string `json:"env"`
		} `json:"roles"`
	} `json:"app"`
}

// wickDryRun runs wick run --json ARGS in h and decodes its dry run.
func wickDryRun(h *harness, args ...string) (*dryRunJSON, result, error) {
	r := h.run(append([]string{"run", "--json"}, args...)...)
	if r.code != 0 {
		return nil, r, fmt.Errorf("exit %d: %s", r.code, strings.TrimSpace(r.stderr))
	}
	var d dryRunJSON
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || len(d.App.Roles) == 0 {
		return nil, r, fmt.Errorf("not a dry run (%v): %s", err, r.stdout)
	}
	return &d, r, nil
}

// sameJSON says whether a and b are equal as JSON values (numbers compared as numbers).
func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	var x, y any
	_ = json.Unmarshal(ja, &x)
	_ = json.Unmarshal(jb, &y)
	return reflect.DeepEqual(x, y)
}

// ---------------------------------------------------------------------------------
// .torchxconfig

// cfgCase is one set of config files and -cfg.
type cfgCase struct {
	Src       string
	Scheduler string // -s; "" leaves it to [cli:run]
	Cfg       string // -cfg; "" for none
	Home      string // ~/.torchxconfig; "" for no file
	Project   string // ./.torchxconfig
	Explicit  string // the file $TORCHXCONFIG names; "" leaves it unset
}

// Config files of pytorch/torchx's torchx/runner/test/config_test.py (b72ba038, the
// vendored TorchX's commit), cited by line, with its scheduler "test" (options s, i,
// f, l, d) replaced by options of schedulers wick has of the same types.
const (
	txConfig  = "#\n[local_cwd]\nlog_dir = /home/bob/logs\nprepend_cwd = True\n"                  // _CONFIG, :142
	txInvalid = "#\n[local_cwd]\na_run_opt_that = does_not_exist\nlog_dir = option_that_exists\n" // _CONFIG_INVALID, :148
	// _TEAM_CONFIG (:154) and _MY_CONFIG (:163): s -> image_repo, d -> env, l -> copy_env.
	txTeam = "#\n[local_docker]\nimage_repo = team_default\nenv = a:b,c:d\n"
	txMine = "#\n[local_docker]\nimage_repo = my_default\ncopy_env = abc;def\nenv = e:f,g:h\n"
	// _COMPONENT_CONFIG_0 (:179, its bad sections too) and _COMPONENT_CONFIG_1 (:198).
	txComponent0 = "#\n[component:dist.ddp]\nimage = barbaz\nscript_args = a b c --d=e --f g\n\n[component:utils.echo]\nmsg = abracadabra\n\n# bad section\n[component:]\nfoo = bar\n\n[:bad]\nleads = with delimiter\n\n[local]\n1 = 2\n"
	txComponent1 = "#\n[component:dist.ddp]\nj = 1x2\nimage = foobar\nenv = A=B,C=D\n\n[component:utils.touch]\nfile = tmp.txt\n"
)

var cfgCases = []cfgCase{
	{Src: "config_test.py:361 test_load", Scheduler: "local_cwd", Project: txConfig},
	{Src: "config_test.py:367 test_no_override_load", Scheduler: "local_cwd", Cfg: "log_dir=/foo/bar", Project: txConfig},
	{Src: "config_test.py:437 test_load_invalid_runopt", Scheduler: "local_cwd", Project: txInvalid},
	{Src: "config_test.py:379 test_apply_default (cwd, home has none)", Scheduler: "local_docker", Cfg: "image_repo=runtime_value", Project: txTeam},
	{Src: "config_test.py:397 test_apply_dirs (home first)", Scheduler: "local_docker", Cfg: "image_repo=runtime_value", Home: txMine, Project: txTeam},
	{Src: "config_test.py:397 test_apply_dirs, no -cfg", Scheduler: "local_docker", Home: txMine, Project: txTeam},
	{Src: "config_test.py:154 d_none= x:y (no space before =)", Scheduler: "local_docker", Project: "[local_docker]\nenv= x:y\n"},
	{Src: "config_test.py:308 test_find_configs: TORCHXCONFIG alone", Scheduler: "local_docker", Home: txMine, Project: txTeam, Explicit: "[local_docker]\nimage_repo = explicit\n"},
	{Src: "config_test.py:347 test_get_config: TORCHXCONFIG's component defaults alone", Scheduler: "local_cwd", Home: txComponent1 + "\n[component:utils.echo]\nmsg = home\n", Explicit: "\n[component:utils.echo]\nmsg = foobar_custom\n        "},
	{Src: "config_test.py:451 test_load_no_section", Scheduler: "local_cwd", Project: "[scheduler_args.local_cwd]\n"},
	{Src: "config_test.py:219 test_load_component_defaults", Scheduler: "local_cwd", Home: txComponent0, Project: txComponent1},
	{Src: "config_test.py:219 test_load_component_defaults, good sections", Scheduler: "local_cwd", Home: txComponent1 + "\n[component:utils.echo]\nmsg = abracadabra\n", Project: "[component:utils.echo]\nmsg = project\n"},
	{Src: "config_test.py:511 test_get_workspace_config ([cli:run] workspace)", Scheduler: "local_cwd", Project: "#\n[cli:run]\nworkspace =\n    /home/foo/third-party/verl: verl\n    /home/foo/baz:\n"},
	{Src: "config.py load: None unsets", Scheduler: "local_cwd", Home: "[local_cwd]\nlog_dir = None\n", Project: txConfig},
	{Src: "cmd_run.py: [cli:run] scheduler", Project: "[cli:run]\nscheduler = slurm\n\n[slurm]\nqos = high\n"},
	{Src: "cmd_run.py: -s over [cli:run]", Scheduler: "local_cwd", Project: "[cli:run]\nscheduler = slurm\n"},
	{Src: "specs/api.py cfg_from_str docstring: ';' lists", Scheduler: "local_docker", Cfg: "copy_env=A;B,quiet=True"},
	{Src: "specs/api.py cfg_from_str docstring: unknown keys skipped", Scheduler: "kubernetes", Cfg: "namespace=ns,queue=q,UNKNOWN=VALUE"},
	{Src: "kubernetes_scheduler.py: namespace default", Scheduler: "kubernetes", Project: "[kubernetes]\nqueue = q\nservice_account = sa\n"},
}

// cfgValues are the values random config files and -cfg draw from, per option of
// the shared schedulers (valid and invalid).
var cfgValues = map[string][]string{
	"log_dir":                       {"/tmp/wick-diff-logs", "logs", "None"},
	"prepend_cwd":                   {"True", "false", "1", "0", "yes", "off", "maybe", "None"},
	"auto_set_cuda_visible_devices": {"True", "no", "on", "None"},
	"copy_env":                      {"FOO_*", "A;B", "None"},
	"env":                           {"A:1", "A:1;B:2", "None"},
	"privileged":                    {"True", "0", "x"},
	"image_repo":                    {"repo", "None"},
	"quiet":                         {"true", "1"},
	"partition":                     {"p1", "debug", "None"},
	"time":                          {"10", "1:00:00"},
	"comment":                       {"hello", "a b"},
	"constraint":                    {"gpu"},
	"mail-user":                     {"a@b.c"},
	"mail-type":                     {"END"},
	"job_dir":                       {"/tmp/jobs"},
	"qos":                           {"high", "None"},
	"namespace":                     {"default", "ns1", "None"},
	"queue":                         {"q"},
	"service_account":               {"sa"},
	"priority_class":                {"high"},
	"bogus":                         {"1"},
}

var cfgOptions = map[string][]string{
	"local_cwd":    {"log_dir", "prepend_cwd", "auto_set_cuda_visible_devices", "bogus"},
	"local_docker": {"copy_env", "env", "privileged", "image_repo", "quiet", "bogus"},
	"slurm":        {"partition", "time", "comment", "constraint", "mail-user", "mail-type", "job_dir", "qos", "bogus"},
	"kubernetes":   {"namespace", "queue", "service_account", "priority_class", "image_repo", "quiet", "bogus"},
}

var cfgSchedulers = []string{"local_cwd", "local_docker", "slurm", "kubernetes"}

// randomCfgFile draws a config file: a section for sched (and maybe another
// scheduler's), maybe [component:utils.echo] and [cli:run].
func randomCfgFile(rng *rand.Rand, sched string) string {
	if rng.IntN(4) == 0 {
		return ""
	}
	var b strings.Builder
	for _, s := range []string{sched, cfgSchedulers[rng.IntN(len(cfgSchedulers))]} {
		if rng.IntN(5) == 0 {
			continue
		}
		fmt.Fprintf(&b, "[%s]\n", s)
		for _, o := range cfgOptions[s] {
			if rng.IntN(2) == 0 {
				vs := cfgValues[o]
				fmt.Fprintf(&b, "%s = %s\n", o, vs[rng.IntN(len(vs))])
			}
		}
		b.WriteString("\n")
	}
	if rng.IntN(3) == 0 {
		fmt.Fprintf(&b, "[component:utils.echo]\nmsg = %s\n\n", []string{"from a file", "x"}[rng.IntN(2)])
	}
	if rng.IntN(4) == 0 {
		fmt.Fprintf(&b, "[cli:run]\nscheduler = %s\n", sched)
	}
	return b.String()
}

// randomCfgFlag draws a -cfg string for sched.
func randomCfgFlag(rng *rand.Rand, sched string) string {
	var kv []string
	for _, o := range cfgOptions[sched] {
		if rng.IntN(3) == 0 {
			vs := slices.DeleteFunc(slices.Clone(cfgValues[o]), func(v string) bool { return v == "None" || strings.Contains(v, " ") })
			if len(vs) > 0 {
				kv = append(kv, o+"="+vs[rng.IntN(len(vs))])
			}
		}
	}
	return strings.Join(kv, ",")
}

// cfgKnown names the documented difference that explains wick refusing a config
// case TorchX takes, or "".
func cfgKnown(wickErr string) string {
	switch {
	case strings.Contains(wickErr, "-cfg: invalid run option") && strings.Contains(wickErr, "is not a boolean"):
		return cfgBoolDoc
	case strings.Contains(wickErr, ".torchxconfig:") && strings.Contains(wickErr, "invalid run option"):
		// TorchX raises too, unless -cfg or a file read before sets the option.
		return "a file's value of the wrong type stops the run, even where -cfg sets the option"
	}
	return ""
}

func TestConfigDifferentialWithTorchX(t *testing.T) {
	seed, rng := diffSeed(t)
	cases := slices.Clone(cfgCases)
	for range 120 {
		s := cfgSchedulers[rng.IntN(len(cfgSchedulers))]
		c := cfgCase{Src: "random", Scheduler: s, Home: randomCfgFile(rng, s), Project: randomCfgFile(rng, s)}
		if rng.IntN(2) == 0 {
			c.Cfg = randomCfgFlag(rng, s)
		}
		if rng.IntN(8) == 0 {
			c.Explicit = randomCfgFile(rng, s) + "\n"
		}
		if rng.IntN(6) == 0 && strings.Contains(c.Home+c.Project+c.Explicit, "[cli:run]") {
			c.Scheduler = ""
		}
		cases = append(cases, c)
	}

	type side struct {
		h        *harness
		explicit string
	}
	sides := make([]side, len(cases))
	reqs := make([]map[string]any, len(cases))
	for i, c := range cases {
		h := newHarness(t)
		write := func(path, content string) {
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if c.Home != "" {
			write(filepath.Join(h.user, ".torchxconfig"), c.Home)
		}
		if c.Project != "" {
			write(filepath.Join(h.work, ".torchxconfig"), c.Project)
		}
		var explicit any
		if c.Explicit != "" {
			p := filepath.Join(filepath.Dir(h.work), "explicit.torchxconfig")
			write(p, c.Explicit)
			h.env["TORCHXCONFIG"] = p
			explicit = p
			sides[i].explicit = p
		}
		sides[i].h = h
		reqs[i] = map[string]any{"kind": "config", "scheduler": c.Scheduler, "cfg": c.Cfg,
			"home": h.user, "work": h.work, "torchxconfig": explicit}
	}
	torchx := torchxBatch(t, reqs)

	buildKubernetesHelper(t)
	wickOpts := map[string]map[string]bool{}
	for _, s := range cfgSchedulers {
		wickOpts[s] = wickOptNames(t, newHarness(t), s)
	}
	missing := map[string]bool{}
	agree, documented := 0, map[string]int{}
	for i, c := range cases {
		name := fmt.Sprintf("case %d (%s): -s %q -cfg %q home %q project %q TORCHXCONFIG %q", i, c.Src, c.Scheduler, c.Cfg, c.Home, c.Project, c.Explicit)
		h, x := sides[i].h, torchx[i]
		args := []string{"--dryrun"}
		if c.Scheduler != "" {
			args = append(args, "-s", c.Scheduler)
		}
		if c.Cfg != "" {
			args = append(args, "-cfg", c.Cfg)
		}
		got, r, err := wickDryRun(h, append(args, "utils.echo")...)
		xerr, _ := x["error"].(string)
		if x["scheduler_default"] == true {
			// Neither -s nor [cli:run]: TorchX's default (local_docker) is not wick's
			// (local_cwd), and the two read different sections.
			documented["the default scheduler is local_cwd"]++
			continue
		}
		switch {
		case err != nil && xerr != "":
			agree++
			continue
		case err != nil:
			if d := cfgKnown(r.stderr); d != "" {
				t.Logf("%s: documented (%s): %s", name, d, strings.TrimSpace(r.stderr))
				documented[d]++
				continue
			}
			t.Errorf("%s: wick refuses what TorchX takes: %v", name, err)
			continue
		case xerr != "" && got.Scheduler == "kubernetes" && strings.Contains(xerr, "Required run option: queue"):
			documented["kubernetes: queue is optional"]++
			continue
		case xerr != "":
			t.Errorf("%s: TorchX refuses (%s) what wick takes", name, xerr)
			continue
		}
		// wick's options when no file and no -cfg sets them, to tell "unset".
		base := newHarness(t)
		empty := filepath.Join(base.work, "empty.torchxconfig")
		if err := os.WriteFile(empty, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		base.env["TORCHXCONFIG"] = empty
		base.home, base.user = h.home, h.user
		def, _, err := wickDryRun(base, "--dryrun", "-s", got.Scheduler, "utils.echo")
		if err != nil {
			t.Fatalf("%s: wick's defaults: %v", name, err)
		}
		var diffs []string
		doc := ""
		if want, _ := x["scheduler"].(string); got.Scheduler != want {
			diffs = append(diffs, fmt.Sprintf("scheduler: wick %q, TorchX %q", got.Scheduler, want))
		}
		xcfg, _ := x["cfg"].(map[string]any)
		set := map[string]bool{}
		for _, k := range x["set"].([]any) {
			set[k.(string)] = true
		}
		for _, k := range x["opts"].([]any) {
			k := k.(string)
			if !wickOpts[got.Scheduler][k] {
				missing[got.Scheduler+" "+k] = true // an option wick lacks (docs/torchx.md)
				continue
			}
			want := xcfg[k]
			if !set[k] {
				want = def.Cfg[k]
			}
			if !sameJSON(got.Cfg[k], want) && cfgBoolWord(c.Cfg, k) {
				doc = cfgBoolDoc
				continue
			}
			if !sameJSON(got.Cfg[k], want) {
				diffs = append(diffs, fmt.Sprintf("%s: wick %v, TorchX %v", k, got.Cfg[k], want))
			}
		}
		xrole, _ := x["role"].(map[string]any)
		if !sameJSON(got.App.Roles[0].Args, xrole["args"]) {
			diffs = append(diffs, fmt.Sprintf("utils.echo args: wick %q, TorchX %v", got.App.Roles[0].Args, xrole["args"]))
		}
		switch {
		case len(diffs) == 0 && doc != "":
			documented[doc]++
			continue
		case len(diffs) == 0:
			agree++
			continue
		}
		t.Errorf("%s:\n  %s", name, strings.Join(diffs, "\n  "))
	}
	n := 0
	for _, k := range documented {
		n += k
	}
	t.Logf("TorchX's run options wick does not have: %v", slices.Sorted(maps.Keys(missing)))
	t.Logf("agreement: %d of %d config cases agree; %d differ as documented %v; %d differ otherwise (seed %d)",
		agree, len(cases), n, documented, len(cases)-agree-n, seed)
}

// wickOptNames are the run options of wick's scheduler sched (wick runopts --json).
func wickOptNames(t *testing.T, h *harness, sched string) map[string]bool {
	t.Helper()
	r := h.run("runopts", sched, "--json")
	var opts map[string][]struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &opts); err != nil {
		t.Fatalf("wick runopts %s --json: %v: %s", sched, err, r.stderr)
	}
	names := map[string]bool{}
	for _, o := range opts[sched] {
		names[o.Name] = true
	}
	return names
}

// cfgBoolDoc is the documented difference of -cfg's bools (docs/torchx.md).
const cfgBoolDoc = "a -cfg bool is a bool word (1, yes, on; not a boolean: an error)"

// cfgBoolWord says whether -cfg gives k a bool word other than true/false, which
// TorchX's runopt.cast_to_type reads as false (value.lower() == "true").
func cfgBoolWord(cfg, k string) bool {
	for _, kv := range strings.Split(cfg, ",") {
		if v, ok := strings.CutPrefix(kv, k+"="); ok {
			v = strings.ToLower(v)
			return v != "true" && v != "false"
		}
	}
	return false
}

// buildKubernetesHelper builds wick-kubernetes beside the tests' wick: the kubernetes
// scheduler's dry run runs in it.
func buildKubernetesHelper(t *testing.T) {
	t.Helper()
	out := filepath.Join(filepath.Dir(wickBinary(t)), "wick-kubernetes")
	if _, err := os.Stat(out); err == nil {
		return
	}
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "./cmd/wick-kubernetes")
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build wick-kubernetes: %v\n%s", err, b)
	}
}

// ---------------------------------------------------------------------------------
// wick run's flags

// flagCases are `torchx run` command lines from TorchX's docs and cmd_run.py (its
// flags, their aliases and its checks); random draws are added.
var flagCases = [][]string{
	{"--dryrun", "utils.echo", "--msg", "hello"},                                     // torchx/cli/__init__.py quickstart
	{"-s", "local_cwd", "--dryrun", "utils.echo"},                                    // cmd_run.py -s/--scheduler
	{"--scheduler", "local_cwd", "-cfg", "log_dir=/tmp/l", "--dryrun", "utils.echo"}, // -cfg/--scheduler_args
	{"--dryrun", "--scheduler_args", "prepend_cwd=True", "utils.echo"},
	{"--dryrun", "--parent_run_id", "exp-1", "utils.echo"},       // --parent_run_id
	{"--dryrun", "--wait", "--log", "--tee_logs", "utils.echo"},  // --wait --log --tee_logs
	{"--dryrun", "-s", "local_cwd", "-s", "slurm", "utils.echo"}, // torchxconfig action: -s once
	{"--dryrun", "-cfg", "a=b", "-cfg", "c=d", "utils.echo"},     // ArgOnceAction: -cfg once
	{"--dryrun", "utils.echo", "--msg", "a", "--msg", "b"},       // "Repeated Command Line Arguments"
	{"--dryrun", "--", "utils.echo", "--msg", "x"},               // "--" before the component
	{"--dryrun"}, // no component: MISSING_COMPONENT_ERROR_MSG
	{"--dryrun", "-s", "nosuch", "utils.echo"}, // choices=
	{"--dryrun", "--nosuch", "utils.echo"},
	{"--dryrun", "utils.sh", "echo", "--", "-x"},
}

// randomFlags draws a `run` command line: TorchX's run flags in their spellings
// (argparse's --f v, --f=v, -sV, abbreviations, repeats), --dryrun always, then a
// component.
func randomFlags(rng *rand.Rand) []string {
	pick := func(vs ...string) string { return vs[rng.IntN(len(vs))] }
	var groups [][]string
	add := func(g ...string) { groups = append(groups, g) }
	add("--dryrun")
	sched := pick("local_cwd", "local_cwd", "slurm", "nosuch")
	switch rng.IntN(7) { // 6: no -s, TorchX's default scheduler is not wick's
	case 0:
		add("-s", sched)
	case 1:
		add("--scheduler", sched)
	case 2:
		add("-s" + sched)
	case 3:
		add("--scheduler=" + sched)
	case 4:
		add("-s", "slurm")
		add("--scheduler", sched)
	case 5:
		add("--sched", sched)
	}
	cfg := pick("log_dir=/tmp/l", "prepend_cwd=True", "partition=p", "bogus=1")
	switch rng.IntN(6) {
	case 0:
		add("-cfg", cfg)
	case 1:
		add("--scheduler_args", cfg)
	case 2:
		add("-cfg=" + cfg)
	case 3:
		add("--scheduler_args=" + cfg)
	}
	for _, f := range []string{"--wait", "--log", "--tee_logs", "--dryrun"} {
		switch rng.IntN(8) {
		case 0:
			add(f)
		case 1:
			add(f[:len(f)-1]) // an abbreviation argparse takes
		}
	}
	switch rng.IntN(6) {
	case 0:
		add("--parent_run_id", pick("exp-1", "p"))
	case 1:
		add("--parent_run_id=" + pick("exp-1", "p"))
	case 2:
		add("--parent", "exp-2")
	}
	if rng.IntN(12) == 0 {
		add(pick("--stdin", "--nosuch", "-x"))
	}
	rng.Shuffle(len(groups), func(i, j int) { groups[i], groups[j] = groups[j], groups[i] })
	var argv []string
	for _, g := range groups {
		argv = append(argv, g...)
	}
	switch rng.IntN(8) {
	case 0:
		argv = append(argv, "--", "utils.echo")
	case 1:
		argv = append(argv, "utils.echo", "--msg", "a", "--msg", "b")
	case 2:
		argv = append(argv, "utils.sh", "echo", "hi")
	default:
		argv = append(argv, "utils.echo", "--msg", pick("hi", "a b"))
	}
	return argv
}

// flagsKnown names the documented difference that explains wick refusing a command
// line TorchX takes, or "".
func flagsKnown(argv []string, wickErr string) string {
	switch {
	case slices.Contains(argv, "--stdin"):
		return "--stdin is refused"
	}
	return ""
}

// flagsExtension names the documented difference that explains wick taking a
// command line TorchX refuses, or "".
func flagsExtension(argv []string, txErr string) string {
	switch {
	case strings.Contains(txErr, "Repeated Command Line Arguments"):
		return "a component flag given twice: the last wins"
	}
	return ""
}

func TestRunFlagsDifferentialWithTorchX(t *testing.T) {
	seed, rng := diffSeed(t)
	cases := slices.Clone(flagCases)
	for range 150 {
		cases = append(cases, randomFlags(rng))
	}
	reqs := make([]map[string]any, len(cases))
	for i, argv := range cases {
		reqs[i] = map[string]any{"kind": "flags", "argv": argv}
	}
	torchx := torchxBatch(t, reqs)
	h := newHarness(t)
	agree, documented := 0, map[string]int{}
	for i, argv := range cases {
		name := fmt.Sprintf("run %q", argv)
		x := torchx[i]
		xerr, _ := x["error"].(string)
		got, r, err := wickDryRun(h, argv...)
		switch {
		case err != nil && xerr != "":
			agree++
			continue
		case err != nil:
			if d := flagsKnown(argv, r.stderr); d != "" {
				documented[d]++
				continue
			}
			t.Errorf("%s: wick refuses what TorchX takes: %v", name, err)
			continue
		case xerr != "":
			if d := flagsExtension(argv, xerr); d != "" {
				documented[d]++
				continue
			}
			t.Errorf("%s: TorchX refuses (%s) what wick takes", name, xerr)
			continue
		}
		var diffs []string
		doc := ""
		if want := x["scheduler"]; got.Scheduler != want && want == "local_docker" && got.Scheduler == DefaultScheduler {
			doc = "the default scheduler is local_cwd" // no -s: TorchX's default
		} else if got.Scheduler != want {
			diffs = append(diffs, fmt.Sprintf("scheduler: wick %q, TorchX %v", got.Scheduler, want))
		}
		role := got.App.Roles[0]
		xrole, _ := x["role"].(map[string]any)
		if !sameJSON(map[string]any{"entrypoint": role.Entrypoint, "args": role.Args}, xrole) {
			diffs = append(diffs, fmt.Sprintf("role: wick %s %q, TorchX %v", role.Entrypoint, role.Args, xrole))
		}
		parent, ok := role.Env["TORCHX_PARENT_RUN_ID"]
		if want, _ := x["parent_run_id"].(string); parent != want || ok != (want != "") {
			diffs = append(diffs, fmt.Sprintf("TORCHX_PARENT_RUN_ID: wick %q, TorchX --parent_run_id %q", parent, want))
		}
		switch {
		case len(diffs) == 0 && doc != "":
			documented[doc]++
			continue
		case len(diffs) == 0:
			agree++
			continue
		}
		t.Errorf("%s:\n  %s", name, strings.Join(diffs, "\n  "))
	}
	n := 0
	for _, k := range documented {
		n += k
	}
	t.Logf("agreement: %d of %d command lines agree; %d differ as documented %v; %d differ otherwise (seed %d)",
		agree, len(cases), n, documented, len(cases)-agree-n, seed)
}

// TestEmptyComponentSection: config_test.py:179's "bad section" [component:] is
// skipped by TorchX; wick runs and says, once, that it names no component, with no
// suggestion (an empty name is near every short one).
func TestEmptyComponentSection(t *testing.T) {
	h := newHarness(t)
	path := filepath.Join(h.work, ".torchxconfig")
	if err := os.WriteFile(path, []byte("# bad section\n[component:]\nfoo = bar\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := h.run("run", "--dryrun", "-s", "local_cwd", "utils.echo")
	want := "wick: warning: " + path + ":2: [component:] names no component, its defaults apply to nothing\n"
	if r.code != 0 || r.stderr != want {
		t.Errorf("exit %d, stderr %q, want %q", r.code, r.stderr, want)
	}
}
