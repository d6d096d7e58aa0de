package sweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/wick-dev/wick/engine/safefs"
)

// queueStartWait bounds how long a launch waits for a sweep's queue to start.
const queueStartWait = 30 * time.Second

// osEnviron is the environment of this process (a Request without its own).
func osEnviron() []string { return os.Environ() }

// Starter starts a sweep's queue process beside the launcher, as a local scheduler
// starts an app's supervisor.
type Starter struct {
	// Self is the command that runs wick (sched.Config.Self).
	Self []string
	// Home is $WICK_HOME, given to the queue.
	Home string
	// WorkDir is where the queue runs when the sweep recorded no directory.
	WorkDir string
}

// Launch writes a planned sweep to the store and starts its queue process; it returns
// once the queue owns the sweep.
func (st Starter) Launch(ctx context.Context, store *Store, p *Planned) error {
	if store == nil {
		return ErrNoStore
	}
	dir, err := store.Create(p.Sweep, p.Plans)
	if err != nil {
		return err
	}
	return st.Start(ctx, dir, p.Sweep)
}

// Resume starts the queue of sweep id again (its process was killed). It does
// nothing when its queue runs or when nothing is left for it; started says whether
// it started one.
func (st Starter) Resume(ctx context.Context, store *Store, id string) (sw *Sweep, started bool, err error) {
	if store == nil {
		return nil, false, ErrNoStore
	}
	sw, err = store.Load(id)
	if err != nil {
		return nil, false, err
	}
	if sw.QueueRunning() || (sw.Waiting() == 0 && !sw.StopOnNaN) {
		return sw, false, nil
	}
	dir, err := store.Dir(sw.ID)
	if err != nil {
		return sw, false, err
	}
	return sw, true, st.Start(ctx, dir, sw)
}

// Start starts the queue process of the sweep in dir (`wick __sweep DIR`) in its own
// session, and returns once it owns the sweep. It runs in the environment and
// directory recorded with the sweep (those of the command that launched it), so that
// a resume from another shell changes nothing an app sees.
func (st Starter) Start(ctx context.Context, dir string, sw *Sweep) error {
	if len(st.Self) == 0 || st.Self[0] == "" {
		return errors.New("cannot start the sweep's queue: the command that runs wick is unknown")
	}
	self := st.Self[0]
	if p, err := exec.LookPath(self); err == nil {
		self, _ = filepath.Abs(p)
	}
	logf, err := safefs.OpenAppend(filepath.Join(dir, QueueLog))
	if err != nil {
		return fmt.Errorf("sweep queue log: %w", err)
	}
	defer logf.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("start the sweep's queue: %w", err)
	}
	defer pr.Close()
	args := append(slices.Clone(st.Self[1:]), QueueVerb, dir)
	cmd := exec.Command(self, args...)
	cmd.Dir, cmd.Env = st.WorkDir, os.Environ()
	if sw.WorkDir != "" {
		cmd.Dir = sw.WorkDir
	}
	if len(sw.Env) > 0 {
		cmd.Env = slices.Clone(sw.Env)
	}
	cmd.Env = append(cmd.Env, "WICK_HOME="+st.Home, EnvReady+"=3")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{pw}
	// Its own session: no terminal, no Ctrl-C of the launcher, no death with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	pw.Close()
	if err != nil {
		return fmt.Errorf("start the sweep's queue: %w", err)
	}
	go func() { _ = cmd.Wait() }() // reaped whenever it ends (a long-lived UI)
	got := make(chan []byte, 1)
	go func() {
		// Bounded: the queue writes one short line and closes its end.
		b, _ := io.ReadAll(io.LimitReader(pr, 4096))
		got <- b
	}()
	t := time.NewTimer(queueStartWait)
	defer t.Stop()
	select {
	case b := <-got:
		if msg := string(bytes.TrimSpace(b)); msg != "ok" {
			if msg == "" {
				msg = "it exited at once; see " + filepath.Join(dir, QueueLog)
			}
			return fmt.Errorf("the sweep's queue did not start: %s", msg)
		}
		return nil
	case <-t.C:
		return fmt.Errorf("the sweep's queue did not start within %s; see %s", queueStartWait, filepath.Join(dir, QueueLog))
	case <-ctx.Done():
		// The queue goes on (it owns the sweep once started); the caller stopped waiting.
		return ctx.Err()
	}
}
