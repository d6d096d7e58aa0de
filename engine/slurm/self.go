package slurm

import (
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wick-dev/wick/engine/sched"
)

// selfScript runs wick (the arguments after the first three: a hidden verb) on a
// replica's node: the caller's binary at its own path ($1) where the node has it (a
// shared file system, the same install), else the copy sbcast left in the node's
// /tmp ($2), owned by the user; either only if it is the caller's build: its Go build
// id ($3) is in its first 32 KiB, where Go's linker writes it (cmd/go reads it there
// too). Neither: exit noSelfCode, saying so. The copies are bounded: a copy is
// touched each time it is run, and the user's copies of other builds (the same name
// but for the build: wick upgraded, or rebuilt) that went unrun for an hour are
// removed, so that a node keeps about one copy per user (a copy of tens of MB
// each build otherwise, for ever). A copy run within the hour may be another wick's,
// of its build, still in use.
const selfScript = `s=$1 t=$2 id=$3; shift 3
same() { [ -f "$1" ] && [ -x "$1" ] && head -c 32768 "$1" 2>/dev/null | grep -qaF -e "$id"; }
old() { for f in "${t%-*}"-*; do [ "$f" != "$t" ] && [ -f "$f" ] && [ -O "$f" ] && [ -n "$(find "$f" -mmin +60 2>/dev/null)" ] && rm -f "$f"; done; }
old
if same "$s"; then exec "$s" "$@"; fi
if [ -O "$t" ] && same "$t"; then touch -c "$t" 2>/dev/null; exec "$t" "$@"; fi
echo "no wick of this build at $s on $(hostname)" >&2; exit 97`

// noSelfCode is selfScript's exit status when the node has no wick of the caller's
// build: an exit status no wick verb uses.
const noSelfCode = 97

// selfBuild is the caller's wick binary and its Go build id, read once.
type selfBuild struct {
	once      sync.Once
	path, id  string
	err       error
	bcastMu   sync.Mutex
	bcastDone map[string]*bcastCall // by job id
}

// bcastCall is one sbcast of wick's binary to a job's nodes, which the replicas of
// the job that need it wait for together.
type bcastCall struct {
	done chan struct{}
	err  error
}

// RunSelf runs wick itself, args (a hidden verb and its arguments), on the node of
// replica k of role, within its job (srun --overlap, as Exec), and returns what it
// printed on stdout. The binary is the caller's, at its own path where the node has
// that build there, else copied to the node's /tmp with sbcast (once per job and
// build: the copies are named by build and owned by the user). Where neither works it
// fails wrapping sched.ErrNoSelf, saying why. The step's deadline is ctx's (the
// verb's own work on the node), stepTimeout where ctx has none.
func (s *Scheduler) RunSelf(ctx context.Context, appID, role string, k int, args []string) ([]byte, error) {
	step, err := s.stepArgs(appID, role, k)
	if err != nil {
		return nil, err
	}
	self, id, err := s.self()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", sched.ErrNoSelf, err)
	}
	tmp := tmpCopy(id)
	after := stepTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) > after {
		after = time.Until(dl)
	}
	run := func() ([]byte, error) {
		argv := slices.Concat(step, []string{"/bin/sh", "-c", selfScript, "wick-self", self, tmp, id}, args)
		return startWithin(ctx, after, nil, "srun", argv...).wait()
	}
	out, err := run()
	if !isNoSelf(err) {
		return out, err
	}
	if berr := s.broadcast(ctx, appID, self, tmp); berr != nil {
		return nil, fmt.Errorf("%w: the node has no wick of this build at %s, and sbcast to %s failed: %v", sched.ErrNoSelf, self, tmp, berr)
	}
	out, err = run()
	if isNoSelf(err) {
		return nil, fmt.Errorf("%w: %v (after sbcast to %s)", sched.ErrNoSelf, err, tmp)
	}
	return out, err
}

// isNoSelf reports whether err is selfScript's "no wick of this build on the node".
func isNoSelf(err error) bool {
	var ce *CommandError
	return errors.As(err, &ce) && ce.Code == noSelfCode
}

// tmpCopy is where sbcast puts wick's binary on a node: in its /tmp, named by the
// user and the build, so that one copy serves every later call of that build.
func tmpCopy(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "/tmp/wick-" + strconv.Itoa(os.Getuid()) + "-" + hex.EncodeToString(sum[:8])
}

// self returns the caller's wick binary and its build id.
func (s *Scheduler) self() (path, id string, err error) {
	b := &s.build
	b.once.Do(func() {
		if len(s.cfg.Self) == 0 || s.cfg.Self[0] == "" {
			b.err = errors.New("wick's own binary is not known")
			return
		}
		b.path = s.cfg.Self[0]
		b.id, b.err = buildID(b.path)
	})
	return b.path, b.id, b.err
}

// broadcast copies wick's binary self to tmp on every node of job appID (sbcast: one
// call covers a heterogeneous job's components), once: callers for the same job wait
// for the first one's copy.
func (s *Scheduler) broadcast(ctx context.Context, appID, self, tmp string) error {
	b := &s.build
	b.bcastMu.Lock()
	c := b.bcastDone[appID]
	if c == nil {
		if b.bcastDone == nil {
			b.bcastDone = map[string]*bcastCall{}
		}
		c = &bcastCall{done: make(chan struct{})}
		b.bcastDone[appID] = c
		b.bcastMu.Unlock()
		_, c.err = command(ctx, nil, "sbcast", "--force", "--jobid="+appID, self, tmp)
		close(c.done)
		return c.err
	}
	b.bcastMu.Unlock()
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// buildID reads the Go build id of the executable at path (its .note.go.buildid, as
// `go tool buildid` prints it).
func buildID(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("wick's binary %s: %w", path, err)
	}
	defer f.Close()
	sec := f.Section(".note.go.buildid")
	if sec == nil {
		return "", fmt.Errorf("wick's binary %s has no Go build id", path)
	}
	note, err := sec.Data()
	if err != nil {
		return "", fmt.Errorf("wick's binary %s: %w", path, err)
	}
	// An ELF note: namesz, descsz, type (4 bytes each), the name "Go\0\0", the desc.
	if len(note) < 16 || string(note[12:16]) != "Go\x00\x00" {
		return "", fmt.Errorf("wick's binary %s: malformed Go build id note", path)
	}
	n := binary.LittleEndian.Uint32(note[4:8])
	if uint64(n) > uint64(len(note)-16) {
		return "", fmt.Errorf("wick's binary %s: malformed Go build id note", path)
	}
	id := string(note[16 : 16+n])
	if id == "" || strings.ContainsAny(id, "\x00\n") {
		return "", fmt.Errorf("wick's binary %s: malformed Go build id", path)
	}
	return id, nil
}
