package local

import (
	"os"
	"sync"
	"time"

	"github.com/wick-dev/wick/engine/logs"
)

// chimeReplicas bounds the apps whose followers the launcher's bell serves (a larger
// app's launcher closes it at once). A ring wakes every follower of the app, each of
// which then looks at its index: past this many replicas inotify's per-file wake-ups
// cost less, and what inotify costs at the end (see logs.Chime) is small beside such
// a launch.
const chimeReplicas = 16

// chimeUnclaimed is how long a launcher listens to a bell nobody follows: an attached
// run opens its logs at once. Past it the bell is closed (its supervisor stops
// ringing), so that a long-lived launcher (the UI, a sweep's queue) neither wakes for
// apps it does not follow nor holds a pipe per app; their followers use inotify.
const chimeUnclaimed = 2 * time.Second

// chimes are the bells of the supervisors this process started (the ready pipe,
// kept open after the start by the supervisor: see supervisor.ringLauncher), by app
// id. Each goes when its app's logs end, or unclaimed after chimeUnclaimed.
type chimes struct {
	mu sync.Mutex
	m  map[string]*chimeEntry
}

type chimeEntry struct {
	c       *logs.Chime
	claimed bool // a follower took it (chimeOf)
}

// addChime listens to the bell of app id on r, the read end of its ready pipe.
func (s *Scheduler) addChime(id string, r *os.File) {
	e := &chimeEntry{c: logs.NewChime(r)}
	s.chimes.mu.Lock()
	s.chimes.m[id] = e
	s.chimes.mu.Unlock()
	drop := func(unclaimedOnly bool) {
		s.chimes.mu.Lock()
		cur := s.chimes.m[id]
		gone := cur == e && !(unclaimedOnly && e.claimed)
		if gone {
			delete(s.chimes.m, id)
		}
		s.chimes.mu.Unlock()
		if gone && unclaimedOnly {
			e.c.Close()
		}
	}
	t := time.AfterFunc(chimeUnclaimed, func() { drop(true) })
	go func() {
		<-e.c.Done()
		t.Stop()
		drop(false)
	}()
}

// chimeOf returns the bell of app id, now claimed by a follower, or nil when this
// process did not start the app, its logs have ended, or nobody followed it in time.
func (s *Scheduler) chimeOf(id string) *logs.Chime {
	s.chimes.mu.Lock()
	defer s.chimes.mu.Unlock()
	e := s.chimes.m[id]
	if e == nil {
		return nil
	}
	e.claimed = true
	return e.c
}

func (c *chimes) closeAll() {
	c.mu.Lock()
	all := c.m
	c.m = map[string]*chimeEntry{}
	c.mu.Unlock()
	for _, e := range all {
		e.c.Close()
	}
}
