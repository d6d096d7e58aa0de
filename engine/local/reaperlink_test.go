package local

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/internal/testkit"
)

// linkPair is a reaper link and the reaper's end of its socket, as openReaper makes
// them.
func linkPair(t *testing.T) (*reaperLink, int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		t.Fatal(err)
	}
	l, err := newReaperLink(os.NewFile(uintptr(fds[0]), "reaper"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[1]) })
	return l, fds[1]
}

// pipeEnd is the read end of a pipe, like the replicas' pipes the supervisor hands
// the reaper; both ends are closed at cleanup.
func pipeEnd(t *testing.T) int {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
	return p[0]
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	e, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(e)
}

// TestReaperLinkKeepsOrder: messages sent while the reaper reads nothing wait, and
// it then reads every one in the order sent, each pipe with its message; the sender
// never waited. What the link copied of the pipes is closed once sent.
func TestReaperLinkKeepsOrder(t *testing.T) {
	const n = 2000 // the socket holds a few hundred
	l, reader := linkPair(t)
	pipe := pipeEnd(t)
	before := openFDs(t)
	queued := 0
	for i := range n {
		fd := -1
		if i%10 == 0 {
			fd = pipe
		}
		q, err := l.send("m"+strconv.Itoa(i), fd)
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if q {
			queued++
		}
	}
	if queued == 0 {
		t.Fatalf("all %d messages went straight into the socket: nothing was queued", n)
	}
	buf, oob := make([]byte, maxReaperMsg), make([]byte, unix.CmsgSpace(4*4))
	if err := unix.SetsockoptTimeval(reader, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 10}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		m, oobn, _, _, err := unix.Recvmsg(reader, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if got, want := string(buf[:m]), "m"+strconv.Itoa(i); got != want {
			t.Fatalf("message %d is %q, want %q", i, got, want)
		}
		var fds []int
		if oobn > 0 {
			msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
			for _, cm := range msgs {
				got, _ := unix.ParseUnixRights(&cm)
				fds = append(fds, got...)
			}
		}
		if want := map[bool]int{true: 1, false: 0}[i%10 == 0]; len(fds) != want {
			t.Fatalf("message %d came with %d descriptors, want %d", i, len(fds), want)
		}
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	if err := l.flush(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatalf("flush after all was read: %v", err)
	}
	if after := openFDs(t); after != before {
		t.Errorf("%d descriptors open after every message was sent, %d before", after, before)
	}
	l.close()
}

// TestReaperLinkGivesUp: a reaper that reads nothing while maxQueued messages wait is
// given up: the send says so, and so does every later one and a flush; close drops
// the copies of the pipes still queued.
func TestReaperLinkGivesUp(t *testing.T) {
	l, _ := linkPair(t)
	pipe := pipeEnd(t)
	before := openFDs(t)
	var err error
	sent := 0
	for ; sent < 2*maxQueued && err == nil; sent++ {
		fd := -1
		if sent < 100 {
			fd = pipe
		}
		_, err = l.send("+"+strconv.Itoa(sent), fd)
	}
	if !errors.Is(err, errQueueFull) || sent <= maxQueued {
		t.Fatalf("after %d sends: %v, want errQueueFull past %d", sent, err, maxQueued)
	}
	if _, err := l.send("q", -1); !errors.Is(err, errQueueFull) {
		t.Errorf("a send after: %v", err)
	}
	if err := l.flush(time.Now().Add(time.Second)); !errors.Is(err, errQueueFull) {
		t.Errorf("a flush after: %v", err)
	}
	l.close()
	if after := openFDs(t); after != before-1 { // the link's own socket is closed too
		t.Errorf("%d descriptors open after close, %d before", after, before)
	}
}

// TestReaperLinkFlushDeadline: a flush waits for what is queued until its deadline,
// and says so when the reaper read too little.
func TestReaperLinkFlushDeadline(t *testing.T) {
	l, _ := linkPair(t)
	for i := 0; ; i++ {
		q, err := l.send("+"+strconv.Itoa(i), -1)
		if err != nil {
			t.Fatal(err)
		}
		if q {
			break
		}
		if i > 100000 {
			t.Fatal("the socket never filled")
		}
	}
	began := time.Now()
	if err := l.flush(began.Add(200 * time.Millisecond)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("flush with nobody reading: %v", err)
	}
	if d := time.Since(began); d < 200*time.Millisecond {
		t.Errorf("flush returned after %v, before its deadline", d)
	}
	l.close()
}

// startGroup starts argv in a process group of its own with exactly env, ended and
// reaped at cleanup, and returns the group's id.
func startGroup(t *testing.T, env []string, argv ...string) int {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }() // reaped once killed: a zombie is not a member
	t.Cleanup(func() { killGroup(cmd.Process.Pid, unix.SIGKILL); <-done })
	return cmd.Process.Pid
}

// TestReaperKillsOnlyTheAppsGroups: the reaper, its supervisor dead, kills the groups
// it was told of that are still the app's, a member that cleared its environment
// included, and leaves a group whose id it holds but that is another program's now
// (an app's group ended while its "-PGID" was queued, its id since reused).
func TestReaperKillsOnlyTheAppsGroups(t *testing.T) {
	path := "PATH=" + os.Getenv("PATH")
	app := startGroup(t, []string{path, EnvAppID + "=wick-1"}, "sh", "-c", "sleep 600 & env -i sleep 600 & wait")
	other := startGroup(t, []string{path, EnvAppID + "=wick-2"}, "sleep", "600")
	testkit.Wait(t, 10*time.Second, "the app's group of three", func() (bool, string) {
		m := groupMembers(t, app)
		return len(m) == 3, fmt.Sprint(m)
	})
	if n := killAppGroups(map[int]bool{app: true, other: true}, EnvAppID+"=wick-1"); n != 1 {
		t.Errorf("killed %d groups, want 1", n)
	}
	waitGone(t, []int{app})
	if m := groupMembers(t, other); len(m) != 1 {
		t.Errorf("the other program's group: %v, want its sleep alive", m)
	}
}
