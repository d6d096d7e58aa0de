package logs

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestAliveIsFalseRightAfterKill9: at once after kill -9 returns, before the process
// has exited, it is not alive (a SIGKILL is pending, or it is exiting); `wick sweep
// resume` right after a kill -9 of the queue said the dead queue was running.
func TestAliveIsFalseRightAfterKill9(t *testing.T) {
	for range 20 {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p, err := ProcOf(cmd.Process.Pid)
		if err != nil || !p.Alive() {
			t.Fatalf("a running sleep: %+v %v", p, err)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		alive := p.Alive()
		_ = cmd.Wait()
		if alive {
			t.Fatal("alive right after kill -9")
		}
	}
}

// TestKillPending reads SigPnd and ShdPnd as proc(5) describes them.
func TestKillPending(t *testing.T) {
	for _, c := range []struct {
		status string
		want   bool
	}{
		{"Name:\tsleep\nSigQ:\t0/31503\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\nSigBlk:\t0000000000000000\n", false},
		{"Name:\tsleep\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000100\n", true},
		{"Name:\tsleep\nSigPnd:\t0000000000000100\nShdPnd:\t0000000000000000\n", true},
		// SIGTERM (15, bit 14) pending is not a kill.
		{"Name:\tsleep\nSigPnd:\t0000000000004000\nShdPnd:\t0000000000000000\n", false},
	} {
		if got := killPending([]byte(c.status)); got != c.want {
			t.Errorf("%q: %v, want %v", c.status, got, c.want)
		}
	}
}

// TestProcOfAnotherBootIsNotAlive: a process recorded before a reboot is not one of
// this boot, even where a process of this boot has its pid and start time (services
// that start in the same order after each boot get both).
func TestProcOfAnotherBootIsNotAlive(t *testing.T) {
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(string(b)); self.Boot != want || want == "" {
		t.Fatalf("boot %q, want this boot's %q", self.Boot, want)
	}
	if !self.Alive() {
		t.Fatal("this process is not alive")
	}
	before := self
	before.Boot = "00000000-0000-4000-8000-000000000000"
	if before.Alive() {
		t.Error("a record of another boot with this process's pid and start time is alive")
	}
	// Recorded by an older wick, without a boot: pid and start time decide.
	old := self
	old.Boot = ""
	if !old.Alive() {
		t.Error("a record without a boot id of this process is not alive")
	}
	// The boot goes into the record (state.json, sweep.json).
	j, err := json.Marshal(self)
	if err != nil || !strings.Contains(string(j), `"boot":"`+self.Boot+`"`) {
		t.Errorf("json %s %v", j, err)
	}
}
