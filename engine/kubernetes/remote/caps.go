package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"

	"github.com/wick-dev/wick/engine/sched"
)

// The optional capabilities of a scheduler served by a helper are functions of a
// Client rather than its methods, so that a Client does not claim what its helper's
// scheduler lacks (the Runner finds each capability by a type assertion): the
// scheduler's own package wraps its Client in a type with the methods it has.

// Kill stops every replica of the app at once (sched.Killer), in the helper.
func Kill(ctx context.Context, c *Client, appID string) error {
	return c.call(ctx, mKill, execParams{AppID: appID}, nil, nil)
}

// Usage returns the usage of the app's running replicas (sched.UsageReader), as the
// helper's scheduler samples it: one helper, one sampler, between the calls of one
// Client.
func Usage(ctx context.Context, c *Client, appID string) (map[sched.ReplicaKey]sched.Usage, error) {
	var us []keyedUsage
	if err := c.call(ctx, mUsage, execParams{AppID: appID}, &us, nil); err != nil {
		return nil, err
	}
	m := make(map[sched.ReplicaKey]sched.Usage, len(us))
	for _, u := range us {
		m[sched.ReplicaKey{Role: u.Role, Replica: u.Replica}] = u.Usage
	}
	return m, nil
}

// HostPIDs returns the host PIDs of the app's running replicas (sched.HostPIDer).
func HostPIDs(ctx context.Context, c *Client, appID string) (map[sched.ReplicaKey]int, error) {
	var ps []keyedPID
	if err := c.call(ctx, mHostPIDs, execParams{AppID: appID}, &ps, nil); err != nil {
		return nil, err
	}
	m := make(map[sched.ReplicaKey]int, len(ps))
	for _, p := range ps {
		m[sched.ReplicaKey{Role: p.Role, Replica: p.Replica}] = p.PID
	}
	return m, nil
}

// Exec prepares req to run in a replica's place (sched.Execer). The helper checks it
// at once (what the scheduler's Exec checks: the app, the replica running, a shell);
// the command runs in a helper process of its own (`HELPER exec ...`) with the
// caller's stdin, stdout and stderr as its own, so that a terminal stays a terminal.
func Exec(ctx context.Context, c *Client, appID, role string, k int, req sched.ExecRequest) (sched.Command, error) {
	if err := c.call(ctx, mExecCheck, execParams{AppID: appID, Role: role, Replica: k, Req: req}, nil, nil); err != nil {
		return nil, err
	}
	argv, err := c.command()
	if err != nil {
		return nil, err
	}
	args := append([]string{"exec"}, argv[2:]...) // argv is HelperArgs: PATH serve FLAGS
	args = append(args, "--app", appID, "--role", role, "--replica", strconv.Itoa(k), "--shell", req.Shell)
	if req.TTY {
		args = append(args, "--tty")
	}
	return &helperCommand{ctx: ctx, path: argv[0], args: append(append(args, "--"), req.Argv...)}, nil
}

// helperCommand is a command run by a helper's exec verb.
type helperCommand struct {
	ctx            context.Context
	path           string
	args           []string
	stdin          io.Reader
	stdout, stderr io.Writer
}

func (h *helperCommand) SetStdin(r io.Reader)  { h.stdin = r }
func (h *helperCommand) SetStdout(w io.Writer) { h.stdout = w }
func (h *helperCommand) SetStderr(w io.Writer) { h.stderr = w }

// maxExecErr bounds the helper's error report read back.
const maxExecErr = 64 << 10

// Run runs the helper to its end: the command's exit status is the helper's; an
// error of its own (no such replica, the Engine down) comes on a pipe, its fd 3.
func (h *helperCommand) Run() error {
	args := h.args
	if h.stdin != nil {
		args = append([]string{args[0], "--stdin"}, args[1:]...)
	}
	cmd := exec.CommandContext(h.ctx, h.path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = h.stdin, h.stdout, h.stderr
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd.ExtraFiles = []*os.File{w}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return fmt.Errorf("starting %s: %w", h.path, err)
	}
	line, _ := bufio.NewReader(io.LimitReader(r, maxExecErr)).ReadBytes('\n')
	werr := cmd.Wait()
	if len(line) > 0 {
		var we wireError
		if err := json.Unmarshal(line, &we); err != nil {
			return fmt.Errorf("%s exec: %s", h.path, line)
		}
		return fromWire(&we)
	}
	if ee := (*exec.ExitError)(nil); errors.As(werr, &ee) && ee.Exited() {
		return &sched.ExitError{Code: ee.ExitCode()}
	}
	if werr != nil && h.ctx.Err() != nil {
		return h.ctx.Err()
	}
	return werr
}

// ServeExec is a helper's exec verb (args after "exec"): it runs a command in a
// replica's place with sc's Exec, on the process's stdin (with --stdin), stdout and
// stderr, and returns the exit status to end with: the command's, else 0 with an
// error of its own written to fd 3 as one JSON line (what Run reads back).
func ServeExec(ctx context.Context, mk func(sched.Config) (sched.Scheduler, error), args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg sched.Config
	var appID, role string
	var k int
	var req sched.ExecRequest
	var stdin bool
	fs.StringVar(&cfg.Session, "session", "", "session of the apps' handles")
	fs.StringVar(&cfg.StateDir, "state-dir", "", "wick's state directory ($WICK_HOME)")
	fs.StringVar(&cfg.WorkDir, "work-dir", "", "working directory of wick")
	fs.StringVar(&appID, "app", "", "app id")
	fs.StringVar(&role, "role", "", "role")
	fs.IntVar(&k, "replica", 0, "replica")
	fs.StringVar(&req.Shell, "shell", "", "the caller's $SHELL")
	fs.BoolVar(&req.TTY, "tty", false, "ask for a terminal")
	fs.BoolVar(&stdin, "stdin", false, "attach stdin")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	req.Argv = fs.Args()
	report := os.NewFile(3, "errors")
	fail := func(err error) int {
		b, _ := json.Marshal(toWire(err))
		if report == nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		_, _ = report.Write(append(b, '\n'))
		return 0
	}
	sc, err := mk(cfg)
	if err != nil {
		return fail(err)
	}
	defer sc.Close()
	e, ok := sc.(sched.Execer)
	if !ok {
		return fail(fmt.Errorf("%s: %w", sc.Name(), sched.ErrNoExec))
	}
	c, err := e.Exec(ctx, appID, role, k, req)
	if err != nil {
		return fail(err)
	}
	if stdin {
		c.SetStdin(os.Stdin)
	}
	c.SetStdout(os.Stdout)
	c.SetStderr(os.Stderr)
	err = c.Run()
	if ee := (*sched.ExitError)(nil); errors.As(err, &ee) {
		return ee.Code
	}
	if err != nil {
		return fail(err)
	}
	return 0
}
