package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunTakesCLIRunDefaults: [cli:run] of .torchxconfig gives wick run the scheduler
// and the component the command line leaves out (arguments after `--` included), and
// what the command line says wins.
func TestRunTakesCLIRunDefaults(t *testing.T) {
	h := newHarness(t)
	conf := "[cli:run]\nscheduler = local_docker\ncomponent = utils.echo\n"
	if err := os.WriteFile(filepath.Join(h.work, ".torchxconfig"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want []string // pieces of the dry run
	}{
		{[]string{"run", "--dryrun"}, []string{"local_docker", "echo", "hello world"}},
		{[]string{"run", "--dryrun", "--", "--msg", "from the config's component"}, []string{"local_docker", "from the config's component"}},
		{[]string{"run", "--dryrun", "-s", "local_cwd", "utils.sh", "echo", "given"}, []string{"local_cwd", "given"}},
	} {
		got := h.run(c.args...)
		if got.code != 0 {
			t.Errorf("%v: exit %d, stderr %q", c.args, got.code, got.stderr)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(got.stdout, w) {
				t.Errorf("%v: the dry run lacks %q:\n%s", c.args, w, got.stdout)
			}
		}
		if strings.Contains(c.args[len(c.args)-1], "given") && strings.Contains(got.stdout, "local_docker") {
			t.Errorf("%v: -s local_cwd did not win over the config:\n%s", c.args, got.stdout)
		}
	}
}

// TestConfigTyposAreNamed: a [component:NAME] section whose name is a typo of a
// component (TorchX ignores it, its defaults apply to nothing) is warned of once, on
// one stderr line naming the file, the line and the nearest component, and the run
// goes on; a section of a real component is not. A [cli:run] scheduler that is none
// fails the run with an error naming the file and the line.
func TestConfigTyposAreNamed(t *testing.T) {
	h := newHarness(t)
	path := filepath.Join(h.work, ".torchxconfig")
	conf := "[component:utils.echo]\nmsg = from the config\n\n[component:utils.ech]\nmsg = hi\n"
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	r := h.run("run", "--dryrun", "-s", "local_cwd", "utils.echo")
	want := "wick: warning: " + path + ":4: [component:utils.ech] names no component, its defaults apply to nothing (did you mean \"utils.echo\"?)\n"
	if r.code != 0 || r.stderr != want || !strings.Contains(r.stdout, "from the config") {
		t.Errorf("a misspelt component section: exit %d, stderr %q, want %q; stdout:\n%s", r.code, r.stderr, want, r.stdout)
	}

	conf = "# defaults\n[cli:run]\ncomponent = utils.echo\nscheduler = local_cdw\n"
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	r = h.run("run", "--dryrun")
	if r.code != ExitUsage {
		t.Errorf("a misspelt [cli:run] scheduler: exit %d, want %d", r.code, ExitUsage)
	}
	assertOneLineError(t, r.stderr, path+":4: [cli:run] scheduler: unknown scheduler \"local_cdw\" (did you mean \"local_cwd\"?)")
	// The command line's scheduler wins: the file's is not looked at.
	if r = h.run("run", "--dryrun", "-s", "local_cwd"); r.code != 0 {
		t.Errorf("-s over a misspelt [cli:run] scheduler: exit %d, %q", r.code, r.stderr)
	}
	r = h.run("run", "--dryrun", "--sweep", "msg=a,b")
	if r.code != ExitUsage || !strings.Contains(r.stderr, path+":4: [cli:run] scheduler") {
		t.Errorf("a sweep with a misspelt [cli:run] scheduler: exit %d, %q", r.code, r.stderr)
	}
}

// TestConfigAsTorchXReadsIt: ~/.torchxconfig and ./.torchxconfig are read in TorchX's
// order (find_configs: $HOME first, the first value wins), an unknown run option is
// one warning naming file and line and the run goes on, and [torchx:tracker] reaches
// every role's env as TorchX's runner sets it (TORCHX_TRACKERS,
// TORCHX_TRACKER_<NAME>_CONFIG).
func TestConfigAsTorchXReadsIt(t *testing.T) {
	h := newHarness(t)
	home := filepath.Join(h.user, ".torchxconfig")
	project := filepath.Join(h.work, ".torchxconfig")
	if err := os.WriteFile(home, []byte("[local_cwd]\nlog_dir = /tmp/from-home\n[torchx:tracker]\nfsspec =\n[tracker:fsspec]\nconfig = /tmp/runs.txt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(project, []byte("[local_cwd]\nlog_dir = /tmp/from-project\ncluster_name = ignored\n[component:utils.echo]\nmsg = from the project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := h.run("run", "--dryrun", "--json", "utils.echo")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{`"log_dir": "/tmp/from-home"`, `"TORCHX_TRACKERS": "fsspec"`, `"TORCHX_TRACKER_FSSPEC_CONFIG": "/tmp/runs.txt"`, "from the project"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the dry run lacks %s:\n%s", want, r.stdout)
		}
	}
	if want := "wick: warning: " + project + ":3: [local_cwd] cluster_name is not a run option of local_cwd; skipped, as TorchX does\n"; r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
}

// TestUnknownCfgKeyWarns: an unknown -cfg key is skipped with a warning that names it
// and the option meant, and the run goes on, as TorchX's runopts.resolve does for an
// unknown option (specs/api.py, runopts.cfg_from_str: "Unknown run option passed to
// scheduler", then drops it).
func TestUnknownCfgKeyWarns(t *testing.T) {
	h := newHarness(t)
	r := h.run("run", "--dryrun", "-cfg", "log_dri=/tmp", "utils.echo")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0 (a warning, not an error): %s", r.code, r.stderr)
	}
	if want := "wick: warning: -cfg: unknown run option passed to scheduler: log_dri=/tmp (did you mean \"log_dir\"?); skipped, as TorchX does\n"; r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
	if !strings.Contains(r.stdout, "entrypoint:   echo") {
		t.Errorf("the dry run was not printed:\n%s", r.stdout)
	}
}
