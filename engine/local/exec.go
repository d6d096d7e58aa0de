package local

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/engine/sched"
)

// maxExecEnviron bounds what is read of a replica's environment (/proc/PID/environ):
// the kernel keeps at most a quarter of the stack limit for argv and env, 2 MiB by
// default.
const maxExecEnviron = 4 << 20

// execWaitDelay is how long Run waits for the command's output to close after it
// exited (a background child of the user's shell holding the terminal).
const execWaitDelay = 500 * time.Millisecond

// Exec runs req in the replica's own place: the working directory and the environment
// its process runs with, read from /proc (for a torchrun node, torchrun's, which its
// workers inherit). An empty Argv opens req.Shell, else /bin/sh.
func (s *Scheduler) Exec(ctx context.Context, appID, role string, k int, req sched.ExecRequest) (sched.Command, error) {
	d, err := s.Describe(ctx, appID)
	if err != nil {
		return nil, err
	}
	rep, err := sched.RunningReplica(d, role, k)
	if err != nil {
		return nil, err
	}
	if rep.PID <= 0 {
		return nil, fmt.Errorf("%s/%d has no process yet", role, k)
	}
	proc := "/proc/" + strconv.Itoa(rep.PID)
	dir, err := os.Readlink(proc + "/cwd")
	if err != nil {
		return nil, fmt.Errorf("%s/%d's working directory: %w", role, k, err)
	}
	environ, err := safefs.ReadFile(proc+"/environ", maxExecEnviron)
	if err != nil {
		return nil, fmt.Errorf("%s/%d's environment: %w", role, k, err)
	}
	var env []string
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if len(kv) > 0 {
			env = append(env, string(kv))
		}
	}
	argv := req.Argv
	if len(argv) == 0 {
		sh := req.Shell
		if sh == "" {
			sh = "/bin/sh"
		}
		argv = []string{sh}
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Path, cmd.Err = lookPathIn(argv[0], env) // the replica's PATH, not wick's
	cmd.Dir, cmd.Env = dir, env
	cmd.WaitDelay = execWaitDelay
	return sched.ProcessCommand(cmd), nil
}

// lookPathIn finds name as the replica's PATH (in env) does; a name with a slash is
// itself.
func lookPathIn(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, kv := range env {
		path, ok := strings.CutPrefix(kv, "PATH=")
		if !ok {
			continue
		}
		for _, dir := range filepath.SplitList(path) {
			p := filepath.Join(dir, name)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
		return "", fmt.Errorf("%s: no such command in the replica's PATH", name)
	}
	return exec.LookPath(name)
}
