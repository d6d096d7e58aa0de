package docker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/spec"
)

// A replica that allocates past its memory limit (memMB: the container's --memory)
// is killed by the kernel's OOM killer in its cgroup, and the Engine says so
// (State.OOMKilled): the app's error is that replica's, named as such, not a bare
// "exit code 137". The helper image's `burn` holds 512 MiB against a 64 MiB limit;
// with the torch image (opt-in, WICK_DOCKER_TORCH_IMAGE), a Python script appends
// 1 MiB buffers until it is killed.
func TestOOMKilledReplicaIsTheCause(t *testing.T) {
	t.Parallel()
	s := newScheduler(t)
	type app struct {
		name string
		role spec.Role
	}
	hog := role("hog", 1, "burn", "512")
	cases := []app{{"helper", hog}}
	if image := os.Getenv(torchImageEnv); image != "" {
		py := spec.NewRole("python", image, "python3", "-c", "x = []\nwhile True:\n    x.append(bytearray(1 << 20))")
		py.NumReplicas = 1
		cases = append(cases, app{"python", py})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := c.role
			r.Resource.MemMB = 64
			id := launch(t, s, &spec.AppDef{Name: "oom", Roles: []spec.Role{r}}, nil)
			d := wait(t, s, id, 2*time.Minute, func(st *spec.AppStatus) bool { return st.State.Terminal() })
			want := r.Name + "/0: killed by the kernel's OOM killer (SIGKILL)"
			st := d.Status
			if st.State != spec.Failed || st.Msg != want || spec.ErrorMessage(st.StructuredError) != want {
				t.Errorf("app %s, msg %q, error %q; want %q", st.State, st.Msg, spec.ErrorMessage(st.StructuredError), want)
			}
			rep := st.Roles[0].Replicas[0]
			if rep.State != spec.Failed || rep.ExitCode == nil || *rep.ExitCode != 137 || !strings.Contains(spec.ErrorMessage(rep.StructuredError), "OOM killer") {
				t.Errorf("replica %s exit %v error %q", rep.State, rep.ExitCode, spec.ErrorMessage(rep.StructuredError))
			}
		})
	}
}

// A torchrun rank that runs out of memory (examples/failures/oom_rank.py, rank 1 of a
// 2x1 dist.ddp with dist.ddp's default memMB, 1024 per node) is killed by SIGKILL, as
// torchrun's summary says; its container was OOM-killed, as the Engine says: the
// app's error names the rank and the OOM killer. Opt-in: needs the torch image.
func TestOOMKilledRank(t *testing.T) {
	image := os.Getenv(torchImageEnv)
	if image == "" {
		t.Skip(torchImageEnv + " is not set: `make e2e-docker-torch` builds an image with torch and runs this test")
	}
	t.Parallel()
	dir, err := filepath.Abs("../../examples/failures")
	if err != nil {
		t.Fatal(err)
	}
	c, err := components.Find("dist.ddp", components.FindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	args, err := c.Parse([]string{"-j", "2x1", "--image", image, "--tee", "1", "--env", "PET_REDIRECTS=1",
		"--mounts", "type=bind,src=" + dir + ",dst=/failures,readonly", "--script", "/failures/oom_rank.py", "--", "--oom_rank", "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	app, err := c.AppDef(args)
	if err != nil {
		t.Fatal(err)
	}
	failedWith(t, newScheduler(t), app, "rank 1: killed by the kernel's OOM killer (SIGKILL)")
}
