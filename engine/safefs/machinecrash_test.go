package safefs

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/internal/testkit"
	"github.com/wick-dev/wick/internal/testkit/vm"
)

// In the guest the test binary is the writer (crashWriterEnv, see TestMain), the same
// writer without its fsyncs (crashNoSyncEnv: the control), or the checker of what a
// reboot finds (crashCheckEnv).
const (
	crashNoSyncEnv = "WICK_SAFEFS_CRASH_NOSYNC"
	crashCheckEnv  = "WICK_SAFEFS_CRASH_CHECK"
)

// guestProgram is the guest's /run.sh: its argument (the kernel's wick=) says which.
const guestProgram = `case "$1" in
write)  WICK_SAFEFS_CRASH_WRITER=/mnt /bin/writer -test.run='^$' ;;
nosync) WICK_SAFEFS_CRASH_NOSYNC=1 WICK_SAFEFS_CRASH_WRITER=/mnt /bin/writer -test.run='^$' ;;
check)  WICK_SAFEFS_CRASH_CHECK=/mnt /bin/writer -test.run='^$' ;;
esac
`

// checkCrashedState is the guest's checker: it prints "state N" for a whole state
// file, "state none" when there is none, "state torn: WHY" for one that does not
// parse, and "file NAME" for every other name in dir.
func checkCrashedState(dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	var st struct{ N int }
	switch {
	case os.IsNotExist(err):
		fmt.Println("state none")
	case err != nil:
		fmt.Println("state torn:", err)
	case json.Unmarshal(b, &st) != nil:
		fmt.Printf("state torn: %d bytes that do not parse\n", len(b))
	default:
		fmt.Println("state", st.N)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != "state.json" && e.Name() != "lost+found" {
			fmt.Println("file", e.Name())
		}
	}
}

// noSyncFS is the real file system with every fsync skipped: what WriteFileAtomic
// would be without them, for the control of TestMachineCrashNeverLosesAnAcknowledgedState.
type noSyncFS struct{ osFS }

type noSyncFile struct{ *os.File }

func (noSyncFile) Sync() error { return nil }

func (noSyncFS) CreateTemp(dir, pattern string) (file, error) {
	f, err := os.CreateTemp(dir, pattern)
	return noSyncFile{f}, err
}
func (noSyncFS) SyncDir(string) error { return nil }

// crashRound is what one crash found: the last state the writer acknowledged before
// the machine died, and what the reboot read.
type crashRound struct {
	acked int
	state string // "N", "none" or "torn: ..."
	extra []string
}

// TestMachineCrashNeverLosesAnAcknowledgedState crashes a machine for real: a guest
// under qemu replaces a state file with WriteFileAtomic in a loop on an ext4 disk,
// printing "ack N" after each; at a random moment qemu is killed (power lost: what the
// guest's page cache held is gone), and the guest boots again on the same disk, whose
// mount runs the kernel's journal recovery. The state found must be whole and never
// older than the last acknowledged write. The control runs the same writer with its
// fsyncs skipped, and must be caught: without it this test could not fail.
func TestMachineCrashNeverLosesAnAcknowledgedState(t *testing.T) {
	kit, err := vm.Find()
	if err != nil {
		testkit.Missing(t, "no machine to crash: "+err.Error())
	}
	dir := t.TempDir()
	writer := filepath.Join(dir, "writer")
	build := exec.Command("go", "test", "-c", "-o", writer, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // static: the guest has no libc
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the guest's writer: %v\n%s", err, out)
	}
	wb, err := os.ReadFile(writer)
	if err != nil {
		t.Fatal(err)
	}
	initrd := filepath.Join(dir, "initrd")
	if err := kit.Initramfs(initrd, vm.File{Name: "bin/writer", Data: wb, Mode: 0o755},
		vm.File{Name: "run.sh", Data: []byte(guestProgram), Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	for round := range 4 {
		r := crashOnce(t, kit, dir, initrd, "write", round)
		if strings.HasPrefix(r.state, "torn") {
			t.Fatalf("round %d: after the crash the state is %s (acknowledged: %d)", round, r.state, r.acked)
		}
		n, _ := strconv.Atoi(r.state) // "none" is 0
		if n < r.acked {
			t.Fatalf("round %d: after the crash the state is %s, older than the acknowledged %d", round, r.state, r.acked)
		}
		for _, f := range r.extra {
			// A temporary file of the write the crash cut short may stay (it is
			// never read); anything else is not the writer's.
			if !strings.HasPrefix(f, ".state.json.") {
				t.Errorf("round %d: unexpected file %s after the crash", round, f)
			}
		}
		t.Logf("round %d: acknowledged %d, found %s", round, r.acked, r.state)
	}
	caught := 0
	for round := range 2 {
		r := crashOnce(t, kit, dir, initrd, "nosync", round)
		n, _ := strconv.Atoi(r.state)
		if strings.HasPrefix(r.state, "torn") || n < r.acked {
			caught++
		}
		t.Logf("control %d (no fsync): acknowledged %d, found %s", round, r.acked, r.state)
	}
	if caught == 0 {
		t.Fatal("the control (the same writes without fsync) lost nothing in 2 crashes: the crash is not one that loses a page cache, so this test proves nothing")
	}
}

// crashOnce boots a guest running mode on a new disk, kills it once it has
// acknowledged some writes, boots it again to check, and says what was found.
func crashOnce(t *testing.T, kit vm.Kit, dir, initrd, mode string, round int) crashRound {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(2*time.Minute))
	defer cancel()
	disk := filepath.Join(dir, fmt.Sprintf("%s-%d.img", mode, round))
	if err := vm.Disk(ctx, disk, 64); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(disk)
	m, err := kit.Boot(ctx, initrd, disk, mode)
	if err != nil {
		t.Fatal(err)
	}
	var r crashRound
	var killAt <-chan time.Time
	for killed := false; !killed; {
		select {
		case line, ok := <-m.Lines():
			if !ok {
				t.Fatalf("%s %d: the guest ended before the crash:\n%s", mode, round, m.Console())
			}
			if n, found := strings.CutPrefix(line, "ack "); found {
				r.acked, _ = strconv.Atoi(n)
				if killAt == nil {
					// A random point of the writes, once they have begun.
					killAt = time.After(time.Duration(20+rand.IntN(400)) * time.Millisecond)
				}
			}
		case <-killAt:
			m.Kill()
			killed = true
		case <-ctx.Done():
			m.Kill()
			t.Fatalf("%s %d: no acknowledged write within %s:\n%s", mode, round, testkit.Scale(2*time.Minute), m.Console())
		}
	}
	for line := range m.Lines() { // what reached the console before the kill
		if n, found := strings.CutPrefix(line, "ack "); found {
			r.acked, _ = strconv.Atoi(n)
		}
	}
	check, err := kit.Boot(ctx, initrd, disk, "check")
	if err != nil {
		t.Fatal(err)
	}
	if err := check.Wait(ctx); err != nil {
		t.Fatalf("%s %d: reboot: %v\n%s", mode, round, err, check.Console())
	}
	for _, line := range strings.Split(check.Console(), "\n") {
		if s, found := strings.CutPrefix(line, "state "); found {
			r.state = s
		} else if f, found := strings.CutPrefix(line, "file "); found {
			r.extra = append(r.extra, f)
		}
	}
	if r.state == "" {
		t.Fatalf("%s %d: the reboot printed no state:\n%s", mode, round, check.Console())
	}
	if r.state == "none" {
		r.state = "0"
	}
	return r
}
