package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/spec"
)

// opts are run options like local_cwd's.
var opts = spec.RunOpts{
	{Name: "log_dir", Type: spec.OptString, Help: "log directory"},
	{Name: "prepend_cwd", Type: spec.OptBool, Default: false, Help: "prepend cwd to PATH"},
	{Name: "auto_set_cuda_visible_devices", Type: spec.OptBool, Default: false, Help: "gpus"},
	{Name: "copy_env", Type: spec.OptList, Help: "globs"},
	{Name: "env", Type: spec.OptMap, Help: "env"},
	{Name: "retries", Type: spec.OptInt, Help: "retries"},
	{Name: "ratio", Type: spec.OptFloat, Help: "ratio"},
}

func write(t *testing.T, dir, src string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, FileName)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParse(t *testing.T) {
	src := "\ufeff# a comment\n" +
		"; another\n" +
		"[local_cwd]\n" +
		"log_dir = /tmp/logs # not a comment\n" +
		"prepend_cwd: True\n" +
		"  # indented comment\n" +
		"copy_env = A_*;B_*\n" +
		"env = A:1,B:2\n" +
		"multi = first\n" +
		"  second\n" +
		"\n" +
		"  third\n" +
		"empty =\n" +
		"pct = 100%% of %(log_dir)s\n" +
		"url = http://x:8080/a=b\r\n" +
		"\n" +
		"[component:dist.ddp]\n" +
		"j = 2x8\n" +
		"Image=my/img:1\n" +
		"[cli:run]\n" +
		"scheduler = local_docker\n"
	f, err := Parse("cfg", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := &File{Path: "cfg", Sections: []*Section{
		{Name: "local_cwd", Line: 3, Entries: []Entry{
			{"log_dir", "/tmp/logs # not a comment", 4},
			{"prepend_cwd", "True", 5},
			{"copy_env", "A_*;B_*", 7},
			{"env", "A:1,B:2", 8},
			{"multi", "first\nsecond\n\nthird", 9},
			{"empty", "", 13},
			{"pct", "100% of /tmp/logs # not a comment", 14},
			{"url", "http://x:8080/a=b", 15},
		}},
		{Name: "component:dist.ddp", Line: 17, Entries: []Entry{{"j", "2x8", 18}, {"Image", "my/img:1", 19}}},
		{Name: "cli:run", Line: 20, Entries: []Entry{{"scheduler", "local_docker", 21}}},
	}}
	if !reflect.DeepEqual(f, want) {
		for i, s := range f.Sections {
			t.Logf("section %d: %+v", i, *s)
		}
		t.Errorf("Parse mismatch")
	}
	if v, ok := f.Section("component:dist.ddp").Get("Image"); !ok || v != "my/img:1" {
		t.Errorf("Get(Image) = %q, %v (keys are case-sensitive)", v, ok)
	}
	if _, ok := f.Section("component:dist.ddp").Get("image"); ok {
		t.Error("keys must be case-sensitive")
	}
	if f.Section("nope") != nil {
		t.Error("Section(nope) != nil")
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ src, err string }{
		{"a = 1\n", `cfg:1: "a = 1" is outside any section (start the file with a [section] header)`},
		{"[s]\njust a line\n", `cfg:2: want KEY = VALUE, got "just a line"`},
		{"[s]\n= 1\n", `cfg:2: empty key in "= 1"`},
		{"[s]\n[s]\n", "cfg:2: section [s] given twice"},
		{"[s]\na = 1\na = 2\n", "cfg:3: [s] a given twice"},
		{"[s\n", `cfg:1: section header "[s" has no closing ]`},
		{"[]\n", "cfg:1: empty section name"},
		{"[DEFAULT]\na = 1\n", "cfg:1: [DEFAULT] is not supported: put the keys in the sections that use them"},
		{"[s]\na = 50%\n", `cfg:2: [s] a: '%' must be followed by '%' or '(' in "50%" (write %% for a literal %)`},
		{"[s]\na = %(b)s\n", `cfg:2: [s] a: %(b)s names no key of this section (write %% for a literal %)`},
		{"[s]\na = %(a)s\n", `cfg:2: [s] a: interpolation nests deeper than 10 levels (a %(key)s loop?)`},
		{"[s]\na = %(a\n", `cfg:2: [s] a: bad interpolation in "%(a": want %(key)s`},
		{"[cli:run]\nschedular = x\n", `cfg:2: [cli:run] unknown key "schedular" (want scheduler, workspace, component) (did you mean "scheduler"?)`},
	} {
		_, err := Parse("cfg", []byte(tc.src))
		var se *SyntaxError
		if err == nil || err.Error() != tc.err || !errors.As(err, &se) {
			t.Errorf("%q: err = %v, want %q", tc.src, err, tc.err)
		}
	}
}

func TestRunOpts(t *testing.T) {
	dir := t.TempDir()
	project := write(t, filepath.Join(dir, "project"), "[local_cwd]\nlog_dir = /project/logs\ncopy_env = None\nprepend_cwd = yes\nretries = 3\n")
	home := write(t, filepath.Join(dir, "home"), "[local_cwd]\nlog_dir = /home/logs\ncopy_env = A;B\nenv = X:1;Y:2\nratio = 0.5\nautoSetCudaVisibleDevices = on\n[local_docker]\nfoo = bar\n")
	c, err := LoadFiles(project, home)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := c.RunOpts("local_cwd", opts)
	if err != nil {
		t.Fatal(err)
	}
	want := spec.Cfg{
		"log_dir":                       "/project/logs", // the first file wins
		"prepend_cwd":                   true,
		"retries":                       3,
		"env":                           map[string]string{"X": "1", "Y": "2"},
		"ratio":                         0.5,
		"auto_set_cuda_visible_devices": true, // camelCase spelling accepted
		// copy_env: None in the project masks home's value
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("RunOpts\n got %#v\nwant %#v", cfg, want)
	}
	// The command line wins over the files.
	merged := spec.Cfg{"log_dir": "/cli"}.Merge(cfg)
	if merged["log_dir"] != "/cli" || merged["retries"] != 3 {
		t.Errorf("merged %v", merged)
	}
	if cfg, err := c.RunOpts("nothing_here", opts); err != nil || len(cfg) != 0 {
		t.Errorf("no section: %v %v", cfg, err)
	}
	if !reflect.DeepEqual(c.Files(), []string{project, home}) {
		t.Errorf("Files() = %v", c.Files())
	}
	// An unknown key is skipped with one warning naming the file and line, as TorchX's
	// config.load warns and runs.
	if cfg, err := c.RunOpts("local_docker", opts); err != nil || len(cfg) != 0 {
		t.Errorf("unknown key: %v, %v", cfg, err)
	}
	if got := c.UnknownRunOpts("local_docker", opts); !reflect.DeepEqual(got, []string{home + ":8: [local_docker] foo is not a run option of local_docker; skipped, as TorchX does"}) {
		t.Errorf("UnknownRunOpts = %q", got)
	}
	if got := c.UnknownRunOpts("local_cwd", opts); len(got) != 0 {
		t.Errorf("UnknownRunOpts(local_cwd) = %q (autoSetCudaVisibleDevices is auto_set_cuda_visible_devices)", got)
	}
	typo, err := Parse("f", []byte("[local_cwd]\nlog_dri = x\nretries = 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	tc := &Config{files: []*File{typo}}
	if cfg, err := tc.RunOpts("local_cwd", opts); err != nil || !reflect.DeepEqual(cfg, spec.Cfg{"retries": 2}) {
		t.Errorf("log_dri: %v, %v", cfg, err)
	}
	if got := tc.UnknownRunOpts("local_cwd", opts); len(got) != 1 || got[0] != `f:2: [local_cwd] log_dri is not a run option of local_cwd (did you mean "log_dir"?); skipped, as TorchX does` {
		t.Errorf("UnknownRunOpts = %q", got)
	}
	for src, want := range map[string]string{
		"[local_cwd]\nprepend_cwd = maybe\n": `f:2: [local_cwd] invalid run option prepend_cwd="maybe": "maybe" is not a boolean (want true or false)`,
		"[local_cwd]\nretries = many\n":      `f:2: [local_cwd] invalid run option retries="many": want an integer`,
		"[local_cwd]\nenv = A=1\n":           `f:2: [local_cwd] invalid run option env="A=1": want KEY:VALUE pairs, got "A=1"`,
	} {
		f, err := Parse("f", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := (&Config{files: []*File{f}}).RunOpts("local_cwd", opts); err == nil || err.Error() != want {
			t.Errorf("%q: err = %v, want %q", src, err, want)
		}
	}
}

func TestSectionsMerge(t *testing.T) {
	dir := t.TempDir()
	c, err := LoadFiles(
		write(t, filepath.Join(dir, "p"), "[component:dist.ddp]\nj = 2x8\n[cli:run]\nscheduler = local_cwd\n"),
		write(t, filepath.Join(dir, "h"), "[component:dist.ddp]\nj = 1x1\nimage = img\n[cli:run]\nscheduler = local_docker\ncomponent = dist.ddp\n[cli:list]\nscheduler = x\n"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ComponentDefaults("dist.ddp"); !reflect.DeepEqual(got, map[string]string{"j": "2x8", "image": "img"}) {
		t.Errorf("ComponentDefaults = %v", got)
	}
	if got := c.ComponentDefaults("utils.echo"); len(got) != 0 {
		t.Errorf("ComponentDefaults(utils.echo) = %v", got)
	}
	if got := c.CLIRun(); !reflect.DeepEqual(got, map[string]string{"scheduler": "local_cwd", "component": "dist.ddp"}) {
		t.Errorf("CLIRun = %v", got)
	}
	if got := c.CLI("list"); got["scheduler"] != "x" {
		t.Errorf("CLI(list) = %v", got)
	}
	if len(c.Files()) != 2 {
		t.Errorf("Files = %v", c.Files())
	}
	var nilConfig *Config
	if nilConfig.CLIRun() == nil || nilConfig.Files() != nil || nilConfig.CheckSections(nil) != nil {
		t.Error("nil Config")
	}
	if cfg, err := nilConfig.RunOpts("local_cwd", opts); err != nil || len(cfg) != 0 {
		t.Error("nil Config RunOpts")
	}
}

func TestCheckSections(t *testing.T) {
	f, err := Parse("f", []byte("[local_cwd]\n[component:x]\n[cli:run]\n[torchx:tracker]\n[tracker:fsspec]\n[wick:metrics]\nwatch = loss\n[local_dokcer]\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = (&Config{files: []*File{f}}).CheckSections([]string{"local_cwd", "local_dir", "local_docker"})
	if err == nil || err.Error() != `f:8: unknown section [local_dokcer]: not a scheduler (did you mean "local_docker"?)` {
		t.Errorf("err = %v", err)
	}
	if got := (&Config{files: []*File{f}}).Wick("metrics")["watch"]; got != "loss" {
		t.Errorf("[wick:metrics] watch = %q", got)
	}
}

func TestPaths(t *testing.T) {
	dir := t.TempDir()
	cwd, home := filepath.Join(dir, "cwd"), filepath.Join(dir, "home")
	pc := write(t, cwd, "[local_cwd]\n")
	ph := write(t, home, "[local_cwd]\n")
	explicit := filepath.Join(dir, "explicit.ini")
	if err := os.WriteFile(explicit, []byte("[local_cwd]\nlog_dir = /e\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		loc  Locations
		want []string
		err  string
	}{
		// TorchX's find_configs: $HOME first, then the project; the first value wins.
		{Locations{Cwd: cwd, Home: home}, []string{ph, pc}, ""},
		{Locations{Cwd: cwd, Home: cwd}, []string{pc}, ""},
		{Locations{Cwd: filepath.Join(dir, "none"), Home: home}, []string{ph}, ""},
		{Locations{Cwd: cwd, Home: home, TorchxConfig: explicit, TorchxConfigSet: true}, []string{explicit}, ""},
		{Locations{Cwd: cwd, Home: home, TorchxConfig: "", TorchxConfigSet: true}, nil, ""},
		{Locations{Cwd: cwd, TorchxConfig: filepath.Join(dir, "missing"), TorchxConfigSet: true}, nil, "does not exist or is not a file"},
		{Locations{Cwd: cwd, TorchxConfig: dir, TorchxConfigSet: true}, nil, "does not exist or is not a file"},
	} {
		got, err := Paths(tc.loc)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: err = %v", tc.loc, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%+v: %v, %v; want %v", tc.loc, got, err, tc.want)
		}
	}
	c, err := Load(Locations{Cwd: cwd, Home: home, TorchxConfig: explicit, TorchxConfigSet: true})
	if err != nil {
		t.Fatal(err)
	}
	if cfg, _ := c.RunOpts("local_cwd", opts); cfg["log_dir"] != "/e" {
		t.Errorf("TORCHXCONFIG file not read: %v", cfg)
	}
	if c, err := Load(Locations{Cwd: cwd, Home: home}); err != nil || !reflect.DeepEqual(c.Files(), []string{ph, pc}) {
		t.Errorf("Load: %v, %v (the home file first, as in TorchX)", c.Files(), err)
	}
	if _, err := LoadFiles(filepath.Join(dir, "missing")); err == nil {
		t.Error("LoadFiles of a missing file")
	}
	bad := write(t, filepath.Join(dir, "bad"), "oops\n")
	if _, err := LoadFiles(bad); err == nil || !strings.HasPrefix(err.Error(), bad+":1: ") {
		t.Errorf("bad file: %v", err)
	}
}

// TestTrackerEnv: [torchx:tracker] and [tracker:NAME] become the env TorchX's runner
// gives every role (torchx/runner/api.py get_configured_trackers, dryrun;
// torchx/tracker/api.py tracker_config_env_var_name), and the env overrides them.
func TestTrackerEnv(t *testing.T) {
	dir := t.TempDir()
	home := write(t, filepath.Join(dir, "home"), "[torchx:tracker]\nmlflow =\n[tracker:mlflow]\nconfig = s3://home/cfg\n")
	project := write(t, filepath.Join(dir, "project"), "[torchx:tracker]\nfsspec =\nmlflow =\n[tracker:mlflow]\nconfig = s3://project/cfg\n[tracker:fsspec]\nconfig = /tmp/fsspec.txt\n")
	c, err := LoadFiles(home, project)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	want := map[string]string{
		"TORCHX_TRACKERS":              "mlflow,fsspec",
		"TORCHX_TRACKER_MLFLOW_CONFIG": "s3://home/cfg", // the first file wins
		"TORCHX_TRACKER_FSSPEC_CONFIG": "/tmp/fsspec.txt",
	}
	if got := c.TrackerEnv(lookup); !reflect.DeepEqual(got, want) {
		t.Errorf("TrackerEnv = %v, want %v", got, want)
	}
	env["TORCHX_TRACKERS"] = "fsspec,other"
	env["TORCHX_TRACKER_FSSPEC_CONFIG"] = "/from/env"
	want = map[string]string{"TORCHX_TRACKERS": "fsspec,other", "TORCHX_TRACKER_FSSPEC_CONFIG": "/from/env"}
	if got := c.TrackerEnv(lookup); !reflect.DeepEqual(got, want) {
		t.Errorf("TrackerEnv with env = %v, want %v", got, want)
	}
	if got := (*Config)(nil).TrackerEnv(func(string) (string, bool) { return "", false }); got != nil {
		t.Errorf("no config: %v", got)
	}
}
