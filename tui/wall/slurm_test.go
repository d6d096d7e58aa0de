package wall_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/internal/testkit"
)

// slurmUI is wick run on the test cluster and wick's UI in tmux beside it, each from
// a directory of its own, with a private WICK_HOME.
type slurmUI struct {
	t       *testing.T
	dir     string
	home    string
	environ []string
	tm      *testkit.Tmux
	// uiEnv is put before the UI's command line ("SLURM_CONF=... ").
	uiEnv string
}

// newSlurmUI checks for tmux and a cluster: without them it skips, or fails under
// CI=true.
func newSlurmUI(t *testing.T) *slurmUI {
	t.Helper()
	testkit.NeedTmux(t)
	testkit.NeedSlurm(t)
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "state")
	return &slurmUI{t: t, dir: dir, home: home,
		environ: append(os.Environ(), "WICK_HOME="+home, "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))}
}

// run runs wick with args from the submit directory and returns the handle it
// printed last; a detached app is cancelled when the test ends.
func (s *slurmUI) run(args ...string) string {
	s.t.Helper()
	// An attached run waits for its job: seconds once Slurm starts it, which a busy
	// cluster may put off.
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(2*time.Minute))
	defer cancel()
	run := exec.CommandContext(ctx, wickBin, args...)
	run.Env, run.Dir = s.environ, s.dir
	out, _ := run.Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	handle := lines[len(lines)-1]
	if !strings.HasPrefix(handle, "slurm://wick/") {
		s.t.Fatalf("wick %v printed %q", args, out)
	}
	s.t.Cleanup(func() {
		c := exec.Command(wickBin, "cancel", handle)
		c.Env = s.environ
		_ = c.Run()
	})
	return handle
}

// open starts `wick ui ARGS` at 160x48 from another directory than the submit one.
func (s *slurmUI) open(args string) {
	s.t.Helper()
	cmdline := "cd " + s.t.TempDir() + " && exec env " + s.uiEnv + "WICK_HOME=" + s.home + " HOME=" + s.dir + " TERM=xterm-256color " + wickBin + " ui " + args
	s.tm = testkit.StartTmux(s.t, 160, 48, cmdline)
}

// waitFor waits, a minute at most on a quiet machine, for the screen to show every
// one of want.
func (s *slurmUI) waitFor(want ...string) string {
	s.t.Helper()
	return s.tm.WaitFor(time.Minute, want...)
}

// TestE2EWallSlurmPendingReason: a slurm app Slurm cannot start yet says why in the
// wall's header, as Slurm says it.
func TestE2EWallSlurmPendingReason(t *testing.T) {
	t.Parallel()
	s := newSlurmUI(t)
	// 512 CPUs: no node of the test cluster has them, so Slurm keeps the job pending.
	handle := s.run("run", "-s", "slurm", "--detach", "dist.ddp", "-j", "1x1", "--cpu", "512", "--script", "train.py")
	s.open("--logs " + handle)
	s.waitFor("PENDING", "pending: PartitionConfig")
}

// TestE2EWallSlurm runs `wick ui --logs` in tmux on a slurm app of two replicas (two
// job components on the two nodes of the test cluster, `make slurm-up`): a pane per
// replica, lines arriving live from the files Slurm writes, and each replica's end.
// Without a cluster it skips; under CI=true it fails.
func TestE2EWallSlurm(t *testing.T) {
	t.Parallel()
	s := newSlurmUI(t)
	// Each replica prints 40 numbered lines on stdout and a few on stderr, 10 a second.
	script := `for i in $(seq 1 40); do echo "line $i of $WICK_ROLE/$WICK_REPLICA_ID"; [ $((i % 10)) = 0 ] && echo "warn $i" >&2; sleep 0.1; done`
	handle := s.run("run", "-s", "slurm", "--detach", "utils.sh", "--num_replicas", "2", "--", "sh", "-c", script)
	s.open("--logs " + handle)
	// Live: both panes running, lines arriving while the job runs.
	s.waitFor("sh/0 RUNNING", "sh/1 RUNNING", "following", "line 5 of sh/0", "line 5 of sh/1")
	// The end: every line, each replica's state and exit code.
	scr := s.waitFor("end of logs", "line 40 of sh/0", "line 40 of sh/1", "sh/0 SUCCEEDED exit 0", "sh/1 SUCCEEDED exit 0")
	if !strings.Contains(scr, "warn 40") {
		t.Errorf("stderr lines missing:\n%s", scr)
	}
}

// TestE2EAppsSlurm runs `wick ui` in tmux beside a finished slurm app: the app list
// shows it with its handle and result, and describe shows each replica's node and exit
// code, as for local apps.
func TestE2EAppsSlurm(t *testing.T) {
	t.Parallel()
	s := newSlurmUI(t)
	// Attached: returns when the app has ended; replica 1 fails with exit code 5. Replica
	// 0 may end first (SUCCEEDED) or be stopped by wick when replica 1 fails first
	// (nothing orders the two): either way the app FAILED because of replica 1.
	handle := s.run("run", "-s", "slurm", "utils.sh", "--num_replicas", "2", "--", "sh", "-c", `echo hi; [ "$WICK_REPLICA_ID" = 0 ] || exit 5`)
	s.open("")
	s.waitFor("Apps", handle, "FAILED", "0/2")
	// Other tests' apps may be listed too (local_docker lists the Engine's): filter
	// on the handle, then describe.
	s.tm.Keys("/")
	s.tm.Text(handle)
	s.tm.Keys("Enter")
	s.tm.Keys("Enter")
	scr := s.waitFor("sh/0", "sh/1", "FAILED", "sh/1: exit code 5")
	// Each replica's node: which ones depends on what else the cluster runs (other
	// packages' tests submit at the same time), so any of the two, for each.
	if n := len(regexp.MustCompile(`hostname: node[12]\b`).FindAllString(scr, -1)); n != 2 {
		t.Errorf("%d replicas with their node, want 2:\n%s", n, scr)
	}
}
