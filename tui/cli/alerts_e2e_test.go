package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/alerts"
	"github.com/wick-dev/wick/internal/testkit"
)

// alertCommands are the -cfg of on_end and on_alarm commands that append what they are
// told to files under dir: ended.txt and alarms.txt.
func alertCommands(dir string) (cfg, ended, alarms string) {
	ended, alarms = filepath.Join(dir, "ended.txt"), filepath.Join(dir, "alarms.txt")
	cfg = `on_end=echo "$WICK_APP_ID $WICK_STATE $WICK_ERROR" >> ` + ended +
		`,on_alarm=echo "$WICK_APP_ID $WICK_ALARM_KIND $WICK_STATE: $WICK_ALARM" >> ` + alarms
	return cfg, ended, alarms
}

// waitFileLine waits until file holds a line with every one of want, and returns the
// file.
func waitFileLine(t *testing.T, what, file string, want ...string) string {
	t.Helper()
	var text string
	testkit.Wait(t, 90*time.Second, what, func() (bool, string) {
		b, _ := os.ReadFile(file)
		text = string(b)
		for _, l := range strings.Split(text, "\n") {
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(l, w)
			}
			if ok {
				return true, text
			}
		}
		return false, text
	})
	return text
}

// checkAlerts runs, on the scheduler of run (wick run's flags before the component, and
// the component's, with SCRIPT standing for a shell script), an app that prints three
// steps, the last with a NaN loss, then stops printing; its hang time is 3 s. The
// on_alarm command is told the metric alarm and the hang while it runs, with no UI and
// no wick process of the test's left, and on_end once it is cancelled. A second app
// that fails tells on_end its cause.
func checkAlerts(t *testing.T, h *harness, run func(script string) []string, failing []string, failure string) {
	t.Helper()
	h.cmdEnv = append(h.cmdEnv, alerts.EnvEvery+"=1s")
	cfg, ended, alarms := alertCommands(t.TempDir())
	r := h.exec(append([]string{"run", "--detach", "--hang-after", "3s", "-cfg", cfg}, run("echo step 1 loss 0.5; echo step 2 loss 0.4; echo step 3 loss nan; sleep 300")...)...)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	hd := strings.TrimSpace(r.stdout)
	id := appID(hd)
	t.Cleanup(func() { h.exec("delete", "--force", hd) })
	waitFileLine(t, "the metric alarm told", alarms, id+" metric RUNNING: ", "NaN at step 3")
	waitFileLine(t, "the hang told", alarms, id+" hang RUNNING: hang: no output or new step for")
	if b, _ := os.ReadFile(ended); len(b) > 0 {
		t.Errorf("on_end ran while the app runs: %s", b)
	}
	if r := h.exec("cancel", hd); r.code != 0 {
		t.Fatalf("cancel: %d %s", r.code, r.stderr)
	}
	waitFileLine(t, "on_end of the cancelled app", ended, id+" CANCELLED")

	r = h.exec(append([]string{"run", "--detach", "-cfg", cfg}, failing...)...)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	failed := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { h.exec("delete", "--force", failed) })
	waitFileLine(t, "on_end of the failed app", ended, appID(failed)+" FAILED", failure)
	// Each command ran once: the supervisor's on_end (local) is not run again by
	// the watcher, and the watcher ends with the app.
	time.Sleep(testkit.Scale(3 * time.Second))
	b, _ := os.ReadFile(ended)
	if n := strings.Count(string(b), "\n"); n != 2 {
		t.Errorf("on_end ran %d times for two apps:\n%s", n, b)
	}
	b, _ = os.ReadFile(alarms)
	if n := strings.Count(string(b), " hang "); n != 1 {
		t.Errorf("on_alarm told the hang %d times:\n%s", n, b)
	}
}

// TestAlertsLocal: on_alarm on local_cwd (the watcher) beside on_end (the supervisor).
func TestAlertsLocal(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	checkAlerts(t, h, func(script string) []string {
		return []string{"utils.sh", "--", "sh", "-c", script}
	}, []string{"utils.sh", "--", "sh", "-c", "echo boom >&2; exit 3"}, "sh/0: exit code 3")
}

// TestAlertsDocker: on_end and on_alarm of a local_docker app, run by the watcher on
// this machine.
func TestAlertsDocker(t *testing.T) {
	t.Parallel()
	img := dockerImage(t)
	h := newHarness(t)
	checkAlerts(t, h, func(string) []string {
		return []string{"-s", "local_docker", "utils.sh", "--image", img, "--entrypoint", "/helper", "--", "steps", "300s", "0.5", "0.4", "nan"}
	}, []string{"-s", "local_docker", "utils.sh", "--image", img, "--entrypoint", "/helper", "--", "exit", "3"}, "sh/0: exit code 3")
}

// TestAlertsSlurm: on_end and on_alarm of a Slurm job, run by the watcher on the
// machine that submitted it.
func TestAlertsSlurm(t *testing.T) {
	needSlurm(t)
	h := newHarness(t)
	checkAlerts(t, h, func(script string) []string {
		return []string{"-s", "slurm", "utils.sh", "--", "sh", "-c", script}
	}, []string{"-s", "slurm", "utils.sh", "--", "sh", "-c", "echo boom >&2; exit 3"}, "sh/0: exit code 3")
}
