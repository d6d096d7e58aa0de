// Package testkit is what wick's tests share and nothing else imports: deadlines that
// grow with the machine's load, waits that poll for a condition, the test Slurm
// cluster `make slurm-up` started, free ports, and a tmux harness for end-to-end UI
// tests. It imports no wick package, so that any package's own tests can use it.
package testkit

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// maxFactor caps Factor: a machine 8 times over its cores is failing for other
// reasons, and a test's deadline is also what a real hang costs.
const maxFactor = 8

// pollEvery is how often Wait asks: well under any human-visible delay, and a few
// hundred asks per minute at most, which a loaded machine does not notice.
const pollEvery = 50 * time.Millisecond

// Factor is how much longer than on a quiet machine a test should wait now: the
// value of WICK_TEST_DEADLINE_FACTOR when set (a number ≥ 1), else the one-minute
// load average per core (from /proc/loadavg), at least 1 and at most 8. Deadlines only
// bound how long a test waits for what it expects; they never make a test pass.
func Factor() float64 {
	if v := os.Getenv("WICK_TEST_DEADLINE_FACTOR"); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 1 {
			return min(f, 100)
		}
	}
	f := 1.0
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if fields := strings.Fields(string(b)); len(fields) > 0 {
			if load, err := strconv.ParseFloat(fields[0], 64); err == nil {
				f = load / float64(runtime.NumCPU())
			}
		}
	}
	return min(max(f, 1), maxFactor)
}

// Scale is d stretched by Factor: the deadline for something that takes at most d on
// a quiet machine.
func Scale(d time.Duration) time.Duration {
	return time.Duration(float64(d) * Factor())
}

// Wait polls cond until it says done, for Scale(d) at most; then t fails with what
// and cond's last word (what it saw instead).
func Wait(t testing.TB, d time.Duration, what string, cond func() (done bool, last string)) {
	t.Helper()
	deadline := time.Now().Add(Scale(d))
	for {
		done, last := cond()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s (load factor %.1f); last: %s", what, Scale(d), Factor(), last)
		}
		time.Sleep(pollEvery)
	}
}

// FreePort is a TCP port on 127.0.0.1 the kernel just handed out and took back: free
// as far as one can know, and not a fixed number that other tests (or another run of
// the same test) on this machine may hold.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// InCI says whether the tests run in CI (CI=true), where what a test needs must be
// there: a missing tool fails the test instead of skipping it.
func InCI() bool { return os.Getenv("CI") == "true" }

// Missing skips t with why, or fails it under CI=true.
func Missing(t testing.TB, why string) {
	t.Helper()
	if InCI() {
		t.Fatalf("CI=true but %s", why)
	}
	t.Skip(why)
}

// Load is the one-minute load average (from /proc/loadavg), or -1 if unknown. Paired
// benchmarks report it beside their figures: on a shared machine a ratio means little
// without the load it was measured under.
func Load() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return -1
	}
	load, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return -1
	}
	return load
}

// BuildWick builds the wick main package in dir (the module root) into out as
// `make build` does: static (CGO_ENABLED=0) and -trimpath, so that the tests run the
// binary users run, without the dynamic loader's cost at each of the many starts a
// test makes; and beside it, as `make build` does, wick-supervisor, the program that
// runs local apps' supervisors, and wick-docker, the helper in which wick runs
// local_docker. The error holds go build's output.
func BuildWick(out, dir string) error {
	for _, b := range [][2]string{{out, "."}, {filepath.Join(filepath.Dir(out), "wick-supervisor"), "./cmd/wick-supervisor"}, {filepath.Join(filepath.Dir(out), "wick-docker"), "./cmd/wick-docker"}} {
		cmd := exec.Command("go", "build", "-trimpath", "-o", b[0], b[1])
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if o, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", b[1], err, o)
		}
	}
	return nil
}
