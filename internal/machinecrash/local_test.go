// Package machinecrash crashes a machine running wick, for real, and boots it again:
// what wick acknowledged before the crash must read back whole after it.
package machinecrash

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/internal/testkit"
	"github.com/wick-dev/wick/internal/testkit/vm"
)

// guestProgram is the guest's /run.sh. write launches local apps one after the
// other, each acknowledged ("ack HANDLE") once `wick run --detach` has printed its
// handle; three apps in four end at once, the fourth runs on. check, after the reboot,
// prints wick list --json between markers, then for every app on disk whether its log
// reads, and its SUCCESS (TorchX's summary in its log directory) where it has one. checkwrite checks, then writes on: the next crash's boot is
// the last one's reboot, a boot fewer per crash than a check of its own.
const guestProgram = `export PATH=/bin HOME=/mnt/home WICK_HOME=/mnt/wick
mkdir -p "$HOME" "$WICK_HOME"; cd "$HOME"
case "$1" in
check|checkwrite)
  echo "list-begin"; wick list --json 2>/dev/null | tr -d '\n'; echo; echo "list-end rc=$?"
  for a in $(ls "$WICK_HOME/local/apps"); do
    out=$(wick log --no-prefix "$a" 2>&1); echo "log $a rc=$? $(echo "$out" | head -c 300 | tr '\n' ' ')"
    for f in "$WICK_HOME"/logs/*/"$a"/SUCCESS; do [ -f "$f" ] && echo "success $a $(tr -d '\n' < "$f")"; done
  done ;;
esac
case "$1" in
write|checkwrite)
  i=0
  while [ $i -lt 400 ]; do
    if [ $((i % 4)) = 3 ]; then c='echo slow; sleep 1000'; else c='echo quick'; fi
    h=$(wick run --detach utils.sh sh -c "$c" 2>/dev/null) && echo "ack $h"
    i=$((i+1))
  done ;;
esac
`

// listed is what the test reads of wick list --json.
type listed struct {
	Handle string `json:"handle"`
	AppID  string `json:"app_id"`
	State  string `json:"state"`
	Msg    string `json:"msg"`
}

// TestMachineCrashKeepsEveryLaunchedApp launches local apps in a guest machine, kills
// the machine at a random point (power lost), boots it again and asks wick: every app
// whose handle was printed is listed, ended (its supervisor died with the machine, so
// none may read RUNNING), and its log reads, whole for an app that had ended; nothing
// on disk is torn.
func TestMachineCrashKeepsEveryLaunchedApp(t *testing.T) {
	kit, err := vm.Find()
	if err != nil {
		testkit.Missing(t, "no machine to crash: "+err.Error())
	}
	dir := t.TempDir()
	wick := filepath.Join(dir, "wick")
	if err := testkit.BuildWick(wick, filepath.Join("..", "..")); err != nil {
		t.Fatal(err)
	}
	wb, err := os.ReadFile(wick)
	if err != nil {
		t.Fatal(err)
	}
	initrd := filepath.Join(dir, "initrd")
	if err := kit.Initramfs(initrd, vm.File{Name: "bin/wick", Data: wb, Mode: 0o755},
		vm.File{Name: "run.sh", Data: []byte(guestProgram), Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	// Two crashes on one disk: the boot after each checks it, and the one between
	// them then launches on, beside the apps the first crash left.
	disk := filepath.Join(dir, "disk.img")
	if err := vm.Disk(context.Background(), disk, 256); err != nil {
		t.Fatal(err)
	}
	const rounds = 2
	var acks [rounds][]string
	var checks [rounds]string
	for i, mode := range []string{"write", "checkwrite", "check"} {
		acked, console := bootOnce(t, kit, initrd, disk, mode, i)
		if i > 0 {
			checks[i-1] = console
		}
		if i < rounds {
			acks[i] = acked
		}
	}
	for round := range rounds {
		acked, check := acks[round], checks[round]
		list, logs, successes := readCheck(t, check)
		byID := map[string]listed{}
		for _, a := range list {
			byID[a.AppID] = a
		}
		for _, h := range acked {
			id := h[strings.LastIndex(h, "/")+1:]
			a, ok := byID[id]
			switch {
			case !ok:
				t.Errorf("round %d: %s was launched before the crash and is not listed after it", round, h)
			case a.State == "RUNNING" || a.State == "PENDING":
				t.Errorf("round %d: %s reads %s after the reboot: its supervisor died with the machine", round, h, a.State)
			}
			l, ok := logs[id]
			if !ok || !strings.HasPrefix(l, "rc=0") {
				t.Errorf("round %d: wick log %s after the reboot: %q", round, id, l)
			}
			// An app saved as ended has its logs on disk: the supervisor syncs them
			// before it saves the end.
			if a.State == "SUCCEEDED" && !strings.Contains(l, "quick") {
				t.Errorf("round %d: %s SUCCEEDED before the crash, but its log lost its line after it: %q", round, h, l)
			}
			// SUCCESS is put in place after the final state is durable, from a file
			// fsynced first: the crash may have taken it back, never torn it, nor
			// left it naming an end that the state does not hold.
			if sum, ok := successes[id]; ok {
				var doc struct {
					FinalState string `json:"final_state"`
				}
				if err := json.Unmarshal([]byte(sum), &doc); err != nil {
					t.Errorf("round %d: %s's SUCCESS after the reboot is torn (%v): %q", round, h, err, sum)
				} else if doc.FinalState != a.State {
					t.Errorf("round %d: %s's SUCCESS says %s after the reboot, its state %s", round, h, doc.FinalState, a.State)
				}
			}
		}
		t.Logf("round %d: %d apps acknowledged, %d listed after the reboot, %d with a SUCCESS", round, len(acked), len(list), len(successes))
	}
}

// bootOnce boots the guest on disk running mode (see guestProgram) and returns the
// handles it acknowledged and its console. A mode that writes is killed at a random
// moment once it has acknowledged two launches; check powers off by itself.
func bootOnce(t *testing.T, kit vm.Kit, initrd, disk, mode string, boot int) ([]string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(3*time.Minute))
	defer cancel()
	m, err := kit.Boot(ctx, initrd, disk, mode)
	if err != nil {
		t.Fatal(err)
	}
	var acked []string
	if mode == "check" {
		if err := m.Wait(ctx); err != nil {
			t.Fatalf("boot %d (%s): %v\n%s", boot, mode, err, m.Console())
		}
		return nil, m.Console()
	}
	var killAt <-chan time.Time
	for killed := false; !killed; {
		select {
		case line, ok := <-m.Lines():
			if !ok {
				t.Fatalf("boot %d (%s): the guest ended before the crash:\n%s", boot, mode, m.Console())
			}
			if h, found := strings.CutPrefix(line, "ack "); found {
				acked = append(acked, h)
				if killAt == nil && len(acked) >= 2 {
					killAt = time.After(time.Duration(rand.IntN(3000)) * time.Millisecond)
				}
			}
		case <-killAt:
			m.Kill()
			killed = true
		case <-ctx.Done():
			m.Kill()
			t.Fatalf("boot %d (%s): not two launches within %s:\n%s", boot, mode, testkit.Scale(3*time.Minute), m.Console())
		}
	}
	for line := range m.Lines() {
		if h, found := strings.CutPrefix(line, "ack "); found {
			acked = append(acked, h)
		}
	}
	return acked, m.Console()
}

// readCheck reads the check's console: the list, per app id what wick log said
// ("rc=N OUTPUT"), and per app id its SUCCESS, where it has one.
func readCheck(t *testing.T, console string) ([]listed, map[string]string, map[string]string) {
	t.Helper()
	var list []listed
	logs, successes := map[string]string{}, map[string]string{}
	lines := strings.Split(console, "\n")
	for i, line := range lines {
		if line == "list-begin" && i+2 < len(lines) {
			if !strings.HasPrefix(lines[i+2], "list-end rc=0") {
				t.Fatalf("wick list after the reboot: %s\n%s", lines[i+2], console)
			}
			if err := json.Unmarshal([]byte(lines[i+1]), &list); err != nil {
				t.Fatalf("wick list --json after the reboot: %v\n%s", err, console)
			}
		}
		if rest, ok := strings.CutPrefix(line, "log "); ok {
			id, out, _ := strings.Cut(rest, " ")
			logs[id] = out
		}
		if rest, ok := strings.CutPrefix(line, "success "); ok {
			id, doc, _ := strings.Cut(rest, " ")
			successes[id] = doc
		}
	}
	return list, logs, successes
}
