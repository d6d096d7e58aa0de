package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// launching starts an attached `wick run` of 64 replicas and returns it once its app
// exists but its supervisor has not reported the replicas started (the app is still
// PENDING): the launch window, which lasts seconds for 64 replicas here. It returns a
// nil command if the launch was over before it could be seen.
func launching(t *testing.T, h *harness) (*exec.Cmd, *bytes.Buffer, string) {
	t.Helper()
	cmd := h.wickCmd(context.Background(), "run", "demo.train", "--replicas", "64", "--duration", "60s", "--rate", "1", "--progress", "false")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	apps := filepath.Join(h.home, "local", "apps")
	for deadline := time.Now().Add(testkit.Scale(30 * time.Second)); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		entries, _ := os.ReadDir(apps)
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(apps, e.Name(), "state.json"))
			var st struct {
				State spec.AppState `json:"state"`
			}
			if err == nil && json.Unmarshal(b, &st) == nil {
				if st.State != spec.Submitted && st.State != spec.Pending {
					t.Logf("the launch was over (%s) before the test could interrupt it", st.State)
					return nil, nil, ""
				}
				return cmd, &errb, "local_cwd://wick/" + e.Name()
			}
		}
	}
	t.Fatal("no app appeared")
	return nil, nil, ""
}

// TestSignalDuringLaunchCancels: SIGINT or SIGTERM to an attached `wick run` while it
// is still starting its replicas stops the launch and cancels the app, and says so;
// nothing is left running.
func TestSignalDuringLaunchCancels(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		var h *harness
		var cmd *exec.Cmd
		var errb *bytes.Buffer
		var handle string
		// A machine fast enough to start 64 replicas between two looks gets more tries.
		for try := 0; cmd == nil; try++ {
			if try == 5 {
				t.Fatal("every launch was over before the test could interrupt it")
			}
			h = newHarness(t)
			cmd, errb, handle = launching(t, h)
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 1 {
			t.Errorf("%s: wick ended with %v, want exit status 1", sig, err)
		}
		if want := "wick: " + sig.String() + " during the launch: "; !strings.Contains(errb.String(), want) {
			t.Errorf("%s: stderr %q lacks %q", sig, errb.String(), want)
		}
		st := h.waitState(handle, spec.Cancelled)
		if running, _ := st.Replicas(); running != 0 {
			t.Errorf("%s: %d replicas still running", sig, running)
		}
	}
}

// TestSignalDuringDockerLaunchRollsBack: SIGINT to an attached `wick run -s
// local_docker` while its 16 containers are being created removes what was created:
// no container of the app is left, and no app stays SUBMITTED.
func TestSignalDuringDockerLaunchRollsBack(t *testing.T) {
	img := dockerImage(t)
	h := newHarness(t)
	comp := filepath.Join(h.work, "many.yaml")
	yaml := "many:\n  summary: 16 looping replicas\n  params: []\n  app:\n    roles:\n      - name: w\n        image: " + img +
		"\n        entrypoint: /helper\n        args: [loop]\n        num_replicas: 16\n"
	if err := os.WriteFile(comp, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := h.wickCmd(context.Background(), "run", "-s", "local_docker", comp+":many")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	containers := func() []string {
		out, _ := exec.Command("docker", "ps", "-a", "--filter", "label=dev.wick.role=w", "--filter", "ancestor="+img, "--format", "{{.Names}}").Output()
		return strings.Fields(string(out))
	}
	t.Cleanup(func() {
		for _, c := range containers() {
			exec.Command("docker", "rm", "-f", c).Run()
		}
	})
	for deadline := time.Now().Add(testkit.Scale(60 * time.Second)); len(containers()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no container was created: %s", errb.String())
		}
	}
	if n := len(containers()); n >= 16 {
		t.Fatalf("all %d containers were created before the test could interrupt the launch", n)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("wick ended with %v, want exit status 1 (stderr %s)", err, errb.String())
	}
	if !strings.Contains(errb.String(), "wick: interrupt during the launch: ") {
		t.Errorf("stderr %q does not say the launch was stopped", errb.String())
	}
	if left := containers(); len(left) != 0 {
		t.Errorf("containers left after the interrupted launch: %v", left)
	}
	if l := h.exec("list", "-s", "local_docker"); strings.Contains(l.stdout, "SUBMITTED") || strings.Contains(l.stdout, "many-") {
		t.Errorf("the interrupted app is listed:\n%s", l.stdout)
	}
}
