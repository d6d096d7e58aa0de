package kubernetes

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// torchImageEnv names the image with torch, on the test cluster's node, that the DDP
// test runs in. `make e2e-k8s-torch` builds one (scripts/docker-torch-image.sh, as
// `make e2e-docker-torch` does), moves it onto the node and sets it; nothing else
// does, since the build takes minutes and 1.3 GB: this test is not part of CI.
const torchImageEnv = "WICK_K8S_TORCH_IMAGE"

// ddpApp builds dist.ddp as a user would call it, running examples/ddp/SCRIPT (a
// hostPath mount of this checkout: the node is this machine) in the torch image:
// train.py (with @record) or multinode.py (without, as most scripts are).
func ddpApp(t *testing.T, image, j, script string, trainArgs ...string) *spec.AppDef {
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
		"--mounts", "type=bind,src=" + dir + ",dst=/ddp,readonly", "--script", "/ddp/" + script, "--"}, trainArgs...)
	args, err := c.Parse(argv, nil)
	if err != nil {
		t.Fatal(err)
	}
	app, err := c.AppDef(args)
	if err != nil {
		t.Fatal(err)
	}
	// dist.ddp asks 2 CPUs a node, the whole of the test node: no CPU request, so that
	// two 2x2 apps run at once (TorchX's resource for --cpu 0 is its default 2).
	for i := range app.Roles {
		app.Roles[i].Resource.CPU = 0
	}
	return app
}

// ddpWait waits for a DDP app's end (torch's import alone takes seconds per process on
// a busy machine).
func ddpWait(t *testing.T, s *Scheduler, id string) *sched.Description {
	t.Helper()
	waitState(t, s, id, 8*time.Minute, terminal)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(2*time.Minute))
	defer cancel()
	if _, err := s.Wait(ctx, id); err != nil {
		t.Fatal(err)
	}
	d, err := s.Describe(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// ddpLogs is every node's log of a DDP app, joined.
func ddpLogs(t *testing.T, s *Scheduler, id string, app *spec.AppDef) string {
	t.Helper()
	var all []string
	for k := range app.Roles[0].NumReplicas {
		all = append(all, texts(readLog(t, s, id, app.Roles[0].Name, k, sched.LogOptions{}))...)
	}
	return strings.Join(all, "\n")
}

// Issue 31: a real DDP training on Kubernetes (torch, gloo, torchrun's c10d
// rendezvous at rank 0's pod through the headless Service, each pod's node rank from
// its completion index): two nodes train to the end; two 2x2 apps at once, each on its
// own store, with each rank's lines labelled with torch's rank; a rank that raises,
// with @record and without: the app's error names the rank as on local_docker.
func TestKubernetesTorchDDP(t *testing.T) {
	image := os.Getenv(torchImageEnv)
	if image == "" {
		t.Skip(torchImageEnv + " is not set: `make e2e-k8s-torch` builds an image with torch, moves it onto the test cluster's node and runs this test")
	}
	needCluster(t)
	s := newScheduler(t)
	t.Run("2x1", func(t *testing.T) {
		app := ddpApp(t, image, "2x1", "train.py", "--epochs", "2", "--samples", "1024")
		id := launch(t, s, app, nil)
		d := ddpWait(t, s, id)
		text := ddpLogs(t, s, id, app)
		if d.Status.State != spec.Succeeded {
			t.Fatalf("state %s: %s %s\n%s", d.Status.State, d.Status.Msg, d.Status.StructuredError, text)
		}
		for _, want := range []string{"rank 0 epoch 1 loss", "rank 1 epoch 1 loss", "rank 0 done", "rank 1 done"} {
			if !strings.Contains(text, want) {
				t.Errorf("no %q in the logs:\n%s", want, text)
			}
		}
	})
	t.Run("rank labels, two apps at once", func(t *testing.T) {
		// Two 2x2 apps of multinode.py, both on TorchX's default port 29500.
		var ids [2]string
		app := ddpApp(t, image, "2x2", "multinode.py", "2", "--step_delay", "0.05")
		for i := range ids {
			ids[i] = launch(t, s, app, nil)
		}
		for _, id := range ids {
			d := ddpWait(t, s, id)
			if d.Status.State != spec.Succeeded {
				t.Errorf("app %s: %s %s\n%s", id, d.Status.State, d.Status.Msg, ddpLogs(t, s, id, app))
				continue
			}
			role := d.App.Roles[0].Name
			seen := map[int]bool{}
			for k := range 2 {
				node := ranks.NodeOf(d, role, k, 2)
				for _, l := range readLog(t, s, id, role, k, sched.LogOptions{}) {
					node.Observe(l.Text)
					g, rest, ok := node.AttributeLine(&l)
					if !ok || !strings.HasPrefix(rest, "[RANK") {
						continue
					}
					if want := "[RANK" + strconv.Itoa(g) + "]"; !strings.HasPrefix(rest, want) {
						t.Errorf("app %s, node %d (group rank %v): %q labelled rank %d", id, k, d.Status.Roles[0].Replicas[k].GroupRank, rest, g)
					}
					seen[g] = true
				}
			}
			if len(seen) != 4 {
				t.Errorf("app %s: lines of ranks %v, want 0-3", id, seen)
			}
		}
	})
	failedWith := func(t *testing.T, app *spec.AppDef, want string) {
		t.Helper()
		id := launch(t, s, app, nil)
		d := ddpWait(t, s, id)
		st := d.Status
		if st.State != spec.Failed || st.Msg != want || spec.ErrorMessage(st.StructuredError) != want {
			t.Errorf("app %s, msg %q, error %q; want %q\n%s", st.State, st.Msg, spec.ErrorMessage(st.StructuredError), want, ddpLogs(t, s, id, app))
		}
	}
	t.Run("a rank raises, no @record", func(t *testing.T) {
		failedWith(t, ddpApp(t, image, "2x1", "multinode.py", "3", "--fail_rank", "1", "--fail_step", "3"),
			"rank 1: RuntimeError: loss diverged on rank 1 at step 3")
	})
	t.Run("a rank raises, @record", func(t *testing.T) {
		failedWith(t, ddpApp(t, image, "2x2", "train.py", "--epochs", "2", "--samples", "1024", "--fail_rank", "3", "--fail_step", "3"),
			"rank 3: InjectedFailure: rank 3 fails on purpose at step 3")
	})
}
