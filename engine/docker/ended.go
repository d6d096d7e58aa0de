package docker

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
)

// The ended cache: what the listing learns of a container that has ended, kept in
// WICK_HOME so that later listings need neither its inspection nor reads of its
// archive (the cancel marker's stat, the error file's copy: each makes the Engine
// mount the container's file system). A container that has ended changes only if
// it is started again, which changes its state in the Engine's list and so misses
// the cache; cancel and delete drop their containers' entries.

// endedEntry is what the listing keeps of an ended container.
type endedEntry struct {
	Created      string                   `json:"created"`
	RestartCount int                      `json:"restart_count"`
	Hostname     string                   `json:"hostname"`
	State        container.State          `json:"state"`
	Cancelled    bool                     `json:"cancelled"`
	ErrText      string                   `json:"error,omitempty"`
	ErrAt        time.Time                `json:"error_at,omitzero"`
	Status       container.ContainerState `json:"status"`
}

// maxEndedEntry bounds an entry read back (the error text is bounded by
// maxErrorFile when written).
const maxEndedEntry = 256 << 10

// endedDir is the cache's directory, "" without a state directory.
func (s *Scheduler) endedDir() string {
	if s.cfg.StateDir == "" {
		return ""
	}
	return filepath.Join(s.cfg.StateDir, "docker", "ended")
}

// validID reports whether id is a container id (hex), safe as a file name.
var validID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{12,64}$`) })

// exitedCode reads the exit code of the Engine's list status "Exited (137) 2 hours
// ago"; false when the status says none.
func exitedCode(status string) (int, bool) {
	rest, ok := strings.CutPrefix(status, "Exited (")
	if !ok {
		return 0, false
	}
	n, _, ok := strings.Cut(rest, ")")
	if !ok {
		return 0, false
	}
	code, err := strconv.Atoi(n)
	return code, err == nil
}

// ended reports whether a listed container has ended for good.
func ended(sum container.Summary) bool {
	return sum.State == container.StateExited || sum.State == container.StateDead
}

// cachedReplica fills r from the cache when it holds the ended container r.sum;
// false when it does not.
func (s *Scheduler) cachedReplica(r *replica) bool {
	dir := s.endedDir()
	if dir == "" || !ended(r.sum) || !validID().MatchString(r.sum.ID) {
		return false
	}
	b, err := readBounded(filepath.Join(dir, r.sum.ID+".json"))
	if err != nil || len(b) > maxEndedEntry {
		return false
	}
	var e endedEntry
	if json.Unmarshal(b, &e) != nil || e.Status != r.sum.State {
		return false
	}
	if code, ok := exitedCode(r.sum.Status); ok && code != e.State.ExitCode {
		return false // started again and ended otherwise
	}
	st := e.State
	r.info = &container.InspectResponse{Created: e.Created, RestartCount: e.RestartCount, State: &st,
		Config: &container.Config{Hostname: e.Hostname}}
	r.cancelled = e.Cancelled
	r.err = errorInfo{text: e.ErrText, at: e.ErrAt}
	return true
}

// keepReplica writes what the listing learnt of an ended container into the cache;
// a cache that cannot be written is only slower.
func (s *Scheduler) keepReplica(r *replica) {
	dir := s.endedDir()
	if dir == "" || r.info == nil || r.info.State == nil || !ended(r.sum) || !validID().MatchString(r.sum.ID) ||
		string(r.info.State.Status) != string(r.sum.State) {
		return
	}
	e := endedEntry{Created: r.info.Created, RestartCount: r.info.RestartCount, State: *r.info.State,
		Cancelled: r.cancelled, ErrText: r.err.text, ErrAt: r.err.at, Status: r.sum.State}
	e.State.Health = nil
	if r.info.Config != nil {
		e.Hostname = r.info.Config.Hostname
	}
	b, err := json.Marshal(e)
	if err != nil || os.MkdirAll(dir, 0o700) != nil {
		return
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return
	}
	_, werr := f.Write(b)
	if cerr := f.Close(); werr != nil || cerr != nil || os.Rename(f.Name(), filepath.Join(dir, r.sum.ID+".json")) != nil {
		_ = os.Remove(f.Name())
	}
}

// forgetReplicas drops the cache's entries of the containers ids (cancelled,
// removed).
func (s *Scheduler) forgetReplicas(ids ...string) {
	dir := s.endedDir()
	if dir == "" {
		return
	}
	for _, id := range ids {
		if validID().MatchString(id) {
			_ = os.Remove(filepath.Join(dir, id+".json"))
		}
	}
}

// pruneEnded drops the entries of containers the Engine no longer lists (removed
// outside wick); keep holds the ids listed.
func (s *Scheduler) pruneEnded(keep map[string]bool) {
	dir := s.endedDir()
	if dir == "" {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if ok && !keep[id] {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
