package sched

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
)

// TestEachCallsEveryAppAFewAtOnce: every handle is acted on once, its error lands at its
// own index, and no more than EachParallel run at any moment.
func TestEachCallsEveryAppAFewAtOnce(t *testing.T) {
	hs := make([]spec.Handle, 3*EachParallel+1)
	for i := range hs {
		hs[i] = spec.Handle{Scheduler: "local_cwd", Session: "wick", AppID: fmt.Sprintf("app-%d", i)}
	}
	var (
		mu                   sync.Mutex
		running, most, calls int
	)
	errs := Each(hs, func(i int, h spec.Handle) error {
		mu.Lock()
		running++
		most = max(most, running)
		calls++
		mu.Unlock()
		defer func() { mu.Lock(); running--; mu.Unlock() }()
		time.Sleep(time.Millisecond) // long enough for the others to start beside it
		if h.AppID != hs[i].AppID {
			return fmt.Errorf("call %d got %s", i, h.AppID)
		}
		if i%2 == 1 {
			return errors.New(h.AppID)
		}
		return nil
	})
	if got := calls; got != len(hs) {
		t.Fatalf("%d calls for %d apps", got, len(hs))
	}
	if m := most; m > EachParallel {
		t.Errorf("%d apps at once, want at most %d", m, EachParallel)
	}
	for i, err := range errs {
		switch {
		case i%2 == 0 && err != nil:
			t.Errorf("app %d: unexpected error %v", i, err)
		case i%2 == 1 && (err == nil || err.Error() != hs[i].AppID):
			t.Errorf("app %d: error %v, want %s", i, err, hs[i].AppID)
		}
	}
}
