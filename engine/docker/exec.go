package docker

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/muesli/cancelreader"
	"golang.org/x/term"

	"github.com/wick-dev/wick/engine/sched"
)

// Exec runs req in the replica's container, as `docker exec` does: in the container's
// working directory and environment, with a terminal of its own when req.TTY and the
// caller's stdin is one. An empty Argv opens bash where the image has it, else
// /bin/sh.
func (s *Scheduler) Exec(ctx context.Context, appID, role string, k int, req sched.ExecRequest) (sched.Command, error) {
	d, err := s.Describe(ctx, appID)
	if err != nil {
		return nil, err
	}
	rep, err := sched.RunningReplica(d, role, k)
	if err != nil {
		return nil, err
	}
	if rep.ContainerID == "" {
		return nil, fmt.Errorf("%s/%d has no container yet", role, k)
	}
	cli, err := s.engine(ctx)
	if err != nil {
		return nil, err
	}
	argv := req.Argv
	if len(argv) == 0 {
		for _, sh := range []string{"/bin/bash", "/bin/sh"} {
			if _, err := cli.ContainerStatPath(ctx, rep.ContainerID, client.ContainerStatPathOptions{Path: sh}); err == nil {
				argv = []string{sh}
				break
			}
		}
		if len(argv) == 0 {
			return nil, fmt.Errorf("%s/%d's image has no shell (/bin/bash, /bin/sh): give a command to run", role, k)
		}
	}
	return &containerCommand{ctx: ctx, s: s, cli: cli, id: rep.ContainerID, argv: argv, tty: req.TTY}, nil
}

// containerCommand is a command run in a container through the Engine's exec API.
type containerCommand struct {
	ctx            context.Context
	s              *Scheduler
	cli            *client.Client
	id             string
	argv           []string
	tty            bool
	stdin          io.Reader
	stdout, stderr io.Writer
}

func (c *containerCommand) SetStdin(r io.Reader)  { c.stdin = r }
func (c *containerCommand) SetStdout(w io.Writer) { c.stdout = w }
func (c *containerCommand) SetStderr(w io.Writer) { c.stderr = w }

// Run creates the exec, streams stdin to it and its output back, and returns its exit
// status (an *sched.ExitError when not 0).
func (c *containerCommand) Run() error {
	ctx := c.ctx
	in, _ := c.stdin.(*os.File)
	tty := c.tty && in != nil && term.IsTerminal(int(in.Fd()))
	opts := client.ExecCreateOptions{Cmd: c.argv, AttachStdin: c.stdin != nil, AttachStdout: true, AttachStderr: true, TTY: tty}
	if tty {
		if w, h, err := term.GetSize(int(in.Fd())); err == nil && w > 0 && h > 0 {
			opts.ConsoleSize = client.ConsoleSize{Height: uint(h), Width: uint(w)}
		}
	}
	ex, err := c.cli.ExecCreate(ctx, c.id, opts)
	if err != nil {
		return c.s.engineErr(fmt.Errorf("docker exec in %.12s: %w", c.id, err))
	}
	att, err := c.cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{TTY: tty, ConsoleSize: opts.ConsoleSize})
	if err != nil {
		return c.s.engineErr(fmt.Errorf("docker exec in %.12s: %w", c.id, err))
	}
	defer att.Close()
	if tty {
		if st, err := term.MakeRaw(int(in.Fd())); err == nil {
			defer func() { _ = term.Restore(int(in.Fd()), st) }()
		}
	}
	// The connection closes when ctx ends, which ends the copies.
	stop := context.AfterFunc(ctx, att.Close)
	defer stop()
	fed := c.feed(att.HijackedResponse)
	defer fed()
	out := c.stdout
	if out == nil {
		out = io.Discard
	}
	errw := c.stderr
	if errw == nil {
		errw = io.Discard
	}
	if tty {
		_, err = io.Copy(out, att.Reader)
	} else {
		_, err = stdcopy.StdCopy(out, errw, att.Reader)
	}
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("docker exec in %.12s: %w", c.id, err)
	}
	res, err := c.cli.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
	if err != nil {
		return c.s.engineErr(fmt.Errorf("docker exec in %.12s: %w", c.id, err))
	}
	if res.ExitCode != 0 {
		return &sched.ExitError{Code: res.ExitCode}
	}
	return nil
}

// feed copies stdin to the exec until stdin ends, then closes the exec's input. The
// returned function stops the copy when the command ended first: a terminal's read is
// cancelled, so that no goroutine is left reading the keys that belong to the UI
// next.
func (c *containerCommand) feed(conn client.HijackedResponse) (stop func()) {
	if c.stdin == nil {
		_ = conn.CloseWrite()
		return func() {}
	}
	src := c.stdin
	var cr cancelreader.CancelReader
	if f, ok := c.stdin.(*os.File); ok {
		if r, err := cancelreader.NewReader(f); err == nil {
			cr, src = r, r
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(conn.Conn, src)
		_ = conn.CloseWrite()
	}()
	return func() {
		if cr != nil {
			cr.Cancel()
			<-done
			_ = cr.Close()
			return
		}
		// Another reader (a test's): it ends with its data, or with the
		// connection, closed by the caller right after.
		select {
		case <-done:
		default:
			_ = conn.Conn.Close()
		}
	}
}

// HostPIDs returns the host pid of each running container's first process (the
// Engine's State.Pid): the Engine runs on this machine (a local socket), so its
// containers' processes are this machine's.
func (s *Scheduler) HostPIDs(ctx context.Context, appID string) (map[sched.ReplicaKey]int, error) {
	cli, sums, _, err := s.appContainers(ctx, appID)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	host := s.ep.Host
	s.mu.Unlock()
	if !strings.HasPrefix(host, "unix://") {
		return nil, fmt.Errorf("the Docker Engine at %s is not this machine's: its containers' processes cannot be read from here", host)
	}
	out := map[sched.ReplicaKey]int{}
	for _, c := range sums {
		r := replica{sum: c}
		if c.State != container.StateRunning || r.id() < 0 || r.role() == "" {
			continue
		}
		in, err := cli.ContainerInspect(ctx, c.ID, client.ContainerInspectOptions{})
		if err != nil {
			return nil, s.engineErr(fmt.Errorf("inspecting %.12s: %w", c.ID, err))
		}
		if in.Container.State != nil && in.Container.State.Pid > 0 {
			out[sched.ReplicaKey{Role: r.role(), Replica: r.id()}] = in.Container.State.Pid
		}
	}
	return out, nil
}
