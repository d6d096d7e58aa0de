package pystack

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// A real CPython 3.11 (Debian's /usr/bin/python3.11) sleeping three calls deep, one
// of them a method of a class in a module with a non-ASCII name: ReadStack reads its
// main thread's frames from its memory, innermost first, with the lines they are at,
// as gdb's py-bt names them; in milliseconds.
func TestReadStack(t *testing.T) {
	py := "/usr/bin/python3.11"
	if _, err := os.Stat(py); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI needs Debian's python3.11")
		}
		t.Skip("needs /usr/bin/python3.11")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "stück.py")
	src := "import threading, time\n" + // 1
		"\n" + // 2
		"class Loader:\n" + // 3
		"    def fetch(self):\n" + // 4
		"        print(\"ready\", flush=True)\n" + // 5
		"        time.sleep(3600)\n" + // 6
		"\n" + // 7
		"def step(n):\n" + // 8
		"    x = n * 2\n" + // 9
		"    return Loader().fetch()\n" + // 10
		"\n" + // 11
		"threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\n" + // 12
		"step(3)\n" // 13
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, script)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if l, _ := bufio.NewReader(out).ReadString('\n'); l != "ready\n" {
		t.Fatalf("the script printed %q", l)
	}
	var frames []Frame
	// It may be read between its print and its sleep: until it is in the sleep.
	deadline := time.Now().Add(10 * time.Second)
	for {
		t0 := time.Now()
		frames, err = ReadStack(cmd.Process.Pid)
		t.Logf("read in %v", time.Since(t0))
		if err == nil && len(frames) > 0 && frames[0].Line == 6 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	want := []Frame{{"fetch", script, 6}, {"step", script, 10}, {"<module>", script, 13}}
	if err != nil || len(frames) != len(want) {
		t.Fatalf("frames %+v, err %v; want %+v", frames, err, want)
	}
	for i := range want {
		if frames[i] != want[i] {
			t.Errorf("frame %d: %+v, want %+v", i, frames[i], want[i])
		}
	}
	if _, err := ReadStack(os.Getpid()); err == nil {
		t.Error("a Go process read as a Python one")
	}
}
