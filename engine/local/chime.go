package local

import (
	"os"
	"sync"

	"github.com/wick-dev/wick/engine/logs"
)

// chimeReplicas bounds the apps whose followers the launcher's bell serves. A ring
// wakes every follower of the app, each of which then looks at its index: past this
// many replicas inotify's per-file wake-ups cost less, and what inotify costs at the
// end (see logs.Chime) is small beside such a launch.
const chimeReplicas = 16

// chimes are the bells of the supervisors this process started (the ready pipe,
// kept open after the start by the supervisor: see supervisor.ringLauncher), by app
// id. Each goes when its app's logs end.
type chimes struct {
	mu sync.Mutex
	m  map[string]*logs.Chime
}

// addChime listens to the bell of app id on r, the read end of its ready pipe.
func (s *Scheduler) addChime(id string, r *os.File) {
	c := logs.NewChime(r)
	s.chimes.mu.Lock()
	s.chimes.m[id] = c
	s.chimes.mu.Unlock()
	go func() {
		<-c.Done()
		s.chimes.mu.Lock()
		if s.chimes.m[id] == c {
			delete(s.chimes.m, id)
		}
		s.chimes.mu.Unlock()
	}()
}

// chimeOf returns the bell of app id, or nil when this process did not start the
// app or its logs have ended.
func (s *Scheduler) chimeOf(id string) *logs.Chime {
	s.chimes.mu.Lock()
	defer s.chimes.mu.Unlock()
	return s.chimes.m[id]
}

func (c *chimes) closeAll() {
	c.mu.Lock()
	all := c.m
	c.m = map[string]*logs.Chime{}
	c.mu.Unlock()
	for _, ch := range all {
		ch.Close()
	}
}
