package docker

import (
	"archive/tar"
	"context"
	"io"
	"sync"
	"time"

	"github.com/moby/moby/client"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/ranks/watch"
)

// The workers of a torchrun node on local_docker are watched from inside its container,
// as Slurm's replica wrapper watches them on its node (engine/ranks/watch): Docker
// keeps one log per container, so two workers of a node that raise within the same
// second leave two unprefixed tracebacks that neither the log nor torchrun's summary
// (which lists the workers its poll found ended: the peer that failed of the raising
// one may be all it lists) puts on a rank. The container's command is wrapped
// (wrapCommand, watch.Wrap): a /bin/sh starts the sampler in the background, then
// execs the node's command, which is then the process the container's init runs, with
// its signals, environment and exit status. The sampler thus watches from before the
// agent starts: an exec after the container's start (as before) came seconds late on
// a loaded machine, after workers that fail in their first seconds had ended, and
// their tie stood. The dry run shows the wrapped command, as it is submitted (as
// Slurm's shows its replica wrapper); TorchX's command is its tail, after
// "wick-watch" and the sampler's script. The sampler writes to the container's error
// volume (errorDir/workers.watch), which outlives the container's processes, and
// ends with them. The root cause reads it back once the container stopped
// (nodeWorkers) and puts each unprefixed traceback on the worker seen to begin to end
// in its order, or says the tie ("rank 2 or 3") where the samples do not order them.
//
// Bounds: the sampler is a shell that wakes every 100 ms; where the image has bash
// it starts no process then (see watch.Sampler), else a sleep each time. Until it has
// found the agent it starts three small ones per process below the node's command, at
// each of its first 100 wakes, then every 0.5 s; then three per new child of the
// agent. The file stays under 2*watch.Rotate lines. The sampler's process is one of
// the container's (its pid namespace's), and ends with its first process. In an image
// without /bin/sh (the Engine's init would fail to exec it, and the container end
// with 127; launch stats it in the created container, one call per wrapped
// container) the container is made again with the node's command alone and is not
// watched, and its tie stands; one whose date cannot print milliseconds is not
// watched either. A container the Engine restarted (max_retries) runs no new sampler
// (the wrapper finds errorDir/workers.start): the workers of the run before ended
// before the new run's tracebacks began, and do not count
// (ranks.NodeReport.rankByWorkers); the new run's, whose pids may be the same, would
// be mixed with them.

// watchFile is where a container's sampler writes (watch.Sampler), without its suffix.
const watchFile = errorDir + "/workers"

// maxWorkersCache bounds the watched nodes remembered across Describe calls.
const maxWorkersCache = 1024

// watches reports whether the container of a replica whose command is argv and whose
// error file is errFile gets a sampler: a torchrun node with more than one worker (or
// an unknown count), whose error volume is wick's.
func watches(argv []string, errFile string) bool {
	return errFile == errorFile && ranks.RunsTorchrun(argv) && ranks.NProcPerNode(argv) != 1
}

// wrapCommand is the command of a replica's container (argv, in an environment env):
// the sampler's wrapper around argv where watches says so, else argv. The wrapper's
// shell leaves the variables it would add (PWD, SHLVL) out of argv's environment,
// unless env sets them.
func wrapCommand(argv []string, env map[string]string) []string {
	if !watches(argv, env[envErrorFile]) {
		return argv
	}
	var unset []string
	for _, k := range []string{"PWD", "SHLVL"} {
		if _, ok := env[k]; !ok {
			unset = append(unset, k)
		}
	}
	return watch.Wrap(errorDir, unset, argv)
}

// nodeWorkers is what the sampler of a stopped torchrun node's container saw of its
// workers (see watch.Parse), read knowing when the node's first worker traceback
// began (first), nil when nothing.
func (s *Scheduler) nodeWorkers(ctx context.Context, r *replica, first time.Time) map[int]ranks.Watched {
	key := r.sum.ID + "@" + r.info.State.FinishedAt + "@" + first.Format(time.RFC3339Nano)
	if w, ok := s.workers.get(key); ok {
		return w
	}
	cli, err := s.engine(ctx)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var b []byte
	for _, f := range []string{watchFile + ".watch.1", watchFile + ".watch"} {
		part, _, _ := copyOut(ctx, cli, r.sum.ID, f, watch.MaxFile)
		b = append(b, part...)
		b = append(b, '\n')
	}
	w := watch.Parse(b, nil, first)
	if ctx.Err() == nil {
		s.workers.put(key, w, maxWorkersCache)
	}
	return w
}

// unprefixed reports whether f holds a worker traceback without torchrun's prefix:
// the tracebacks only the workers' watch can put on a rank.
func unprefixed(f *ranks.Failures) bool {
	for _, tb := range f.WorkerTracebacks() {
		if tb.Local < 0 {
			return true
		}
	}
	return false
}

// copyOut copies one file out of a container, at most max bytes (what could be read
// of them), with its modification time (the Engine's stat has nanoseconds; its tar,
// seconds); an error when there is no such file.
func copyOut(ctx context.Context, cli *client.Client, id, file string, max int64) ([]byte, time.Time, error) {
	res, err := cli.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: file})
	if err != nil {
		return nil, time.Time{}, err
	}
	defer res.Content.Close()
	tr := tar.NewReader(res.Content)
	h, err := tr.Next()
	if err != nil {
		return nil, time.Time{}, err
	}
	if h.Typeflag != tar.TypeReg {
		return nil, time.Time{}, io.ErrUnexpectedEOF
	}
	b, _ := io.ReadAll(io.LimitReader(tr, max))
	at := res.Stat.Mtime
	if at.IsZero() {
		at = h.ModTime
	}
	return b, at, nil
}

// stoppedCache remembers what was read of stopped containers, by container id and
// FinishedAt: what a stopped container holds does not change until it runs again,
// which changes its FinishedAt. Once it holds max entries, it starts over.
type stoppedCache[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

func (c *stoppedCache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok
}

func (c *stoppedCache[V]) put(key string, v V, max int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= max {
		c.m = map[string]V{}
	}
	c.m[key] = v
}
