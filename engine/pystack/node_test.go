package pystack

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// What NodeVerb prints, ReadNode reads back: frames, ranks, tools and errors; other
// output (a wick too old to know the verb) is an error.
func TestNodeRoundTrip(t *testing.T) {
	in := []NodeDump{
		{PID: 10, Rank: 3, Frames: []Frame{{"stuck", "/w/stuck.py", 4}, {"<module>", "/w/stuck.py", 7}}, Tool: Builtin},
		{PID: 11, Rank: -1, Err: errors.New("gdb: no Python frames")},
	}
	var b bytes.Buffer
	if err := WriteNode(&b, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadNode(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || !reflect.DeepEqual(out[0], in[0]) || out[1].PID != 11 || out[1].Rank != -1 || out[1].Err == nil || out[1].Err.Error() != in[1].Err.Error() {
		t.Errorf("read back %+v, want %+v", out, in)
	}
	if _, err := ReadNode([]byte("Error: unknown command \"__stack-node\" for \"wick\"\n")); err == nil {
		t.Error("another program's output read as dumps")
	}
}

// DumpReplica finds a replica's Python processes by the WICK_* variables of their
// environment (not another replica's, not another app's) and reads their stacks with
// wick's own reader, naming the tool and the rank.
func TestDumpReplica(t *testing.T) {
	py := "/usr/bin/python3.11"
	if _, err := os.Stat(py); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI needs Debian's python3.11")
		}
		t.Skip("needs /usr/bin/python3.11")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "stuck.py")
	src := "import time\n\ndef stuck():\n    print(\"ready\", flush=True)\n    time.sleep(3600)\n\nstuck()\n"
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	app := "stuck-" + filepath.Base(dir)
	start := func(env ...string) int {
		cmd := exec.Command(py, script)
		cmd.Env = append(os.Environ(), env...)
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
		return cmd.Process.Pid
	}
	pid := start("WICK_APP_ID="+app, "WICK_ROLE=py", "WICK_REPLICA_ID=1", "RANK=5")
	start("WICK_APP_ID="+app, "WICK_ROLE=py", "WICK_REPLICA_ID=0")
	start("WICK_APP_ID="+app+"x", "WICK_ROLE=py", "WICK_REPLICA_ID=1")
	var dumps []NodeDump
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		dumps = DumpReplica(ctx, app, "py", 1)
		cancel()
		// It may be read between its print and its sleep: until it is in the sleep.
		if len(dumps) == 1 && len(dumps[0].Frames) > 0 && dumps[0].Frames[0].Line == 5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	want := []Frame{{"stuck", script, 5}, {"<module>", script, 7}}
	if len(dumps) != 1 || dumps[0].PID != pid || dumps[0].Rank != 5 || dumps[0].Tool != Builtin || dumps[0].Err != nil || !reflect.DeepEqual(dumps[0].Frames, want) {
		t.Errorf("dumps %+v, want pid %d rank 5 by %s: %+v", dumps, pid, Builtin, want)
	}
	if d := DumpReplica(context.Background(), app, "py", 7); len(d) != 0 {
		t.Errorf("a replica with no process: %+v", d)
	}
}
