// Command execcopy is the floor of any Go tool that wraps a command: it runs the
// command its arguments name, reads what it prints, writes that to stdout and exits
// with its status. tui/cli's benchmarks time wick's verbs beside it (and beside the
// bare command): what is left above it is wick's own work, not Go's start-up.
//
// Usage: execcopy COMMAND [ARGS...]
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: execcopy COMMAND [ARGS...]")
		os.Exit(2)
	}
	out, err := exec.Command(os.Args[1], os.Args[2:]...).Output()
	os.Stdout.Write(out)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		os.Exit(ee.ExitCode())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "execcopy:", err)
		os.Exit(1)
	}
}
