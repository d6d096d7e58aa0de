package wall_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/wick-dev/wick/engine/gpus"
	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/spec"
)

// TestWallTitlesShowGPU: where nvidia-smi answers (a fake on PATH printing the rows of
// engine/gpus/testdata/query-gpu-use.csv, in the format nvidia-smi(1) documents, and
// no compute process), a running replica's pane title shows, after its CPU and RSS,
// its GPU (its own, from auto_set_cuda_visible_devices over CUDA_VISIBLE_DEVICES=0,1),
// the GPU's utilization and memory, and what its own processes hold.
func TestWallTitlesShowGPU(t *testing.T) {
	e := newEnv(t)
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
	app := shApp("gpus", 2, `echo "w$K up"; sleep 60`)
	app.Roles[0].Resource.GPU = 1
	h, err := e.r.Run(context.Background(), app, local.NameCwd, spec.Cfg{local.OptAutoCuda: true}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.r.Cancel(context.Background(), h) })
	d := e.open(h, 220, 30, nil)
	d.waitFor("w0 up", "w1 up", "RUNNING")
	d.waitForRe(regexp.MustCompile(`worker/0 RUNNING .*CPU \d+% RSS \S+ GPU 0 87% 29\.8/79\.6GiB own 0B.*│.*worker/1 RUNNING .*GPU 1 3% 1\.0/79\.6GiB own 0B`))
}
