// Command zz_devwick is a temporary stand-in for wick while main.go is being wired.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/local"
	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/tui"
)

func main() {
	ctx := context.Background()
	if len(os.Args) > 2 && os.Args[1] == local.SuperviseVerb {
		if err := local.Supervise(ctx, os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	self, _ := os.Executable()
	reg := &sched.Registry{}
	local.Register(reg)
	r := runner.New(reg, sched.Config{Session: "wick", StateDir: os.Getenv("WICK_HOME"), Self: []string{self}})
	defer r.Close()
	theme := ""
	if len(os.Args) > 2 {
		theme = os.Args[2]
	}
	err := tui.Run(ctx, tui.Options{
		Runner:           r,
		Components:       func() ([]*components.Component, error) { return components.Builtins(), nil },
		DefaultScheduler: "local_cwd",
		Theme:            theme,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "wick:", err)
		os.Exit(1)
	}
}
