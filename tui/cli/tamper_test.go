package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
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
	// wick log's line prefix, on a terminal and off it, and with --raw: the role's name
	// in state.json too (the logs' paths, under echo/0, are left as they were).
	state := filepath.Join(filepath.Dir(launch), "state.json")
	if b, err = os.ReadFile(state); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(state, []byte(strings.ReplaceAll(string(b), `"echo"`, `"ech\u001b]0;pwned\u0007o"`)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"log", handle}, {"log", "--raw", handle}, {"log", "-t", handle}} {
		for _, r := range []result{h.runTTY(args...), h.run(args...)} {
			// Colors (SGR) on a terminal are wick's own; a title sequence (OSC) never is.
			if strings.Contains(r.stdout+r.stderr, "\x1b]") || strings.ContainsAny(r.stdout+r.stderr, "\x07") {
				t.Errorf("%v printed raw escape sequences: stdout %q, stderr %q", args, r.stdout, r.stderr)
			}
			if r.code != 0 || !strings.Contains(r.stdout, `ech\x1b]0;pwned\ao/0`) {
				t.Errorf("%v: exit %d, the prefix does not show the name escaped: %q %q", args, r.code, r.stdout, r.stderr)
			}
		}
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

// TestReplicaDamagingItsIndex: a replica writes 8 bytes into its own log index (it
// sits beside $TORCHELASTIC_ERROR_FILE): record 2 now claims 1 TiB. Every view reads
// the stored lines instead, and says once that the index is damaged.
func TestReplicaDamagingItsIndex(t *testing.T) {
	h := newHarness(t)
	script := `echo a; sleep 0.2; echo b; sleep 0.2; echo c; sleep 0.2
printf '\000\000\000\000\000\001\000\000' | dd of="$(dirname "$TORCHELASTIC_ERROR_FILE")/lines.idx" bs=1 seek=$((64*2+24)) conv=notrunc 2>/dev/null`
	r := h.exec("run", "utils.sh", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	warn := "wick: warning: logs of sh/0: "
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"log", "--since", "1h", handle}, "sh/0 a\nsh/0 b\nsh/0 c\n"},
		{[]string{"log", "-n", "2", handle}, "sh/0 b\nsh/0 c\n"},
		{[]string{"log", "--regex", "b|c", handle}, "sh/0 b\nsh/0 c\n"},
	} {
		got := h.exec(c.args...)
		if got.code != 0 || got.stdout != c.want || strings.Count(got.stderr, "\n") != 1 ||
			!strings.HasPrefix(got.stderr, warn) || !strings.Contains(got.stderr, "index damaged at record 2 (") || !strings.HasSuffix(got.stderr, "; reading combined.log instead\n") {
			t.Errorf("wick %s: exit %d, stdout %q, stderr %q", strings.Join(c.args, " "), got.code, got.stdout, got.stderr)
		}
	}
	js := h.exec("log", "--json", handle)
	if js.code != 0 || strings.Count(js.stdout, "\n") != 3 || !strings.Contains(js.stdout, `"text":"c"`) {
		t.Errorf("wick log --json: exit %d, stdout %q, stderr %q", js.code, js.stdout, js.stderr)
	}
	for _, verb := range []string{"describe", "metrics"} {
		got := h.exec(verb, handle)
		if !strings.Contains(got.stderr, "index damaged at record 2") || strings.Contains(got.stderr, "out of memory") {
			t.Errorf("wick %s: exit %d, stderr %q", verb, got.code, got.stderr)
		}
	}
}

// TestWarningsWaitForTheUI: an engine warning that comes while the UI owns the
// terminal is printed once the UI is done, not over its screen; each once.
func TestWarningsWaitForTheUI(t *testing.T) {
	var buf strings.Builder
	a := &app{env: Env{Stderr: &buf}}
	a.holdWarnings()
	a.warn("logs of w/0: index damaged at record 2 (length -3); reading combined.log instead")
	a.warn("logs of w/0: index damaged at record 2 (length -3); reading combined.log instead")
	if buf.Len() != 0 {
		t.Fatalf("printed while the UI runs: %q", buf.String())
	}
	a.flushWarnings()
	want := "wick: warning: logs of w/0: index damaged at record 2 (length -3); reading combined.log instead\n"
	if buf.String() != want {
		t.Fatalf("after the UI: %q, want %q", buf.String(), want)
	}
	a.warn("\x1b]0;x\x07 later")
	if got := buf.String()[len(want):]; got != "wick: warning: \\x1b]0;x\\a later\n" {
		t.Fatalf("after the flush: %q", got)
	}
}

// TestInterruptedLaunchSaysWhatWasLeft: a launch stopped by a signal whose rollback
// could not remove everything says so, and what is left, in one line; one that was
// rolled back says that. (engine/docker's TestRollbackSaysWhatItCouldNotRemove makes
// the error against the real Engine.)
func TestInterruptedLaunchSaysWhatWasLeft(t *testing.T) {
	var buf strings.Builder
	a := &app{env: Env{Stderr: &buf}}
	left := &sched.LeftBehindError{
		Err:  fmt.Errorf("starting container stuck-main-2: %w", context.Canceled),
		Left: errors.New("could not remove container stuck-main-2 (docker rm -f stuck-main-2): Could not kill running container"),
	}
	if err := a.interruptedLaunch(os.Interrupt, spec.Handle{}, left); err == nil {
		t.Fatal("exit 0")
	}
	want := "wick: interrupt during the launch: the launch was stopped, but its rollback left some of it: could not remove container stuck-main-2 (docker rm -f stuck-main-2): Could not kill running container\n"
	if buf.String() != want {
		t.Errorf("got %q\nwant %q", buf.String(), want)
	}
	buf.Reset()
	if err := a.interruptedLaunch(os.Interrupt, spec.Handle{}, fmt.Errorf("starting container x: %w", context.Canceled)); err == nil {
		t.Fatal("exit 0")
	}
	if want := "wick: interrupt during the launch: the launch was stopped and rolled back (starting container x: context canceled)\n"; buf.String() != want {
		t.Errorf("got %q\nwant %q", buf.String(), want)
	}
}
