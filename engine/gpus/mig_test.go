package gpus

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary is also a fake nvidia-smi: run through a link of that name with
// WICK_TEST_FAKE_SMI naming a directory, it appends its arguments to DIR/runs, burns
// WICK_TEST_SMI_BURN of CPU time, and prints DIR/gpu.csv, DIR/apps.csv or DIR/L.txt
// for the queries and -L.
func init() {
	dir := os.Getenv("WICK_TEST_FAKE_SMI")
	if dir == "" || filepath.Base(os.Args[0]) != "nvidia-smi" {
		return
	}
	if f, err := os.OpenFile(filepath.Join(dir, "runs"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
		f.WriteString(strings.Join(os.Args[1:], " ") + "\n")
		f.Close()
	}
	burn, _ := time.ParseDuration(os.Getenv("WICK_TEST_SMI_BURN"))
	for x := 0; cpuTime() < burn; x++ {
		_ = x * x
	}
	name := map[string]string{queryGPUArgs[0]: "gpu.csv", queryAppsArgs[0]: "apps.csv", "-L": "L.txt"}[os.Args[1]]
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		os.Exit(2)
	}
	os.Stdout.Write(b)
	os.Exit(0)
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fakeSMIProgram puts the fake nvidia-smi (the test binary) first on PATH, answering
// with the fixtures named, burning burn of CPU time a run; it returns its directory.
func fakeSMIProgram(t *testing.T, burn time.Duration, gpu, apps, list string) string {
	t.Helper()
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(dir, "nvidia-smi")); err != nil {
		t.Fatal(err)
	}
	for name, fixture := range map[string]string{"gpu.csv": gpu, "apps.csv": apps, "L.txt": list} {
		if fixture != "" {
			if err := os.WriteFile(filepath.Join(dir, name), readFixture(t, fixture), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Setenv("WICK_TEST_FAKE_SMI", dir)
	t.Setenv("WICK_TEST_SMI_BURN", burn.String())
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return dir
}

// TestParseMIG: nvidia-smi -L as NVIDIA's MIG User Guide prints it (testdata/
// smi-L-mig.txt: an A100 split in seven 1g.5gb devices, indented under their GPU)
// maps each MIG UUID to its GPU's; a machine without MIG has none; the older MIG
// name (MIG-GPU-UUID/GI/CI) names its GPU itself.
func TestParseMIG(t *testing.T) {
	const a100 = "GPU-48aeb943-9458-4282-da24-e5f49e0db44b"
	m := ParseMIG(readFixture(t, "smi-L-mig.txt"))
	if len(m) != 7 || m["MIG-fb42055e-9e53-5764-9278-438605a3014c"] != a100 || m["MIG-37e055e8-8890-567f-a646-ebf9fde3ce7a"] != a100 {
		t.Errorf("MIG devices %v", m)
	}
	if m := ParseMIG(readFixture(t, "smi-L-one.txt")); m != nil {
		t.Errorf("no MIG: %v", m)
	}
	if g := parentGPU(nil, "MIG-"+a100+"/1/0"); g != a100 {
		t.Errorf("old MIG name: %q", g)
	}
	if g := parentGPU(m, "GPU-x"); g != "" {
		t.Errorf("a GPU read as a MIG device of %q", g)
	}
}

// TestMIGReplicaUse: a real replica process given a MIG device
// (CUDA_VISIBLE_DEVICES=MIG-...), sampled from a fake nvidia-smi (a real program on
// PATH) that answers the queries and -L with the fixtures: its use is its GPU's
// (index 2, the A100 the MIG device is part of: memory 2117 of 40960 MiB, and a
// utilization the MIG-enabled GPU cannot tell), and a compute process nvidia-smi
// lists under the MIG device's UUID is its own.
func TestMIGReplicaUse(t *testing.T) {
	dir := fakeSMIProgram(t, 0, "query-gpu-use.csv", "", "smi-L-mig.txt")
	cmd := exec.Command("sleep", "300")
	cmd.Env = append(os.Environ(), EnvVisible+"=MIG-3d4db13e-c42d-5555-98f4-8b50389791bc")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	row := []byte(strings.Join([]string{strconv.Itoa(cmd.Process.Pid), "MIG-3d4db13e-c42d-5555-98f4-8b50389791bc", "512"}, ", ") + "\n")
	if err := os.WriteFile(filepath.Join(dir, "apps.csv"), row, 0o600); err != nil {
		t.Fatal(err)
	}
	sp := NewSampler(nil)
	sp.timeout = time.Minute // a loaded machine
	smp, err := sp.Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := Attribute(smp, map[int]string{cmd.Process.Pid: "r"}, "/proc")["r"]
	if !slices.Equal(got.Devices, []string{"2"}) || got.Util != -1 || got.Used != 2117*mib || got.Total != 40960*mib || got.Own != 512*mib {
		t.Errorf("the MIG replica's use %+v", got)
	}
}

// TestSamplerCostStretchesInterval: the sampler measures what each sample costs in
// CPU time (the fake nvidia-smi burns 200 ms a run, three runs: at least 600 ms) and
// serves a sample for 100 times that (at least 60 s, not SampleEvery): its share of
// a core stays under 1%. The matching its callers charge stretches it further.
func TestSamplerCostStretchesInterval(t *testing.T) {
	const burn = 200 * time.Millisecond
	dir := fakeSMIProgram(t, burn, "query-gpu-use.csv", "query-apps.csv", "smi-L-mig.txt")
	s := NewSampler(nil)
	s.timeout = time.Minute // 600 ms of CPU on a loaded machine: seconds
	now := time.Unix(1e9, 0)
	s.now = func() time.Time { return now }
	ctx := context.Background()
	if _, err := s.Sample(ctx); err != nil {
		t.Fatal(err)
	}
	cost, every := s.readCost(), s.readEvery()
	if cost < 3*burn {
		t.Fatalf("cost %s, want at least 3 runs of %s", cost, burn)
	}
	if every != max(SampleEvery, costFactor*cost) || every < costFactor*3*burn {
		t.Errorf("a sample of %s serves %s, want %d times that", cost, every, costFactor)
	}
	// Past SampleEvery, within every: the sample serves, nvidia-smi is not run.
	now = now.Add(2 * SampleEvery)
	if _, err := s.Sample(ctx); err != nil {
		t.Fatal(err)
	}
	if runs := readRuns(t, dir); runs != 3 {
		t.Errorf("nvidia-smi ran %d times, want the first sample's 3", runs)
	}
	s.Charge(time.Second)
	if s.readEvery() < costFactor*(cost+time.Second) {
		t.Errorf("a charged second of matching: every %s", s.readEvery())
	}
	now = now.Add(s.readEvery())
	if _, err := s.Sample(ctx); err != nil {
		t.Fatal(err)
	}
	// Sampled again: the two queries, and -L (the MIG list is over a minute old).
	if runs := readRuns(t, dir); runs != 6 {
		t.Errorf("nvidia-smi ran %d times, want 6", runs)
	}
}

// readEvery and readCost read the sampler's interval and last cost.
func (s *Sampler) readEvery() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.every
}

func (s *Sampler) readCost() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cost
}

func readRuns(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "runs"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}
