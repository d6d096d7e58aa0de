// Command wick-docker is the helper in which wick runs its local_docker scheduler:
// wick starts it (`wick-docker serve ...`) on the first call that needs the Docker
// Engine and talks to it over its stdin and stdout (engine/kubernetes/remote); a
// command run in a container (`wick exec`) runs in one of its own (`wick-docker exec
// ...`). It exists so that wick does not link the Docker SDK, whose package
// initialisers would run at every start of wick, whatever the verb
// (engine/docker/front). `make build` puts it beside wick.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/wick-dev/wick/engine/docker"
	"github.com/wick-dev/wick/engine/kubernetes/remote"
	"github.com/wick-dev/wick/engine/sched"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "exec" {
		// A command in a container: a Ctrl-C (without a terminal; with one, it reaches
		// the container through it) cancels it, as it did in wick.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := remote.ServeExec(ctx, docker.New, os.Args[2:], os.Stderr)
		stop()
		os.Exit(code)
	}
	// wick shares the terminal's process group: a Ctrl-C reaches this helper too, and
	// wick answers it by cancelling through the helper (a launch's rollback). The
	// helper ends when wick closes its input.
	signal.Ignore(os.Interrupt, syscall.SIGQUIT, syscall.SIGHUP)
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `usage: wick-docker serve [--session NAME] [--state-dir DIR] [--work-dir DIR]
       wick-docker exec [--session NAME] [--state-dir DIR] [--work-dir DIR] --app ID --role ROLE --replica K [--tty] [--stdin] [--shell SHELL] -- [ARGV...]

wick's local_docker scheduler, run by wick (not by hand): serve reads wick's calls on
its stdin and answers on its stdout until its stdin ends; exec runs a command in a
replica's container (wick exec), its errors on fd 3.
`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "serve" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, usage)
			return 0
		}
		fmt.Fprint(stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("wick-docker serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), usage) }
	var cfg sched.Config
	fs.StringVar(&cfg.Session, "session", "", "session of the apps' handles")
	fs.StringVar(&cfg.StateDir, "state-dir", "", "wick's state directory ($WICK_HOME)")
	fs.StringVar(&cfg.WorkDir, "work-dir", "", "working directory of wick")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "wick-docker serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	srv := remote.NewServer(stdout)
	cfg.Warn = srv.Warn
	sc, err := docker.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "wick-docker: %v\n", err)
		return 1
	}
	if err := srv.Serve(ctx, sc, stdin); err != nil {
		fmt.Fprintf(stderr, "wick-docker: %v\n", err)
		return 1
	}
	return 0
}
