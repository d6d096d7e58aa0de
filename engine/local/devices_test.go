package local

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// startWith dry-runs and schedules app with its device pool, returning its id.
func startWith(t *testing.T, s *Scheduler, app *spec.AppDef, cfg spec.Cfg, pool []string) string {
	t.Helper()
	resolved, err := s.RunOpts().Resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sub := sched.Submission{AppID: spec.MakeAppID(app.Name), Session: s.cfg.Session, App: app, Cfg: resolved, Devices: pool}
	req, err := s.DryRun(context.Background(), sub)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Schedule(context.Background(), &sched.DryRunInfo{Scheduler: s.name, Submission: sub, Request: req}, nil); err != nil {
		t.Fatal(err)
	}
	return sub.AppID
}

// seen is what CUDA_VISIBLE_DEVICES replica k of role saw, as it printed it.
func seen(t *testing.T, s *Scheduler, id, role string, k int) string {
	t.Helper()
	return strings.TrimSpace(lineTexts(logLines(t, s, id, role, k, sched.LogOptions{})))
}

// printCuda is a role whose replicas print their CUDA_VISIBLE_DEVICES ("unset" when
// it is not set) and stay a moment, so that the apps of a test run at once.
func printCuda(name string, replicas, gpu int) spec.Role {
	r := role(name, "sh", "-c", `echo "${CUDA_VISIBLE_DEVICES-unset}"; sleep 0.5`)
	r.NumReplicas, r.Resource.GPU = replicas, gpu
	return r
}

// TestDevicePoolPerReplica runs two apps at once, each given its pool at the seam
// (as a sweep's queue gives it), on local_cwd and local_dir, with the auto option on
// and off, under a launcher whose own CUDA_VISIBLE_DEVICES names other devices: every
// replica sees its own slice of its app's pool, and no device is seen twice.
func TestDevicePoolPerReplica(t *testing.T) {
	t.Setenv("CUDA_VISIBLE_DEVICES", "7")
	for _, dir := range []bool{false, true} {
		for _, auto := range []bool{false, true} {
			t.Run(fmt.Sprintf("dir=%v,auto=%v", dir, auto), func(t *testing.T) {
				s := testScheduler(t, dir)
				mk := func(name string, roles ...spec.Role) *spec.AppDef {
					app := appOf(name, roles...)
					for i := range app.Roles {
						app.Roles[i].Image = t.TempDir() // local_dir's directory; local_cwd ignores it
					}
					return app
				}
				cfg := spec.Cfg{OptAutoCuda: auto}
				// a: two trainers of one GPU each and a helper that asks for none
				// (it gets one of its own all the same: it would see every GPU).
				a := startWith(t, s, mk("a", printCuda("trainer", 2, 1), printCuda("helper", 1, 0)), cfg, []string{"0", "1", "2"})
				// b: two replicas of two GPUs each, named by UUID (GPU and MIG).
				bPool := []string{"GPU-48aeb943-9458-4282-da24-e5f49e0db44b", "GPU-1b724e78-eef5-4163-d43c-e4da15d41176",
					"MIG-fb42055e-9e53-5764-9278-438605a3014c", "MIG-3d4db13e-c42d-5555-98f4-8b50389791bc"}
				b := startWith(t, s, mk("b", printCuda("worker", 2, 2)), cfg, bPool)
				waitApp(t, s, a)
				waitApp(t, s, b)
				want := []struct {
					id, role string
					k        int
					devs     string
				}{
					{a, "trainer", 0, "0"}, {a, "trainer", 1, "1"}, {a, "helper", 0, "2"},
					{b, "worker", 0, bPool[0] + "," + bPool[1]}, {b, "worker", 1, bPool[2] + "," + bPool[3]},
				}
				owner := map[string]string{}
				for _, w := range want {
					got := seen(t, s, w.id, w.role, w.k)
					if got != w.devs {
						t.Errorf("%s/%s/%d saw %q, want %q", w.id, w.role, w.k, got, w.devs)
					}
					for _, d := range strings.Split(got, ",") {
						who := fmt.Sprintf("%s/%s/%d", w.id, w.role, w.k)
						if o, ok := owner[d]; ok {
							t.Errorf("device %s seen by %s and %s", d, o, who)
						}
						owner[d] = who
					}
				}
			})
		}
	}
}

// TestAutoCudaHandsOutTheUsersDevices: without a pool, auto_set_cuda_visible_devices
// hands out the entries of the launcher's CUDA_VISIBLE_DEVICES (indexes or UUIDs), not
// devices counted from 0; with the option off, every replica keeps the launcher's
// value, as TorchX leaves it.
func TestAutoCudaHandsOutTheUsersDevices(t *testing.T) {
	s := testScheduler(t, false)
	uuids := "GPU-48aeb943-9458-4282-da24-e5f49e0db44b,MIG-fb42055e-9e53-5764-9278-438605a3014c,MIG-3d4db13e-c42d-5555-98f4-8b50389791bc"
	for _, c := range []struct {
		visible string
		auto    bool
		want    []string
	}{
		{"1,3", true, []string{"1", "3"}},
		{uuids, true, strings.Split(uuids, ",")[:2]},
		{"1,3", false, []string{"1,3", "1,3"}},
	} {
		t.Setenv("CUDA_VISIBLE_DEVICES", c.visible)
		id := start(t, s, appOf("u", printCuda("trainer", 2, 1)), spec.Cfg{OptAutoCuda: c.auto})
		waitApp(t, s, id)
		for k, w := range c.want {
			if got := seen(t, s, id, "trainer", k); got != w {
				t.Errorf("CUDA_VISIBLE_DEVICES=%s auto=%v: trainer/%d saw %q, want %q", c.visible, c.auto, k, got, w)
			}
		}
	}
	// The user may use one GPU: two replicas of one GPU each do not fit; nothing is
	// made up (the issue saw 0..4 where only 1 existed).
	t.Setenv("CUDA_VISIBLE_DEVICES", "1")
	req := dryRun(t, s, appOf("u", printCuda("trainer", 2, 1)), spec.Cfg{OptAutoCuda: true}).Request.(*Request)
	if v, set := req.Roles[0].Replicas[0].Env["CUDA_VISIBLE_DEVICES"]; set || len(req.Warnings) != 1 || !strings.Contains(req.Warnings[0], "asks for 2 GPUs but 1 were found") {
		t.Errorf("2 GPUs of 1: set %q, warnings %q", v, req.Warnings)
	}
}

// TestDevicePoolTooSmall: a pool that cannot give every replica its own devices is
// refused before anything starts.
func TestDevicePoolTooSmall(t *testing.T) {
	s := testScheduler(t, false)
	resolved, _ := s.RunOpts().Resolve(nil)
	app := appOf("small", printCuda("trainer", 3, 1))
	_, err := s.DryRun(context.Background(), sched.Submission{AppID: "small-x", Session: "test", App: app, Cfg: resolved, Devices: []string{"0", "1"}})
	if err == nil || !strings.Contains(err.Error(), "need 3 devices") {
		t.Errorf("3 replicas on 2 devices: %v", err)
	}
}
