package kubernetes

import (
	"context"
	"strings"
	"testing"
)

// TestFollowOpenedAgainSkipsWhatWasSent: the kubelet ends a follow it cannot watch
// (a node out of inotify instances); opened again a second before the newest line,
// it gives the lines of that second again. Each is sent once, and a line stamped
// before the newest but not sent yet (stderr's and stdout's lines are stamped apart)
// is not taken for one sent. The kubelet's word on why it ended the follow is not a
// line of the replica's.
func TestFollowOpenedAgainSkipsWhatWasSent(t *testing.T) {
	it := &logIter{ch: make(chan item, 64), role: "w"}
	it.sent.reset()
	first := strings.Join([]string{
		"2026-12-06T10:00:00.100000000Z out 0",
		"2026-12-06T10:00:00.900000000Z out 1",
		"2026-12-06T10:00:00.900000000Z out 1",                   // the same line twice, as a program may print it
		"failed to create fsnotify watcher: too many open files", // the kubelet's, as it ends the follow
	}, "\n") + "\n"
	// From 10:00:00, the server's second: everything again, then a stderr line stamped
	// before out 1 but written after it, then new lines.
	again := first + strings.Join([]string{
		"2026-12-06T10:00:00.800000000Z err 1",
		"2026-12-06T10:00:01.000000000Z out 2",
	}, "\n") + "\n"
	ctx := context.Background()
	if err := it.sendLines(ctx, strings.NewReader(first), 0, "first", false, false); err != nil {
		t.Fatal(err)
	}
	// Opened again twice: the second time gives the lines of the first two again.
	for range 2 {
		it.sent.reopen()
		if err := it.sendLines(ctx, strings.NewReader(again), 0, "again", false, true); err != nil {
			t.Fatal(err)
		}
	}
	close(it.ch)
	var got []string
	for x := range it.ch {
		got = append(got, x.line.Text)
	}
	want := []string{"out 0", "out 1", "out 1", "err 1", "out 2"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("sent %q, want %q", got, want)
	}
}
