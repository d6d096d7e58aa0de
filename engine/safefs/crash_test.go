package safefs

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashWriterEnv makes the test binary a writer for TestKill9NeverTearsTheState: it
// replaces DIR/state.json with {"n": N, "pad": ...} for N = 1, 2, ... (on from the N of
// a state.json already there) and prints "ack N" once each WriteFileAtomic has returned.
const crashWriterEnv = "WICK_SAFEFS_CRASH_WRITER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashCheckEnv); dir != "" {
		checkCrashedState(dir)
		os.Exit(0)
	}
	if dir := os.Getenv(crashWriterEnv); dir != "" {
		var fsys fileSys = osFS{}
		if os.Getenv(crashNoSyncEnv) != "" {
			fsys = noSyncFS{}
		}
		pad := strings.Repeat("x", 64<<10) // a state of some size: several writes each
		// On from the state found, so that a state older than this run's acknowledged
		// writes is told apart from theirs (the machine-crash test writes again on the
		// disk a crash left).
		first := 1
		if b, err := os.ReadFile(filepath.Join(dir, "state.json")); err == nil {
			var st struct{ N int }
			if json.Unmarshal(b, &st) == nil {
				first = st.N + 1
			}
		}
		for n := first; ; n++ {
			b, _ := json.Marshal(map[string]any{"n": n, "pad": pad})
			if err := writeFileAtomic(fsys, dir, "state.json", b, true); err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
			fmt.Println("ack", n)
		}
	}
	os.Exit(m.Run())
}

// TestKill9NeverTearsTheState kills a writer with SIGKILL at random moments: the state
// file is then always whole (it parses) and never older than the last write the writer
// acknowledged. A crash of the whole machine, which also loses what the page cache
// held, is TestMachineCrashNeverLosesAnAcknowledgedState's.
func TestKill9NeverTearsTheState(t *testing.T) {
	for round := range 20 {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashWriterEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acks := make(chan int, 1<<16)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if n, ok := strings.CutPrefix(sc.Text(), "ack "); ok {
					v, _ := strconv.Atoi(n)
					acks <- v
				}
			}
			close(acks)
		}()
		time.Sleep(time.Duration(5+rand.IntN(60)) * time.Millisecond) // a random point of its writes
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		last := 0
		for n := range acks {
			last = n
		}
		b, err := os.ReadFile(filepath.Join(dir, "state.json"))
		if last == 0 && os.IsNotExist(err) {
			continue // killed before its first write
		}
		var st struct{ N int }
		if err != nil || json.Unmarshal(b, &st) != nil {
			t.Fatalf("round %d: state torn after kill -9 (%v, %d bytes)", round, err, len(b))
		}
		if st.N < last {
			t.Fatalf("round %d: state %d, older than the acknowledged %d", round, st.N, last)
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if e.Name() != "state.json" && !strings.HasPrefix(e.Name(), ".state.json.") {
				t.Errorf("round %d: unexpected file %s", round, e.Name())
			}
		}
	}
}
