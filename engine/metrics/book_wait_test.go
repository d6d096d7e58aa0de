package metrics

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// A Scan that finds another reading of the app under way waits for it only as long as
// its context allows (describe's timeout), rather than block the caller for as long as
// a big app's reading takes.
func TestBookScanWaitsWithinItsContext(t *testing.T) {
	h, err := spec.ParseHandle("local_cwd://wick/busy-app")
	if err != nil {
		t.Fatal(err)
	}
	b := NewBook(nil, DefaultConfig(), "")
	e := &bookEntry{busy: make(chan struct{}, 1), store: NewAlarmStore(b.cfg), namer: NewNamerOf(nil)}
	b.live[h.String()] = e
	e.busy <- struct{}{} // a reading under way

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := b.Scan(ctx, h, &sched.Description{Status: spec.AppStatus{State: spec.Running}})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Scan: %v, want the context's deadline", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Scan still waits for the other reading after its context ended")
	}
}
