// Command wick launches TorchX-style jobs as local processes, Docker containers or
// Slurm jobs and lets you watch every replica live, from a full-screen UI or one-shot
// verbs. It only parses the command line: tui/cli has the verbs, tui the UI.
package main

import (
	"context"
	"os"

	"github.com/wick-dev/wick/tui/cli"
)

func main() {
	env := cli.OSEnv()
	args := os.Args[1:]
	// No verb on a terminal opens the UI.
	if len(args) == 0 && env.StdoutTTY && cli.IsTerminal(os.Stdin) {
		args = []string{"ui"}
	}
	os.Exit(cli.Main(context.Background(), args, env))
}
