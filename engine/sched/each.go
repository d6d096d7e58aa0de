package sched

import (
	"sync"

	"github.com/wick-dev/wick/engine/spec"
)

// EachParallel is how many apps Each works on at once: a Docker app's cancel waits for
// its containers' grace period, so one at a time would add those up; more than a few
// at once only queues on the Engine.
const EachParallel = 8

// Each calls do for every handle, EachParallel at a time, and returns do's error for
// each handle at its index (nil where it worked). It returns once every call has.
func Each(hs []spec.Handle, do func(i int, h spec.Handle) error) []error {
	errs := make([]error, len(hs))
	sem := make(chan struct{}, EachParallel)
	var wg sync.WaitGroup
	for i, h := range hs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = do(i, h)
		}()
	}
	wg.Wait()
	return errs
}
