package docker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// torchImageEnv names the image with torch the DDP test runs in. `make
// e2e-docker-torch` builds one (scripts/docker-torch-image.sh) and sets it; nothing
// else does, since the build takes minutes and 1.4 GB: this test is not part of CI.
const torchImageEnv = "WICK_DOCKER_TORCH_IMAGE"

// ddpApp builds dist.ddp as a user would call it, running examples/ddp/train.py
// (mounted read-only) in the torch image.
func ddpApp(t *testing.T, image, j string, trainArgs ...string) *spec.AppDef {
	t.Helper()
	dir, err := filepath.Abs("../../examples/ddp")
	if err != nil {
		t.Fatal(err)
	}
	c, err := components.Find("dist.ddp", components.FindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Debian's torch 1.13 crashes on torchrun's --tee 3 and --redirects 0 (README).
	argv := append([]string{"-j", j, "--image", image, "--tee", "1", "--env", "PET_REDIRECTS=1",
		"--mounts", "type=bind,src=" + dir + ",dst=/ddp,readonly", "--script", "/ddp/train.py", "--"}, trainArgs...)
	args, err := c.Parse(argv, nil)
	if err != nil {
		t.Fatal(err)
	}
	app, err := c.AppDef(args)
	if err != nil {
		t.Fatal(err)
	}
	return app
}

// Issue 9 §6: a real DDP training (torch, gloo, torchrun's c10d rendezvous across
// containers that find each other by name) on local_docker, then one where a rank
// raises: the app's error names that rank's exception, from the error files.
func TestDockerTorchDDP(t *testing.T) {
	image := os.Getenv(torchImageEnv)
	if image == "" {
		t.Skip(torchImageEnv + " is not set: `make e2e-docker-torch` builds an image with torch and runs this test")
	}
	needEngine(t)
	s := newScheduler(t)
	ctx := context.Background()
	if _, err := env.cli.ImageInspect(ctx, image); err != nil {
		t.Fatalf("image %s: %v", image, err)
	}
	for _, j := range []string{"2x1", "1x2"} {
		t.Run(j, func(t *testing.T) {
			id := launch(t, s, ddpApp(t, image, j, "--epochs", "2", "--samples", "1024"), nil)
			d := wait(t, s, id, 5*time.Minute, func(st *spec.AppStatus) bool { return st.State.Terminal() })
			if d.Status.State != spec.Succeeded {
				t.Fatalf("state %s: %s %s", d.Status.State, d.Status.Msg, d.Status.StructuredError)
			}
			var all []string
			for k := range d.App.Roles[0].NumReplicas {
				all = append(all, texts(readLogs(t, s, id, d.App.Roles[0].Name, k, sched.LogOptions{}))...)
			}
			text := strings.Join(all, "\n")
			for _, want := range []string{"rank 0 epoch 1 loss", "rank 1 epoch 1 loss", "rank 0 done", "rank 1 done"} {
				if !strings.Contains(text, want) {
					t.Errorf("no %q in the logs:\n%s", want, text)
				}
			}
		})
	}
	t.Run("a rank raises", func(t *testing.T) {
		id := launch(t, s, ddpApp(t, image, "2x1", "--epochs", "2", "--samples", "1024", "--fail_rank", "1", "--fail_step", "3"), nil)
		st := wait(t, s, id, 5*time.Minute, func(st *spec.AppStatus) bool { return st.State.Terminal() }).Status
		if st.State != spec.Failed {
			t.Fatalf("state %s", st.State)
		}
		if msg := spec.ErrorMessage(st.StructuredError); !strings.Contains(msg, "rank 1 fails on purpose at step 3") {
			t.Errorf("app error %q (msg %q), want rank 1's InjectedFailure", st.StructuredError, st.Msg)
		}
		t.Logf("app message: %s", st.Msg)
	})
}
