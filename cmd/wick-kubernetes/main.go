// Command wick-kubernetes is the helper in which wick runs its kubernetes scheduler:
// wick starts it (`wick-kubernetes serve ...`) on the first call that needs the
// cluster and talks to it over its stdin and stdout (engine/kubernetes/remote). It
// exists so that wick does not link client-go, whose package initialisers would run at
// every start of wick, whatever the verb. `make build` puts it beside wick.
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

	"github.com/wick-dev/wick/engine/kubernetes"
	"github.com/wick-dev/wick/engine/kubernetes/remote"
	"github.com/wick-dev/wick/engine/sched"
)

func main() {
	// wick shares the terminal's process group: a Ctrl-C reaches this helper too, and
	// wick answers it by cancelling through the helper (a launch's rollback). The
	// helper ends when wick closes its input.
	signal.Ignore(os.Interrupt, syscall.SIGQUIT, syscall.SIGHUP)
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `usage: wick-kubernetes serve [--session NAME] [--state-dir DIR] [--work-dir DIR]
       wick-kubernetes keep --state-dir DIR [--session NAME] APP_ID

wick's kubernetes scheduler, run by wick (not by hand): serve reads wick's calls on its
stdin and answers on its stdout until its stdin ends; keep keeps the logs of an app's
pods under DIR until the app has ended (started detached by the launch).
`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "keep" {
		return keep(ctx, args[1:], stderr)
	}
	if len(args) == 0 || args[0] != "serve" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, usage)
			return 0
		}
		fmt.Fprint(stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("wick-kubernetes serve", flag.ContinueOnError)
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
		fmt.Fprintf(stderr, "wick-kubernetes serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	srv := remote.NewServer(stdout)
	cfg.Warn = srv.Warn
	sc, err := kubernetes.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "wick-kubernetes: %v\n", err)
		return 1
	}
	if err := srv.Serve(ctx, sc, stdin); err != nil {
		fmt.Fprintf(stderr, "wick-kubernetes: %v\n", err)
		return 1
	}
	return 0
}

// keep runs the keeper of one app's logs (engine/kubernetes, keep.go).
func keep(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("wick-kubernetes keep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), usage) }
	var cfg sched.Config
	fs.StringVar(&cfg.Session, "session", "", "session of the apps' handles")
	fs.StringVar(&cfg.StateDir, "state-dir", "", "wick's state directory ($WICK_HOME)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 || cfg.StateDir == "" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	sc, err := kubernetes.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "wick-kubernetes keep: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer stop()
	if err := sc.(*kubernetes.Scheduler).Keep(ctx, fs.Arg(0)); err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "wick-kubernetes keep: %v\n", err)
		return 1
	}
	return 0
}
