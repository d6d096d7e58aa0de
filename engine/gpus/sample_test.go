package gpus

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseSample: the rows of both queries as nvidia-smi(1) documents them
// (testdata/README.md), "[N/A]" included: a utilization that cannot be told is -1,
// not 0; a process whose memory cannot be told holds 0.
func TestParseSample(t *testing.T) {
	devs := ParseDevices(readFixture(t, "query-gpu-use.csv"))
	want := []Device{
		{Index: "0", UUID: "GPU-23b4975b-2171-ea56-f5f7-f78bf0cd300a", Util: 87, Used: 30541 * mib, Total: 81559 * mib},
		{Index: "1", UUID: "GPU-d0b27d44-e215-eeda-b053-6a2342e854c5", Util: 3, Used: 1024 * mib, Total: 81559 * mib},
		{Index: "2", UUID: "GPU-48aeb943-9458-4282-da24-e5f49e0db44b", Util: -1, Used: 2117 * mib, Total: 40960 * mib},
	}
	if !slices.Equal(devs, want) {
		t.Errorf("devices %+v\nwant %+v", devs, want)
	}
	procs := ParseProcs(readFixture(t, "query-apps.csv"))
	if !slices.Equal(procs, []Proc{{PID: 4021, UUID: want[0].UUID, Used: 30016 * mib}, {PID: 4022, UUID: want[1].UUID}}) {
		t.Errorf("procs %+v", procs)
	}
	if got := ParseProcs([]byte("No running processes found\n")); got != nil {
		t.Errorf("no processes: %+v", got)
	}
	if got := ParseDevices([]byte("index, uuid, utilization.gpu [%], memory.used [MiB], memory.total [MiB]\n")); got != nil {
		t.Errorf("a header read as a GPU: %+v", got)
	}
}

// TestSamplerRate: one sample serves every caller for SampleEvery (nvidia-smi runs
// twice a sample: the GPUs, their processes); a failed run leaves nvidia-smi alone
// for offFor; with no nvidia-smi on PATH there is no sample and nothing runs.
func TestSamplerRate(t *testing.T) {
	var runs atomic.Int32
	fail := false
	s := NewSampler(func(_ context.Context, args ...string) ([]byte, error) {
		runs.Add(1)
		if fail {
			return nil, errors.New("NVIDIA-SMI has failed")
		}
		if strings.HasPrefix(args[0], "--query-gpu=") {
			return readFixture(t, "query-gpu-use.csv"), nil
		}
		return readFixture(t, "query-apps.csv"), nil
	})
	now := time.Unix(1e9, 0)
	s.now = func() time.Time { return now }
	ctx := context.Background()
	for range 10 {
		if smp, err := s.Sample(ctx); err != nil || len(smp.Devices) != 3 || len(smp.Procs) != 2 {
			t.Fatalf("sample %+v, %v", smp, err)
		}
	}
	if n := runs.Load(); n != 3 {
		t.Errorf("10 samples within %s ran nvidia-smi %d times, want 3 (the GPUs, their processes, the MIG list)", SampleEvery, n)
	}
	now = now.Add(SampleEvery)
	fail = true
	if _, err := s.Sample(ctx); !errors.Is(err, ErrNoGPUs) {
		t.Errorf("failed run: %v", err)
	}
	runs.Store(0)
	now = now.Add(offFor - time.Second)
	if _, err := s.Sample(ctx); !errors.Is(err, ErrNoGPUs) || runs.Load() != 0 {
		t.Errorf("resting: %v after %d runs", err, runs.Load())
	}
	fail = false
	now = now.Add(time.Second)
	if _, err := s.Sample(ctx); err != nil || runs.Load() != 3 { // the MIG list is a minute old
		t.Errorf("after the rest: %v after %d runs", err, runs.Load())
	}

	t.Setenv("PATH", t.TempDir())
	if _, err := NewSampler(nil).Sample(ctx); !errors.Is(err, ErrNoGPUs) {
		t.Errorf("no nvidia-smi: %v", err)
	}
}

// TestAttribute: real processes. A replica (a shell given CUDA_VISIBLE_DEVICES=1) has
// a child (sleep) that holds memory on GPU 0 as nvidia-smi lists it: the replica's
// devices are 1 (its environment) and 0 (its process's), their utilization the mean
// of theirs, its own memory its child's. Another replica, with no process on a GPU,
// has its environment's device and owns nothing; a process of no replica counts for
// none.
func TestAttribute(t *testing.T) {
	start := func(visible string) (*exec.Cmd, int) {
		cmd := exec.Command("sh", "-c", "sleep 300 & echo $!; wait")
		cmd.Env = append(os.Environ(), EnvVisible+"="+visible)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		child, err := strconv.Atoi(strings.TrimSpace(line))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if p, err := os.FindProcess(child); err == nil {
				p.Kill()
			}
		})
		return cmd, child
	}
	a, aChild := start("1")
	b, _ := start("GPU-48aeb943-9458-4282-da24-e5f49e0db44b")
	smp := &Sample{Devices: ParseDevices(readFixture(t, "query-gpu-use.csv")), Procs: []Proc{
		{PID: aChild, UUID: "GPU-23b4975b-2171-ea56-f5f7-f78bf0cd300a", Used: 30016 * mib},
		{PID: os.Getpid(), UUID: "GPU-d0b27d44-e215-eeda-b053-6a2342e854c5", Used: 7 * mib},
	}}
	got := Attribute(smp, map[int]string{a.Process.Pid: "a", b.Process.Pid: "b"}, "/proc")
	wantA := Use{Devices: []string{"0", "1"}, Util: 45, Used: (30541 + 1024) * mib, Total: 2 * 81559 * mib, Own: 30016 * mib}
	if u := got["a"]; !slices.Equal(u.Devices, wantA.Devices) || u.Util != wantA.Util || u.Used != wantA.Used || u.Total != wantA.Total || u.Own != wantA.Own {
		t.Errorf("a: %+v\nwant %+v", u, wantA)
	}
	if u := got["b"]; !slices.Equal(u.Devices, []string{"2"}) || u.Util != -1 || u.Own != 0 || u.Total != 40960*mib {
		t.Errorf("b: %+v", u)
	}
	if len(got) != 2 {
		t.Errorf("replicas %v", got)
	}
}
