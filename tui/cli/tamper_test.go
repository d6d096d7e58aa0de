package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDescribeEscapesATamperedRoleName: a role name rewritten in launch.json to hold a
// terminal's title sequence reaches stderr (the metrics reader's complaint) escaped.
func TestDescribeEscapesATamperedRoleName(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "utils.echo", "--msg", "hi")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	launch := filepath.Join(h.home, "local", "apps", handle[strings.LastIndexByte(handle, '/')+1:], "launch.json")
	b, err := os.ReadFile(launch)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(launch, []byte(strings.ReplaceAll(string(b), `"echo"`, `"ech\u001b]0;pwned\u0007o"`)), 0o600); err != nil {
		t.Fatal(err)
	}
	d := h.exec("describe", handle)
	if strings.ContainsAny(d.stdout+d.stderr, "\x1b\x07") {
		t.Errorf("describe printed raw escape sequences: stdout %q, stderr %q", d.stdout, d.stderr)
	}
	if !strings.Contains(d.stderr, `ech\x1b]0;pwned\ao`) {
		t.Errorf("stderr does not show the name escaped: %q", d.stderr)
	}
}

// TestHugeNprocRefusedAtOnce: -j 1x1000000 would have torchrun start a million
// processes; the component refuses it before anything is launched.
func TestHugeNprocRefusedAtOnce(t *testing.T) {
	h := newHarness(t)
	for _, args := range [][]string{
		{"run", "--dryrun", "dist.ddp", "-j", "1x1000000", "--script", "train.py"},
		{"run", "dist.ddp", "-j", "1x1000000", "--script", "train.py"},
	} {
		r := h.exec(args...)
		want := "wick: dist.ddp: invalid -j 1x1000000: a node runs at most 4096 processes, as an app has at most 4096 replicas (got 1000000)\n"
		if r.code == 0 || r.stderr != want || r.stdout != "" {
			t.Errorf("wick %s: exit %d, stdout %q, stderr %q; want %q", strings.Join(args, " "), r.code, r.stdout, r.stderr, want)
		}
	}
	if l := h.exec("list"); strings.Contains(l.stdout, "ddp") {
		t.Errorf("something was launched:\n%s", l.stdout)
	}
}
