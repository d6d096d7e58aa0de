package local

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/gpus"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// holdCuda is a role whose replicas print their CUDA_VISIBLE_DEVICES and then run
// until the file gate exists: the apps of a test are running at once for as long as
// the test needs, whatever the machine's load.
func holdCuda(name string, replicas, gpu int, gate string) spec.Role {
	r := role(name, "sh", "-c", `echo "${CUDA_VISIBLE_DEVICES-unset}"; while [ ! -e "`+gate+`" ]; do sleep 0.05; done`)
	r.NumReplicas, r.Resource.GPU = replicas, gpu
	return r
}

// waitPrinted waits until replica k of role of app id has printed its line, and
// returns it (read from its stdout file: the app is still running).
func waitPrinted(t *testing.T, s *Scheduler, id, role string, k int) string {
	t.Helper()
	var path string
	for _, r := range dryRunOf(t, s, id).Roles {
		if r.Name == role {
			path = r.Replicas[k].Stdout
		}
	}
	var got string
	testkit.Wait(t, 20*time.Second, id+" printed its devices", func() (bool, string) {
		b, _ := os.ReadFile(path)
		got = strings.TrimSpace(string(b))
		return strings.HasSuffix(string(b), "\n"), got
	})
	return got
}

// TestDeviceLeasesMachineWide: on a machine of four GPUs (the launcher's
// CUDA_VISIBLE_DEVICES), a sweep's app holds GPUs 0 and 1 (its pool, given as the
// queue gives it). A plain run with auto_set_cuda_visible_devices, while it runs, gets
// 2 and 3, not 0 and 1; one more is refused, naming who holds the GPUs; a sweep's app
// given a held GPU is refused with gpus.ErrBusy (its queue waits). Once the apps end,
// their GPUs are free again: a plain run gets 0 and 1.
func TestDeviceLeasesMachineWide(t *testing.T) {
	t.Setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
	s := testScheduler(t, false)
	gate := filepath.Join(t.TempDir(), "end")
	auto := spec.Cfg{OptAutoCuda: true}
	point := startWith(t, s, appOf("point", holdCuda("trainer", 2, 1, gate)), nil, []string{"0", "1"})
	plain := start(t, s, appOf("plain", holdCuda("trainer", 2, 1, gate)), auto)
	for k, want := range []string{"0", "1"} {
		if got := waitPrinted(t, s, point, "trainer", k); got != want {
			t.Errorf("the sweep's app: trainer/%d saw %q, want %q", k, got, want)
		}
	}
	for k, want := range []string{"2", "3"} {
		if got := waitPrinted(t, s, plain, "trainer", k); got != want {
			t.Errorf("the plain run during the sweep: trainer/%d saw %q, want %q", k, got, want)
		}
	}
	resolved, _ := s.RunOpts().Resolve(auto)
	_, err := s.DryRun(context.Background(), sched.Submission{AppID: "more-x", Session: "test", App: appOf("more", holdCuda("t", 1, 1, gate)), Cfg: resolved})
	var busy *gpus.BusyError
	if !errors.As(err, &busy) || !strings.Contains(err.Error(), "0 of this machine's 4 are free") || busy.Holders["0"] != point || busy.Holders["3"] != plain {
		t.Errorf("a third app with every GPU held: %v", err)
	}
	none, _ := s.RunOpts().Resolve(nil)
	_, err = s.DryRun(context.Background(), sched.Submission{AppID: "next-x", Session: "test", App: appOf("next", holdCuda("t", 1, 1, gate)), Cfg: none, Devices: []string{"3"}})
	if !errors.Is(err, gpus.ErrBusy) || !strings.Contains(err.Error(), "3 (app "+plain+")") {
		t.Errorf("a sweep's app given a GPU the plain run holds: %v", err)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitApp(t, s, point)
	waitApp(t, s, plain)
	after := start(t, s, appOf("after", holdCuda("trainer", 2, 1, gate)), auto)
	for k, want := range []string{"0", "1"} {
		if got := waitPrinted(t, s, after, "trainer", k); got != want {
			t.Errorf("after the others ended: trainer/%d saw %q, want %q", k, got, want)
		}
	}
	waitApp(t, s, after)
}

// TestDeviceLeaseRaceAtLaunch: two plain runs planned before either launches both plan
// GPU 0; the first launched takes it, the second's launch is refused (ErrBusy) and
// leaves nothing behind, rather than sharing the GPU.
func TestDeviceLeaseRaceAtLaunch(t *testing.T) {
	t.Setenv("CUDA_VISIBLE_DEVICES", "0")
	s := testScheduler(t, false)
	gate := filepath.Join(t.TempDir(), "end")
	auto := spec.Cfg{OptAutoCuda: true}
	a := dryRun(t, s, appOf("a", holdCuda("t", 1, 1, gate)), auto)
	b := dryRun(t, s, appOf("b", holdCuda("t", 1, 1, gate)), auto)
	if err := s.Schedule(context.Background(), a, nil); err != nil {
		t.Fatal(err)
	}
	err := s.Schedule(context.Background(), b, nil)
	if !errors.Is(err, gpus.ErrBusy) || !strings.Contains(err.Error(), "0 (app "+a.AppID+")") {
		t.Errorf("second launch on the same GPU: %v", err)
	}
	if _, err := s.Describe(context.Background(), b.AppID); !errors.Is(err, sched.ErrNotFound) {
		t.Errorf("the refused app was left behind: %v", err)
	}
	// Its supervisor, started before the lease was taken, was never told to go: it
	// ends without a trace.
	bDir, _ := s.appDir(b.AppID)
	testkit.Wait(t, 20*time.Second, "the refused app's supervisor gone", func() (bool, string) {
		return !supervisorComing(bDir), "a process still runs __supervise " + bDir
	})
	if _, err := os.Lstat(bDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused app's state directory: %v, want it gone", err)
	}
	if got := waitPrinted(t, s, a.AppID, "t", 0); got != "0" {
		t.Errorf("the first app saw %q, want 0", got)
	}
	os.WriteFile(gate, nil, 0o600)
	waitApp(t, s, a.AppID)
}

// TestDeviceLeaseFreedByKill9: an app whose supervisor is killed (kill -9) holds its
// GPU no more: the next app given that GPU is launched and sees it.
func TestDeviceLeaseFreedByKill9(t *testing.T) {
	s := testScheduler(t, false)
	gate := filepath.Join(t.TempDir(), "end")
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o600) })
	first := startWith(t, s, appOf("first", holdCuda("t", 1, 1, gate)), nil, []string{"0"})
	if got := waitPrinted(t, s, first, "t", 0); got != "0" {
		t.Fatalf("first saw %q", got)
	}
	if owner, held := s.leases().Holder("0"); !held || owner != first {
		t.Fatalf("GPU 0 held by %q (%v), want %s", owner, held, first)
	}
	_, raw, err := s.load(first)
	if err != nil {
		t.Fatal(err)
	}
	waitReaper(t, raw.Supervisor.PID)
	if err := unix.Kill(raw.Supervisor.PID, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.Wait(t, 20*time.Second, "GPU 0 free once the supervisor is gone", func() (bool, string) {
		owner, held := s.leases().Holder("0")
		return !held, owner
	})
	next := startWith(t, s, appOf("next", holdCuda("t", 1, 1, gate)), nil, []string{"0"})
	if got := waitPrinted(t, s, next, "t", 0); got != "0" {
		t.Errorf("next saw %q, want 0", got)
	}
	os.WriteFile(gate, nil, 0o600)
	waitApp(t, s, next)
}
