package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/internal/testkit"
)

// burn holds args[0] MiB of memory, every page touched, and keeps a core busy writing
// it, for at most two minutes (a test that dies leaves nothing running for long).
func burn(args []string) {
	mb, _ := strconv.Atoi(args[0])
	b := make([]byte, mb<<20)
	fmt.Println("allocated")
	end := time.Now().Add(testkit.Scale(2 * time.Minute))
	for time.Now().Before(end) {
		for i := 0; i < len(b); i += 4096 {
			b[i]++
		}
	}
}

// TestUsageOfBurningReplicas runs two replicas, each a shell that starts two burners
// of 32 MiB in its process group, and checks that each replica shows the CPU it burns
// and a resident size above the 64 MiB its group allocated.
func TestUsageOfBurningReplicas(t *testing.T) {
	s := testScheduler(t, false)
	r := role("burn", "/bin/sh", "-c", `"$0" __helper burn 32 & "$0" __helper burn 32; wait`, os.Args[0])
	r.NumReplicas = 2
	id := start(t, s, appOf("burn", r), nil)
	t.Cleanup(func() { _ = s.Cancel(context.Background(), id); waitApp(t, s, id) })
	waitState(t, s, id, allRunning)

	const allocated = 64 << 20
	deadline := time.Now().Add(testkit.Scale(30 * time.Second))
	var u map[sched.ReplicaKey]sched.Usage
	for {
		var err error
		u, err = s.Usage(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		ok := len(u) == 2
		for _, v := range u {
			ok = ok && v.RSS > allocated && v.CPU > 0
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage never showed both replicas above %d bytes with CPU > 0: %+v", allocated, u)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A later sample measures over the time since the one before. CPU time is counted
	// in clock ticks (10 ms): on a busy machine a burner may get none in one interval,
	// so the samples go on, 300 ms apart, until one shows both burning.
	var u2 map[sched.ReplicaKey]sched.Usage
	testkit.Wait(t, 30*time.Second, "a later sample with both replicas burning", func() (bool, string) {
		time.Sleep(300 * time.Millisecond)
		var err error
		if u2, err = s.Usage(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		for k := range 2 {
			v := u2[sched.ReplicaKey{Role: "burn", Replica: k}]
			if v.CPU <= 0 || v.RSS <= allocated || v.At.IsZero() {
				return false, fmt.Sprintf("replica %d: %+v, want CPU > 0 and RSS > %d", k, v, allocated)
			}
		}
		return true, ""
	})
	for k := range 2 {
		v := u2[sched.ReplicaKey{Role: "burn", Replica: k}]
		t.Logf("replica %d: CPU %.2f cores, RSS %d MiB", k, v.CPU, v.RSS>>20)
	}

	if err := s.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	waitApp(t, s, id)
	u3, err := s.Usage(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(u3) != 0 {
		t.Errorf("a cancelled app still shows usage: %+v", u3)
	}
}

func TestUsageOfUnknownApp(t *testing.T) {
	s := testScheduler(t, false)
	if _, err := s.Usage(context.Background(), "nope-123"); err == nil {
		t.Fatal("no error for an unknown app")
	}
}

// TestUsageOfJustStartedProcess samples processes from the moment they start, as a
// user's first look at a new app does, and checks that a process found is never shown
// with no memory: /proc/PID/stat's resident field lags the kernel's per-CPU counts and
// read 0 in about 2% of such reads.
func TestUsageOfJustStartedProcess(t *testing.T) {
	var u usageSampler
	key := sched.ReplicaKey{Role: "r"}
	found := 0
	for i := 0; i < 40; i++ {
		c := exec.Command("/bin/sh", "-c", "exec sleep 60")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		groups := map[int]sched.ReplicaKey{c.Process.Pid: key}
		for end := time.Now().Add(10 * time.Millisecond); time.Now().Before(end); {
			out := map[sched.ReplicaKey]sched.Usage{}
			if err := u.sample(context.Background(), groups, out); err != nil {
				t.Fatal(err)
			}
			if v, ok := out[key]; ok {
				found++
				if v.RSS == 0 {
					t.Errorf("start %d: a live process shown with no memory: %+v", i, v)
				}
			}
		}
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	if found == 0 {
		t.Fatal("no sample found the started processes")
	}
	t.Logf("%d samples found a process", found)
}

func TestParseStatm(t *testing.T) {
	if n, ok := parseStatm([]byte("730 445 418 5 0 89 0\n")); !ok || n != 445 {
		t.Errorf("parseStatm = %d, %v; want 445", n, ok)
	}
	for _, bad := range []string{"", "730", "730 x 1"} {
		if _, ok := parseStatm([]byte(bad)); ok {
			t.Errorf("parseStatm(%q) accepted", bad)
		}
	}
}

func TestParseStat(t *testing.T) {
	line := "1234 (a) b) (c) S 1 1230 1230 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 9999 1000000 512 18446744073709551615"
	f, ok := parseStat([]byte(line))
	if !ok || f.pgrp != 1230 || f.ticks != 300 || f.start != 9999 || f.rss != 512 {
		t.Fatalf("parseStat = %+v, %v", f, ok)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 1 2", "1 (x) S 1 z 3 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 1 1 1"} {
		if _, ok := parseStat([]byte(bad)); ok {
			t.Errorf("parseStat(%q) accepted", bad)
		}
	}
}

// BenchmarkUsage8 measures one Usage call for an app of 8 running replicas: a scan
// of /proc plus a read of the state file.
func BenchmarkUsage8(b *testing.B) {
	s := testScheduler(b, false)
	r := role("idle", "/bin/sleep", "600")
	r.NumReplicas = 8
	id := start(b, s, appOf("idle", r), nil)
	b.Cleanup(func() { _ = s.Cancel(context.Background(), id); waitApp(b, s, id) })
	waitState(b, s, id, allRunning)
	cpu := cpuTime()
	for b.Loop() {
		u, err := s.Usage(context.Background(), id)
		if err != nil || len(u) != 8 {
			b.Fatal(len(u), err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// cpuTime is the CPU time (user + system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBareStat8 is the baseline: reading /proc/PID/stat of 8 processes, nothing
// else.
func BenchmarkBareStat8(b *testing.B) {
	var pids []string
	for range 8 {
		pids = append(pids, strconv.Itoa(os.Getpid()))
	}
	buf := make([]byte, maxStatBytes)
	cpu := cpuTime()
	defer func() { b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op") }()
	for b.Loop() {
		for _, p := range pids {
			if _, err := readBounded(filepath.Join("/proc", p, "stat"), buf); err != nil {
				b.Fatal(err)
			}
		}
	}
}
