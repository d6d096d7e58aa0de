package logs

import (
	"os/exec"
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
