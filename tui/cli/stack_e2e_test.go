package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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

// TestStackSlurmOwnReader: wick stack of a 2-replica Slurm app reads each replica's
// Python stack on its node with wick's own reader (the hidden verb, srun --overlap in
// the job), not the node's gdb: from the caller's binary where the node has it; from
// a copy sbcast puts in the node's /tmp where it does not (the caller's binary is in
// a mount namespace of its own, which slurmd does not see); and, where that cannot be
// done either (no sbcast), with the node's gdb, saying why.
func TestStackSlurmOwnReader(t *testing.T) {
	t.Parallel()
	needSlurm(t)
	h := newHarness(t)
	if err := os.WriteFile(filepath.Join(h.work, "stuck.py"), []byte(stuckPy), 0o644); err != nil {
		t.Fatal(err)
	}
	r := h.exec("run", "--detach", "-s", "slurm", "utils.sh", "--num_replicas", "2", "/usr/bin/python3.11", "-S", "stuck.py")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { h.exec("cancel", handle) })
	testkit.Wait(t, 3*time.Minute, "both replicas in stuck()", func() (bool, string) {
		r := h.exec("log", handle)
		return strings.Count(r.stdout, "ready") == 2, r.stdout + r.stderr
	})
	// stack runs wick stack --json with h2 and checks that both replicas are named in
	// stuck(), read by tool.
	stack := func(h2 *harness, tool string) result {
		t.Helper()
		t0 := time.Now()
		r := execLong(h2, "stack", "--json", handle)
		t.Logf("figure: wick stack of a 2-replica Slurm app (%s): %v", tool, time.Since(t0))
		var dumps []pystack.Dump
		if err := json.Unmarshal([]byte(r.stdout), &dumps); r.code != 0 || err != nil {
			t.Fatalf("wick stack --json: %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
		}
		if len(dumps) != 2 {
			t.Fatalf("%d dumps, want 2: %s", len(dumps), r.stdout)
		}
		for i, d := range dumps {
			if want := "sh/" + strconv.Itoa(i); d.Label != want || d.Tool != tool || pystack.Top(d.Frames) != "stuck in stuck.py:4" {
				t.Errorf("dump %d: %s read by %q, top %q; want %s read by %q in stuck in stuck.py:4\n%s", i, d.Label, d.Tool, pystack.Top(d.Frames), want, tool, r.stderr)
			}
		}
		return r
	}
	if r := stack(h, pystack.Builtin); r.stderr != "" {
		t.Errorf("stderr: %s", r.stderr)
	}
	if r := h.exec("stack", handle); r.stdout != "sh/0, sh/1: stuck in stuck.py:4\n" {
		t.Errorf("wick stack: %d %q %s", r.code, r.stdout, r.stderr)
	}

	if os.Getuid() != 0 {
		t.Skip("the node without wick's binary needs a mount namespace of its own (root)")
	}
	t.Run("sbcast", func(t *testing.T) {
		removeCopies(t, h.self)
		t.Cleanup(func() { removeCopies(t, h.self) })
		r := stack(unshared(t, h), pystack.Builtin)
		if r.stderr != "" {
			t.Errorf("stderr: %s", r.stderr)
		}
		if len(copiesOf(t, h.self)) != 1 {
			t.Errorf("no copy of wick in the node's /tmp")
		}
	})
	t.Run("no sbcast", func(t *testing.T) {
		needGDBPython(t)
		removeCopies(t, h.self)
		h2 := unshared(t, h)
		bin := t.TempDir()
		ents, err := os.ReadDir("/usr/bin")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.Name() != "sbcast" {
				if err := os.Symlink(filepath.Join("/usr/bin", e.Name()), filepath.Join(bin, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
		h2.cmdEnv = append(slices.Clone(h2.cmdEnv), "PATH="+bin)
		r := stack(h2, "gdb")
		if !strings.Contains(r.stderr, "wick: warning: "+handle+"/sh/0: wick cannot run where the replica runs: the node has no wick of this build at ") ||
			!strings.Contains(r.stderr, "sbcast") || !strings.Contains(r.stderr, ": sampled with the node's py-spy or gdb instead (slower)\n") {
			t.Errorf("the fallback is not explained: %s", r.stderr)
		}
	})
}

// unshared returns a harness like h whose wick runs from a binary in a mount namespace
// of its own (a tmpfs over an empty directory): no Slurm node sees it.
func unshared(t *testing.T, h *harness) *harness {
	t.Helper()
	dir := t.TempDir()
	wrapper := filepath.Join(t.TempDir(), "wick")
	script := `#!/bin/sh
exec unshare -m --propagation private /bin/sh -c 'mount -t tmpfs none "$1" && cp "$2" "$1/wick" && d=$1 && shift 2 && exec "$d/wick" "$@"' sh ` + dir + " " + h.self + ` "$@"
`
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	h2 := *h
	h2.t, h2.self = t, wrapper
	return &h2
}

// copiesOf returns the files of the user's in /tmp named as wick's copies on a node
// (engine/slurm's tmpCopy) that are self, byte for byte.
func copiesOf(t *testing.T, self string) []string {
	t.Helper()
	want, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	paths, _ := filepath.Glob("/tmp/wick-" + strconv.Itoa(os.Getuid()) + "-*")
	var out []string
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && bytes.Equal(b, want) {
			out = append(out, p)
		}
	}
	return out
}

func removeCopies(t *testing.T, self string) {
	for _, p := range copiesOf(t, self) {
		if err := os.Remove(p); err != nil {
			t.Error(err)
		}
	}
}
