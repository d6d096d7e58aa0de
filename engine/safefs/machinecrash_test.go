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

// guestProgram is the guest's /run.sh: its argument (the kernel's wick=) says what it
// runs. write: the writer on a new disk. check: the checker, after a reboot. The
// checks that write again (checkwrite, checknosync) check what the last crash left,
// then run the writer (or the control) on from it: the next crash's boot is the last
// one's reboot, a boot fewer per crash than a check of its own.
const guestProgram = `case "$1" in
check|checkwrite|checknosync) WICK_SAFEFS_CRASH_CHECK=/mnt /bin/writer -test.run='^$'; echo "checked" ;;
esac
case "$1" in
write|checkwrite) WICK_SAFEFS_CRASH_WRITER=/mnt /bin/writer -test.run='^$' ;;
checknosync) WICK_SAFEFS_CRASH_NOSYNC=1 WICK_SAFEFS_CRASH_WRITER=/mnt /bin/writer -test.run='^$' ;;
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
// fsyncs skipped, and must be caught: without it this test could not fail. The crashes
// follow one another on one disk: each reboot checks what the crash before it left,
// then writes on (from the state found) until the next crash.
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
	disk := filepath.Join(dir, "disk.img")
	if err := vm.Disk(context.Background(), disk, 64); err != nil {
		t.Fatal(err)
	}
	// Four crashes of the writer, then two of the control; each boot after the first
	// checks the crash before it.
	const writes, controls = 4, 2
	modes := []string{"write"}
	for i := 1; i < writes+controls; i++ {
		if i < writes {
			modes = append(modes, "checkwrite")
		} else {
			modes = append(modes, "checknosync")
		}
	}
	modes = append(modes, "check")
	rounds := make([]crashRound, writes+controls)
	for i, mode := range modes {
		state, extra, acked := bootOnce(t, kit, initrd, disk, mode, i)
		if i > 0 {
			rounds[i-1].state, rounds[i-1].extra = state, extra
		}
		if i < len(rounds) {
			rounds[i].acked = acked
		}
	}
	for round, r := range rounds[:writes] {
		if strings.HasPrefix(r.state, "torn") {
			t.Fatalf("round %d: after the crash the state is %s (acknowledged: %d)", round, r.state, r.acked)
		}
		n, _ := strconv.Atoi(r.state) // "none" is 0
		if n < r.acked {
			t.Fatalf("round %d: after the crash the state is %s, older than the acknowledged %d", round, r.state, r.acked)
		}
		for _, f := range r.extra {
			// A temporary file of a write a crash cut short may stay (it is never
			// read); anything else is not the writer's.
			if !strings.HasPrefix(f, ".state.json.") {
				t.Errorf("round %d: unexpected file %s after the crash", round, f)
			}
		}
		t.Logf("round %d: acknowledged %d, found %s", round, r.acked, r.state)
	}
	caught := 0
	for round, r := range rounds[writes:] {
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

// bootOnce boots the guest on disk running mode (see guestProgram). What a mode that
// checks first prints is read as the state found ("N", "0" for none, or "torn: ...")
// and the other files on the disk; a mode that writes is killed at a random moment
// once it has acknowledged a write, and the last write acknowledged is returned.
func bootOnce(t *testing.T, kit vm.Kit, initrd, disk, mode string, boot int) (state string, extra []string, acked int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(2*time.Minute))
	defer cancel()
	m, err := kit.Boot(ctx, initrd, disk, mode)
	if err != nil {
		t.Fatal(err)
	}
	checks, writes := mode != "write", mode != "check"
	checked := !checks
	read := func(line string) {
		switch s, found := strings.CutPrefix(line, "state "); {
		case found && !checked:
			state = s
		case line == "checked":
			checked = true
		}
		if f, found := strings.CutPrefix(line, "file "); found && !checked {
			extra = append(extra, f)
		}
		if n, found := strings.CutPrefix(line, "ack "); found && checked {
			acked, _ = strconv.Atoi(n)
		}
	}
	if writes {
		var killAt <-chan time.Time
		for killed := false; !killed; {
			select {
			case line, ok := <-m.Lines():
				if !ok {
					t.Fatalf("boot %d (%s): the guest ended before the crash:\n%s", boot, mode, m.Console())
				}
				read(line)
				if acked > 0 && killAt == nil {
					// A random point of the writes, once they have begun.
					killAt = time.After(time.Duration(20+rand.IntN(400)) * time.Millisecond)
				}
			case <-killAt:
				m.Kill()
				killed = true
			case <-ctx.Done():
				m.Kill()
				t.Fatalf("boot %d (%s): no acknowledged write within %s:\n%s", boot, mode, testkit.Scale(2*time.Minute), m.Console())
			}
		}
	} else if err := m.Wait(ctx); err != nil {
		t.Fatalf("boot %d (%s): %v\n%s", boot, mode, err, m.Console())
	}
	for line := range m.Lines() { // what reached the console before the end
		read(line)
	}
	if checks && !checked || checks && state == "" {
		t.Fatalf("boot %d (%s): the reboot printed no state:\n%s", boot, mode, m.Console())
	}
	if state == "none" {
		state = "0"
	}
	return state, extra, acked
}
