package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
		if !killedBy(err, sig) {
			t.Errorf("%s: wick ended with %v, want ended by %[1]s", sig, err)
		}
		if want := "wick: " + sig.String() + " during the launch: "; !strings.Contains(errb.String(), want) {
			t.Errorf("%s: stderr %q lacks %q", sig, errb.String(), want)
		}
		// The app is kept, cancelled: the message names it and its state, never says
		// that the launch was rolled back (nothing left).
		if !strings.Contains(errb.String(), handle) || !strings.Contains(errb.String(), "CANCELLED") || strings.Contains(errb.String(), "rolled back") {
			t.Errorf("%s: stderr %q, want %s named CANCELLED", sig, errb.String(), handle)
		}
		st := h.waitState(handle, spec.Cancelled)
		if running, _ := st.Replicas(); running != 0 {
			t.Errorf("%s: %d replicas still running", sig, running)
		}
	}
}

// TestSignalDuringDockerLaunchRollsBack: SIGINT to an attached `wick run -s
// local_docker` while its 64 containers are being created removes what was created:
// no container of the app is left, and no app stays SUBMITTED. The test interrupts
// on the Engine's first create event, not at a time: 64 containers are four waves of
// wick's 16 concurrent creates, so the launch is still under way when the signal
// lands, however loaded the machine.
func TestSignalDuringDockerLaunchRollsBack(t *testing.T) {
	t.Parallel()
	const replicas = 64
	img := dockerImage(t)
	h := newHarness(t)
	comp := filepath.Join(h.work, "many.yaml")
	yaml := fmt.Sprintf("many:\n  summary: %d looping replicas\n  params: []\n  app:\n    roles:\n      - name: w\n        image: %s"+
		"\n        entrypoint: /helper\n        args: [loop]\n        num_replicas: %d\n", replicas, img, replicas)
	if err := os.WriteFile(comp, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	containers := func() []string {
		out, _ := exec.Command("docker", "ps", "-a", "--filter", "label=dev.wick.role=w", "--filter", "ancestor="+img, "--format", "{{.Names}}").Output()
		return strings.Fields(string(out))
	}
	t.Cleanup(func() {
		for _, c := range containers() {
			exec.Command("docker", "rm", "-f", c).Run()
		}
	})
	// The Engine's create events for this test's image (its tag is the test's own),
	// from just before wick starts: --since replays what came before the stream was
	// set up, so the first create cannot be missed.
	evCtx, stopEvents := context.WithCancel(context.Background())
	events := exec.CommandContext(evCtx, "docker", "events", "--since", strconv.FormatInt(time.Now().Add(-time.Second).Unix(), 10),
		"--filter", "type=container", "--filter", "event=create", "--filter", "image="+img, "--format", "{{.Actor.Attributes.name}}")
	evOut, err := events.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := events.Start(); err != nil {
		t.Fatal(err)
	}
	created, read := make(chan string, 1), make(chan struct{})
	defer func() { stopEvents(); <-read; events.Wait() }()
	go func() {
		defer close(read)
		sc := bufio.NewScanner(evOut)
		if sc.Scan() {
			created <- sc.Text()
		}
		close(created)
		io.Copy(io.Discard, evOut) // the rest, until stopEvents ends docker events
	}()

	cmd := h.wickCmd(context.Background(), "run", "-s", "local_docker", comp+":many")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	select {
	case name, ok := <-created:
		if !ok {
			t.Fatalf("docker events ended before a container was created: %s", errb.String())
		}
		t.Logf("interrupting on the creation of %s", name)
	case <-time.After(testkit.Scale(60 * time.Second)):
		t.Fatalf("no container was created within %s: %s", testkit.Scale(60*time.Second), errb.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if !killedBy(err, syscall.SIGINT) {
		t.Errorf("wick ended with %v, want ended by SIGINT (stderr %s)", err, errb.String())
	}
	if !strings.Contains(errb.String(), "wick: interrupt during the launch: the launch was stopped and rolled back") {
		t.Errorf("stderr %q does not say the launch was stopped and rolled back", errb.String())
	}
	if left := containers(); len(left) != 0 {
		t.Errorf("containers left after the interrupted launch: %v", left)
	}
	if l := h.exec("list", "-s", "local_docker"); strings.Contains(l.stdout, "SUBMITTED") || strings.Contains(l.stdout, "many-") {
		t.Errorf("the interrupted app is listed:\n%s", l.stdout)
	}
}
