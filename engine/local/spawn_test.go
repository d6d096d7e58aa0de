package local

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/internal/testkit"
)

// The supervisor kills an exited replica's process group before the leader is
// reaped: a zombie's pid, and so its group's id, cannot be reused by another process,
// which a kill after the reap could hit.
func TestGroupKilledBeforeTheLeaderIsReaped(t *testing.T) {
	c := newChildren()
	var states []string
	c.beforeReap = func(pid int) { states = append(states, procState(pid)) }
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

// procState returns the state letter of process pid (proc(5) /proc/PID/stat), or
// "gone".
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "gone"
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return f[0]
}

// Children that exit while reap is busy with another (here: in the other's
// beforeReap) are still seen by beforeReap before they are reaped. (reap once looked
// for zombies among its waiters, then reaped any child: one that exited in between,
// after its turn in the look, was reaped unseen, its group not killed. Which turns
// came first followed Go's map order: rounds of several children make it certain.)
func TestChildExitingDuringReapIsSeenFirst(t *testing.T) {
	for range 5 {
		reapRound(t, 4)
	}
}

// reapRound forks a child that exits at once and n that exit when the first is seen
// by beforeReap, reaps them all, and checks that beforeReap saw each as a zombie.
func reapRound(t *testing.T, n int) {
	t.Helper()
	c := newChildren()
	gateR, gateW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer gateR.Close()
	defer gateW.Close()
	attr := &syscall.ProcAttr{Sys: &syscall.SysProcAttr{Setpgid: true}}
	first, exited, err := c.fork("/bin/true", []string{"true"}, attr)
	if err != nil {
		t.Fatal(err)
	}
	waits := []<-chan unix.WaitStatus{exited}
	// The others wait until the gate's write end is closed: read sees its end.
	gated := &syscall.ProcAttr{Files: []uintptr{gateR.Fd()}, Sys: &syscall.SysProcAttr{Setpgid: true}}
	var others []int
	for range n {
		pid, exited, err := c.fork("/bin/sh", []string{"sh", "-c", "read x"}, gated)
		if err != nil {
			t.Fatal(err)
		}
		others = append(others, pid)
		waits = append(waits, exited)
	}
	zombie := func(pids ...int) {
		deadline := time.Now().Add(testkit.Scale(10 * time.Second))
		for _, pid := range pids {
			for procState(pid) != "Z" {
				if time.Now().After(deadline) {
					t.Fatalf("child %d did not exit", pid)
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	seen := map[int]string{}
	c.beforeReap = func(pid int) {
		seen[pid] = procState(pid)
		if pid == first {
			gateW.Close()
			zombie(others...)
		}
	}
	zombie(first)
	c.reap()
	for _, ch := range waits {
		select {
		case <-ch:
		default:
			t.Fatal("a child was not reaped")
		}
	}
	for _, pid := range append([]int{first}, others...) {
		if seen[pid] != "Z" {
			t.Errorf("beforeReap saw child %d as %q, want a zombie (Z)", pid, seen[pid])
		}
	}
}
