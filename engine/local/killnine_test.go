package local

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestKillNineLosesNoLine: a replica writes seq's lines at full speed, in 4 KiB
// writes, noting after each how many whole lines it has written; its supervisor is
// killed with SIGKILL at a random moment, 20 times. Every line whose write returned
// before the replica died (by Pdeathsig) is in the stored log, once, in order. Then
// the same 5 times with seq itself (whose count is unknown: order and wholeness).
func TestKillNineLosesNoLine(t *testing.T) {
	t.Parallel()
	var kept, written []int
	for range 20 {
		count := filepath.Join(t.TempDir(), "count")
		r := role("seq", os.Args[0], helperVerb, "counted", count)
		// The kill lands while the replica writes: after it has made its count (a
		// loaded machine may start it later than any fixed delay), then at random.
		started := func() bool {
			fi, err := os.Stat(count)
			return err == nil && fi.Size() == 8
		}
		n := killDuring(t, r, started, time.Duration(rand.IntN(300))*time.Millisecond)
		b, err := os.ReadFile(count)
		if err != nil || len(b) != 8 {
			t.Fatalf("the replica's count: %v", err)
		}
		w := int(binary.LittleEndian.Uint64(b))
		if n < w {
			t.Fatalf("the replica wrote %d whole lines; the log holds %d: %d lost", w, n, w-n)
		}
		kept, written = append(kept, n), append(written, w)
	}
	t.Logf("20 kills, no line lost or recorded twice; lines written (write returned) per kill: %v; lines kept: %v", written, kept)
	for range 5 {
		killDuring(t, role("seq", "seq", "1", "1000000000"), nil, time.Duration(rand.IntN(300))*time.Millisecond)
	}
}

// killDuring runs r, which must print 1, 2, 3..., kills its supervisor wait after
// started says yes (when not nil), checks the stored log and returns how many whole
// lines it holds.
func killDuring(t *testing.T, r spec.Role, started func() bool, wait time.Duration) int {
	t.Helper()
	s := testScheduler(t, false)
	id := start(t, s, appOf("seq", r), nil)
	dir, raw, err := s.load(id)
	if err != nil {
		t.Fatal(err)
	}
	waitReaper(t, raw.Supervisor.PID)
	if started != nil {
		testkit.Wait(t, 30*time.Second, "the replica starts", func() (bool, string) { return started(), "not started" })
	}
	time.Sleep(wait)
	if err := unix.Kill(raw.Supervisor.PID, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The reaper drains the pipes and ends the logs before it writes the verdict.
	for deadline := time.Now().Add(testkit.Scale(30 * time.Second)); ; time.Sleep(5 * time.Millisecond) {
		onDisk, err := readState(dir)
		if err == nil && onDisk.State == spec.Failed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("on disk: %v %v", onDisk.State, err)
		}
	}
	it, err := s.Logs(context.Background(), id, "seq", 0, sched.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(60*time.Second))
	defer cancel()
	want, dup := 1, 0
	for {
		l, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got, err := strconv.Atoi(l.Text)
		switch {
		case l.Partial && strings.HasPrefix(strconv.Itoa(want), l.Text):
			// seq's last write ended inside this line.
		case err != nil:
			t.Fatalf("after %d lines: line %q (partial %v)", want-1, l.Text, l.Partial)
		case got == want:
			want++
		case got < want:
			dup++
		default:
			t.Fatalf("killed after %v: lines %d to %d lost (%d lines kept)", wait, want, got-1, want-1)
		}
	}
	if dup > 0 {
		t.Fatalf("killed after %v: %d lines recorded twice", wait, dup)
	}
	return want - 1
}
