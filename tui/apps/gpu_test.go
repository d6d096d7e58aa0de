package apps_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/gpus"
	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/viewtest"
	"github.com/wick-dev/wick/tui/apps"
	"github.com/wick-dev/wick/tui/describe"
)

// TestAppListShowsGPUUse: where nvidia-smi answers (a fake on PATH printing the rows
// of engine/gpus/testdata/query-gpu-use.csv, in the format nvidia-smi(1) documents, no
// compute process), a running app of two replicas, each given its own GPU by
// auto_set_cuda_visible_devices over CUDA_VISIBLE_DEVICES=0,1, shows its GPUs beside
// its CPU and RSS: both devices, their mean utilization ((87+3)/2), their memory, and
// what its processes hold.
func TestAppListShowsGPUUse(t *testing.T) {
	dir := t.TempDir()
	fixture, err := os.ReadFile("../../engine/gpus/testdata/query-gpu-use.csv")
	if err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\ncase \"$1\" in\n--query-gpu=*) cat " + dir + "/gpu.csv;;\n--query-compute-apps=*) ;;\n*) exit 2;;\nesac\n"
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gpu.csv"), fixture, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv(gpus.EnvVisible, "0,1")
	r := viewtest.Runner(t)
	role := spec.NewRole("trainer", "unused", "sleep", "60")
	role.NumReplicas, role.Resource.GPU = 2, 1
	h, err := r.Run(context.Background(), &spec.AppDef{Name: "gpus", Roles: []spec.Role{role}}, local.NameCwd, spec.Cfg{local.OptAutoCuda: true}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Cancel(context.Background(), h) })

	vc := viewtest.Context(t, 200, 30, time.Now(), apps.Actions(), describe.Actions())
	vc.Backend = r
	d := viewtest.New(t, vc, apps.New(vc))
	d.WaitFor(h.String(), "RUNNING", "CPU/RSS", "GPU 0,1 45% 30.8/159GiB own 0B")
}
