package local

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wick-dev/wick/internal/testkit"
)

// The supervisor kills an exited replica's process group before the leader is
// reaped: a zombie's pid, and so its group's id, cannot be reused by another process,
// which a kill after the reap could hit.
func TestGroupKilledBeforeTheLeaderIsReaped(t *testing.T) {
	c := newChildren()
	var states []string
	c.beforeReap = func(pid int) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			states = append(states, "gone")
			return
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		states = append(states, f[0])
	}
	attr := &syscall.ProcAttr{Sys: &syscall.SysProcAttr{Setpgid: true}}
	pid, exited, err := c.fork("/bin/true", []string{"true"}, attr)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(testkit.Scale(10 * time.Second))
	for {
		c.reap()
		select {
		case <-exited:
			if len(states) != 1 || states[0] != "Z" {
				t.Errorf("beforeReap saw the leader %d as %v, want one call while a zombie (Z)", pid, states)
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the child was never reaped")
		}
		time.Sleep(time.Millisecond)
	}
}
