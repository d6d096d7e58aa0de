package common

import (
	"runtime"
	"sync"
)

// Procs is the UI's GOMAXPROCS while no parallel work runs. One processor: the wall
// following demo.train (its readers, pump, loop and renderer) took 0.79x the CPU at
// 256 replicas and 0.87-0.89x at 16 against two, on a machine of two cores
// (BenchmarkSoakBesideLnav, #37 round 14), keeping up as well: its goroutines mostly
// wake, do a little and sleep, and on more processors each wake-up hands work across
// threads.
const Procs = 1

// Cores lets work that runs in parallel (a search of many panes, a launch's fsyncs)
// have every processor while it runs, the UI staying on fewer otherwise. Its zero value, or a nil *Cores,
// leaves GOMAXPROCS alone.
type Cores struct {
	mu sync.Mutex
	// idle is GOMAXPROCS while no work holds the cores, all what it is while one does.
	idle, all int
	held      int
}

// NewCores sets GOMAXPROCS to idle and returns what lends the processors it had to
// parallel work (Acquire).
func NewCores(idle int) *Cores {
	return &Cores{idle: idle, all: runtime.GOMAXPROCS(idle)}
}

// Acquire gives parallel work every processor until release is called; GOMAXPROCS
// goes back to idle once no work holds them. release may be called more than once.
func (c *Cores) Acquire() (release func()) {
	if c == nil || c.all <= c.idle {
		return func() {}
	}
	c.mu.Lock()
	if c.held == 0 {
		runtime.GOMAXPROCS(c.all)
	}
	c.held++
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.held--; c.held == 0 {
				runtime.GOMAXPROCS(c.idle)
			}
		})
	}
}
