package cli

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/engine/sweep"
)

// runQueue is the hidden verb `wick __sweep DIR`: the sweep's queue process.
func (a *app) runQueue(dir string) error {
	ctx, stop := signal.NotifyContext(a.ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	signal.Ignore(syscall.SIGHUP)
	var ready *os.File
	if fd, err := strconv.Atoi(a.env.Getenv(sweep.EnvReady)); err == nil && fd > 2 {
		ready = os.NewFile(uintptr(fd), "ready")
	}
	// Not for the apps it launches: their supervisors would inherit it.
	_ = os.Unsetenv(sweep.EnvReady)
	report := func(msg string) {
		if ready != nil {
			fmt.Fprintln(ready, msg)
			ready.Close()
			ready = nil
		}
	}
	store := a.runner().Sweeps()
	if store == nil {
		report("error: no state directory")
		return errors.New("no state directory")
	}
	q := &sweep.Queue{
		Store: store, ID: filepath.Base(dir), Launcher: a.runner(),
		Logf: func(format string, args ...any) {
			fmt.Fprintf(a.env.Stderr, "%s %s\n", time.Now().Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
		},
		Ready: func() { report("ok") },
	}
	err := q.Run(ctx)
	if err != nil {
		report("error: " + oneLine(err.Error()))
	}
	return err
}

// queueCmd is the hidden verb of a sweep's queue process.
func (a *app) queueCmd() *cobra.Command {
	return &cobra.Command{
		Use:    sweep.QueueVerb + " SWEEP_DIR",
		Hidden: true,
		Args:   args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.runQueue(argv[0])
		},
	}
}
