package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/pystack"
	"github.com/wick-dev/wick/internal/testkit"
)

// needGDBPython skips t (fails it under CI=true) without a sampler that can read this
// machine's /usr/bin/python3.11: py-spy, or gdb with CPython's extension.
func needGDBPython(t *testing.T) pystack.Tool {
	t.Helper()
	tool, err := pystack.Find()
	if err == nil && tool.Name == "gdb" {
		if _, err2 := os.Stat("/usr/share/gdb/auto-load/usr/bin/python3.11-gdb.py"); err2 != nil {
			err = fmt.Errorf("gdb without CPython's extension (apt-get install python3-dbg)")
		}
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %v (make setup installs gdb and python3-dbg)", err)
		}
		t.Skip(err)
	}
	return tool
}

// stuckPy sleeps in stuck().
const stuckPy = "import time\n\ndef stuck():\n    time.sleep(3600)\n\nprint(\"ready\", flush=True)\nstuck()\n"

// pythonImage imports an image holding this machine's /usr/bin/python3.11 (Debian's,
// the one CPython's gdb extension here is for), the libraries it links, the encodings
// package it starts with, and scripts (by name, in /): a Python container without a
// registry, removed when t ends.
func pythonImage(t *testing.T, scripts map[string]string) string {
	t.Helper()
	dockerImage(t) // skips, or fails under CI=true, without an Engine
	dir := t.TempDir()
	files := map[string]string{
		"/usr/bin/python3.11":             "usr/bin/",
		"/lib/x86_64-linux-gnu/libm.so.6": "lib/x86_64-linux-gnu/", "/lib/x86_64-linux-gnu/libz.so.1": "lib/x86_64-linux-gnu/",
		"/lib/x86_64-linux-gnu/libexpat.so.1": "lib/x86_64-linux-gnu/", "/lib/x86_64-linux-gnu/libc.so.6": "lib/x86_64-linux-gnu/",
		"/lib64/ld-linux-x86-64.so.2": "lib64/",
	}
	for src, to := range files {
		if err := os.MkdirAll(filepath.Join(dir, to), 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("cp", "-L", src, filepath.Join(dir, to)).CombinedOutput(); err != nil {
			t.Skipf("this machine's Python is not Debian's: %v %s", err, out)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "usr/lib/python3.11"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", "/usr/lib/python3.11/encodings", filepath.Join(dir, "usr/lib/python3.11/")).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	for name, text := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ref := fmt.Sprintf("wick-stack-test:%d", time.Now().UnixNano())
	if out, err := exec.Command("sh", "-c", "tar -C "+dir+" -c . | docker import - "+ref).CombinedOutput(); err != nil {
		t.Fatalf("docker import: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", ref).Run() })
	return ref
}

// TestStackDocker: wick stack of a local_docker app samples its container's Python
// process from this machine (its host pid) and names where it is.
func TestStackDocker(t *testing.T) {
	needGDBPython(t)
	img := pythonImage(t, map[string]string{"stuck.py": stuckPy})
	h := newHarness(t)
	r := h.exec("run", "--detach", "-s", "local_docker", "utils.sh", "--image", img, "--entrypoint", "/usr/bin/python3.11", "--", "-S", "/stuck.py")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { h.exec("delete", "--force", handle) })
	testkit.Wait(t, time.Minute, "the script to start", func() (bool, string) {
		r := h.exec("log", handle)
		return strings.Contains(r.stdout, "ready"), r.stdout + r.stderr
	})
	r = execLong(h, "stack", "--full", handle)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "sh/0: stuck in stuck.py:4\n") || !strings.Contains(r.stdout, "  <module> in stuck.py:7\n") {
		t.Errorf("wick stack: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestStackSlurm: wick stack of a 1x2 DDP job on Slurm (examples/failures/hang.py:
// rank 1 sleeps before its all_reduce) samples each rank on its node and names where
// each one is; its hang alarm (--hang-after 6s) names rank 1, read from the nodes'
// output files.
func TestStackSlurm(t *testing.T) {
	t.Parallel()
	needSlurm(t)
	needGDBPython(t)
	h := failuresHarness(t)
	args := append([]string{"run", "--detach", "--hang-after", "6s", "-s", "slurm", "dist.ddp", "-j", "1x2", "--tee", "1", "--env", "PET_REDIRECTS=1"}, slurmPort(t)...)
	r := h.exec(append(args, "--script", "hang.py")...)
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { h.exec("cancel", handle) })
	testkit.Wait(t, ddpTimeout, "rank 0 at step 3", func() (bool, string) {
		r := h.exec("log", handle)
		return strings.Contains(r.stdout, "[0]:step 3 loss"), r.stdout + r.stderr
	})
	var out string
	// A sample may come while rank 0 is between its print and its all_reduce: up to
	// three looks.
	for range 3 {
		r := execLong(h, "stack", handle)
		out = r.stdout + r.stderr
		if strings.Contains(out, "rank 1: slow_io in hang.py:") && strings.Contains(out, "rank 0: all_reduce in distributed_c10d.py:") {
			break
		}
	}
	if !strings.Contains(out, "rank 1: slow_io in hang.py:") || !strings.Contains(out, "rank 0: all_reduce in distributed_c10d.py:") {
		t.Errorf("wick stack:\n%s", out)
	}
	testkit.Wait(t, time.Minute, "the hang alarm", func() (bool, string) {
		r := h.exec("status", handle)
		return strings.Contains(r.stdout, "(alarm after 6s); rank 1 stopped first, at step 2 (the others at 3)"), r.stdout
	})
}
