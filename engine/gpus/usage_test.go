package gpus_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/gpus"
	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
	"github.com/wick-dev/wick/internal/viewtest"
	"github.com/wick-dev/wick/tui/render"
)

// TestMain: the test binary is the supervisor of the local apps it launches.
func TestMain(m *testing.M) { viewtest.Main(m) }

// fakeSMI puts on PATH an nvidia-smi that answers the two queries of package gpus
// with the files gpu.csv and apps.csv of its directory (rows in the format
// nvidia-smi(1) documents: testdata/README.md), and returns that directory.
func fakeSMI(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\ncase \"$1\" in\n--query-gpu=index,uuid,utilization.gpu,memory.used,memory.total) cat " + dir + "/gpu.csv;;\n--query-compute-apps=pid,gpu_uuid,used_memory) cat " + dir + "/apps.csv;;\n*) echo \"unexpected $*\" >&2; exit 2;;\nesac\n"
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	fixture, err := os.ReadFile("testdata/query-gpu-use.csv")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gpu.csv"), fixture, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return dir
}

// TestReplicaGPUUse: a real local app of two replicas, each given its own GPU by
// auto_set_cuda_visible_devices over the launcher's CUDA_VISIBLE_DEVICES=0,1; each
// replica's shell starts a child (sleep) that nvidia-smi lists as a compute process
// on the replica's GPU. The Runner's usage gives each replica its device, that
// device's utilization and memory, and its child's memory as its own; describe shows
// them in GPU columns beside CPU and RSS.
func TestReplicaGPUUse(t *testing.T) {
	dir := fakeSMI(t)
	t.Setenv(gpus.EnvVisible, "0,1")
	r := viewtest.Runner(t)
	pids := t.TempDir()
	role := spec.NewRole("trainer", "unused", "sh", "-c", `sleep 300 & echo $! > `+pids+`/child.${replica_id}.tmp && mv `+pids+`/child.${replica_id}.tmp `+pids+`/child.${replica_id}; wait`)
	role.NumReplicas, role.Resource.GPU = 2, 1
	ctx := context.Background()
	h, err := r.Run(ctx, &spec.AppDef{Name: "gpuuse", Roles: []spec.Role{role}}, local.NameCwd, spec.Cfg{local.OptAutoCuda: true}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	uuids := []string{"GPU-23b4975b-2171-ea56-f5f7-f78bf0cd300a", "GPU-d0b27d44-e215-eeda-b053-6a2342e854c5"}
	var rows bytes.Buffer
	for k := range 2 {
		var child int
		testkit.Wait(t, 30*time.Second, fmt.Sprintf("replica %d's child", k), func() (bool, string) {
			b, err := os.ReadFile(filepath.Join(pids, "child."+strconv.Itoa(k)))
			child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			return err == nil && child > 0, string(b)
		})
		fmt.Fprintf(&rows, "%d, %s, %d\n", child, uuids[k], 1000*(k+1))
	}
	if err := os.WriteFile(filepath.Join(dir, "apps.csv"), rows.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var by map[sched.ReplicaKey]sched.Usage
	testkit.Wait(t, 30*time.Second, "both replicas' GPU use", func() (bool, string) {
		by, err = r.Usage(ctx, h)
		return err == nil && len(by) == 2 && by[sched.ReplicaKey{Role: "trainer", Replica: 1}].GPU != nil, fmt.Sprint(by, err)
	})
	for k, want := range []spec.GPUUse{
		{Devices: []string{"0"}, Util: 87, Used: 30541 << 20, Total: 81559 << 20, Own: 1000 << 20},
		{Devices: []string{"1"}, Util: 3, Used: 1024 << 20, Total: 81559 << 20, Own: 2000 << 20},
	} {
		g := by[sched.ReplicaKey{Role: "trainer", Replica: k}].GPU
		if g == nil || strings.Join(g.Devices, ",") != strings.Join(want.Devices, ",") || g.Util != want.Util || g.Used != want.Used || g.Total != want.Total || g.Own != want.Own {
			t.Errorf("replica %d: %+v, want %+v", k, g, want)
		}
	}

	st, err := r.Status(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.AttachUsage(ctx, h, st); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := render.Status(&out, st, time.Now(), render.Plain{}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"GPU%", "GPU MEM", "OWN", "87%", "29.8/79.6GiB", "1000MiB", "1.95GiB"} {
		if !strings.Contains(text, want) {
			t.Errorf("describe lacks %q:\n%s", want, text)
		}
	}
	if err := r.Cancel(ctx, h); err != nil {
		t.Fatal(err)
	}
}
