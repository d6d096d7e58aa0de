package docker

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/wick-dev/wick/engine/gpus"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// TestDryRunHandsOutTheDevicePool: an app given its pool (a sweep's queue) gets, in
// every container, a device request for its very own devices, never a count (with a
// count, Docker gives every container the same first GPUs).
func TestDryRunHandsOutTheDevicePool(t *testing.T) {
	s, err := New(sched.Config{Session: "sess"})
	if err != nil {
		t.Fatal(err)
	}
	trainer := spec.NewRole("trainer", "pytorch:2", "python", "-m", "train")
	trainer.NumReplicas, trainer.Resource.GPU = 2, 2
	ps := spec.NewRole("ps", "redis:7", "redis-server")
	app := &spec.AppDef{Name: "trainer", Roles: []spec.Role{trainer, ps}}
	cfg, err := s.RunOpts().Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	pool := []string{"GPU-48aeb943-9458-4282-da24-e5f49e0db44b", "1", "2", "3", "MIG-fb42055e-9e53-5764-9278-438605a3014c"}
	sub := sched.Submission{AppID: "trainer-bcd0123456789", Session: "sess", App: app, Cfg: cfg, Devices: pool}
	got, err := s.DryRun(context.Background(), sub)
	if err != nil {
		t.Fatal(err)
	}
	req := got.(*Request)
	want := [][]string{pool[0:2], pool[2:4], pool[4:5]} // trainer 0, trainer 1, ps 0
	for i, c := range req.Containers {
		if !slices.Equal(c.GPUDevices, want[i]) || c.Resources.GPUs != 0 {
			t.Errorf("%s: devices %q gpus %d, want %q", c.Name, c.GPUDevices, c.Resources.GPUs, want[i])
		}
		call, err := createOptions(&req.Containers[i], req.record)
		if err != nil {
			t.Fatal(err)
		}
		drs := call.HostConfig.DeviceRequests
		if len(drs) != 1 || drs[0].Count != 0 || !slices.Equal(drs[0].DeviceIDs, want[i]) {
			t.Errorf("%s: device requests %+v, want exactly %q", c.Name, drs, want[i])
		}
	}
	if len(req.Warnings) != 0 {
		t.Errorf("warnings about GPUs the app was given: %q", req.Warnings)
	}
	// A pool too small for the replicas: refused, with the counts.
	sub.Devices = pool[:4]
	if _, err := s.DryRun(context.Background(), sub); !errors.Is(err, gpus.ErrShort) {
		t.Errorf("4 devices for 5: %v", err)
	}
}
