package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
)

// smiPath is a PATH whose nvidia-smi answers as NVIDIA's documented output for the
// MIG machine of engine/gpus/testdata (one A100, index 0), and nothing else.
func smiPath(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	csv, err := os.ReadFile(filepath.Join("..", "gpus", "testdata", "query-gpu-mig.csv"))
	if err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\ncase \"$1\" in\n--query-gpu=*) printf '%s' '" + string(csv) + "' ;;\n*) exit 9 ;;\nesac\n"
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func sweepReq(env []string, sched string, params ...sweep.Param) sweep.Request {
	return sweep.Request{
		Component: "utils.sh", Args: []string{"--", "train.sh", "--lr", "1"}, Params: params,
		Scheduler: sched, Lookup: components.Lookup{}, Env: env,
	}
}

// TestPlanSweepDealsTheLaunchersPool plans one grid, as the CLI and the UI both do,
// under a launcher whose CUDA_VISIBLE_DEVICES names two devices: the pool is those
// two (nothing nvidia-smi says), the default parallelism one app per device, each
// app's need its replicas' count, every point's arguments its values (a component
// argument, and a flag of the script after --), and the launching environment is
// recorded without the queue's own variable.
func TestPlanSweepDealsTheLaunchersPool(t *testing.T) {
	r := newRunner(t)
	env := []string{"PATH=" + smiPath(t) + ":/usr/bin:/bin", "CUDA_VISIBLE_DEVICES=3,GPU-48aeb943-9458-4282-da24-e5f49e0db44b", sweep.EnvReady + "=3", "KEEP=1"}
	p, err := r.PlanSweep(context.Background(), sweepReq(env, "local_cwd",
		sweep.Param{Name: "num_replicas", Values: []string{"1", "2"}}, sweep.Param{Name: "lr", Values: []string{"0.1", "0.01"}}))
	if err != nil {
		t.Fatal(err)
	}
	sw := p.Sweep
	if want := []string{"3", "GPU-48aeb943-9458-4282-da24-e5f49e0db44b"}; !slices.Equal(sw.Devices, want) || sw.MaxParallel != 2 {
		t.Errorf("pool %q, max parallel %d: want %q, 2", sw.Devices, sw.MaxParallel, want)
	}
	if len(sw.Entries) != 4 || len(p.Plans) != 4 || len(p.DryRuns) != 4 {
		t.Fatalf("%d entries, %d plans, %d dry runs: want 4", len(sw.Entries), len(p.Plans), len(p.DryRuns))
	}
	wantArgs := [][]string{
		{"--num_replicas=1", "--", "train.sh", "--lr", "0.1"},
		{"--num_replicas=1", "--", "train.sh", "--lr", "0.01"},
		{"--num_replicas=2", "--", "train.sh", "--lr", "0.1"},
		{"--num_replicas=2", "--", "train.sh", "--lr", "0.01"},
	}
	handles := map[string]bool{}
	for i, e := range sw.Entries {
		if got := p.DryRuns[i].Call.Args; !slices.Equal(got, wantArgs[i]) {
			t.Errorf("point %d: args %q, want %q", i, got, wantArgs[i])
		}
		if want := []int{1, 1, 2, 2}[i]; e.GPUs != want {
			t.Errorf("point %d needs %d GPUs, want %d", i, e.GPUs, want)
		}
		if handles[e.Handle] || !strings.HasPrefix(e.Handle, "local_cwd://wick/sh-num_replicas") {
			t.Errorf("point %d: handle %q (twice, or not its values')", i, e.Handle)
		}
		handles[e.Handle] = true
	}
	if slices.ContainsFunc(sw.Env, func(kv string) bool { return strings.HasPrefix(kv, sweep.EnvReady+"=") }) || !slices.Contains(sw.Env, "KEEP=1") {
		t.Errorf("recorded env %q: want KEEP=1 and not %s", sw.Env, sweep.EnvReady)
	}
}

// TestPlanSweepPoolFromNvidiaSMI: without CUDA_VISIBLE_DEVICES the pool is what
// nvidia-smi lists (the MIG machine: one GPU); with it empty, no device at all and one
// app per core; on Slurm no pool and no limit (Slurm queues).
func TestPlanSweepPoolFromNvidiaSMI(t *testing.T) {
	r := newRunner(t)
	t.Setenv("PATH", smiPath(t)+":"+os.Getenv("PATH"))
	x := sweep.Param{Name: "x", Values: []string{"a", "b", "c"}}
	for _, c := range []struct {
		name, sched string
		env         []string
		pool        []string
		par         int
	}{
		{"nvidia-smi", "local_cwd", []string{"HOME=/x"}, []string{"0"}, 1},
		{"hidden", "local_cwd", []string{"CUDA_VISIBLE_DEVICES="}, nil, runtime.NumCPU()},
		{"slurm", "slurm", []string{"CUDA_VISIBLE_DEVICES=0,1"}, nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := r.PlanSweep(context.Background(), sweepReq(c.env, c.sched, x))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Sweep.Devices, c.pool) || p.Sweep.MaxParallel != c.par {
				t.Errorf("pool %q, max parallel %d: want %q, %d", p.Sweep.Devices, p.Sweep.MaxParallel, c.pool, c.par)
			}
		})
	}
}

// TestPlanSweepNamesTheBadPoint: a point whose app does not validate fails the plan,
// naming the point and keeping the cause; a swept name the component does not take
// is ErrBadSweep.
func TestPlanSweepNamesTheBadPoint(t *testing.T) {
	r := newRunner(t)
	_, err := r.PlanSweep(context.Background(), sweepReq(nil, "local_cwd", sweep.Param{Name: "num_replicas", Values: []string{"1", "0"}}))
	var pe *sweep.PointError
	if !errors.As(err, &pe) || !errors.Is(err, spec.ErrBadReplicas) || !strings.Contains(err.Error(), "num_replicas=0") {
		t.Errorf("got %v: want the point num_replicas=0 named, wrapping ErrBadReplicas", err)
	}
	req := sweepReq(nil, "local_cwd", sweep.Param{Name: "lr", Values: []string{"1", "2"}})
	req.Component, req.Args = "utils.echo", nil
	if _, err := r.PlanSweep(context.Background(), req); !errors.Is(err, sweep.ErrBadSweep) || !strings.Contains(err.Error(), `unknown NAME "lr"`) {
		t.Errorf("got %v: want ErrBadSweep naming lr", err)
	}
}
