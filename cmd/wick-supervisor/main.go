// Command wick-supervisor is the per-app supervisor of wick's local schedulers
// (local_cwd, local_dir): wick starts it as `wick-supervisor __supervise APP_DIR`
// for every app it launches, and the supervisor starts it again as the app's reaper
// (engine/local). It is `wick __supervise` without the rest of wick: every app pays
// one start of it (two with the reaper), and in wick's binary that start ran the
// package initialisers of the UI, the verbs and their libraries, which the
// supervisor never uses. `make build` puts it beside wick; a wick without it beside
// runs `wick __supervise` instead.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/wick-dev/wick/engine/local"
)

const usage = `usage: wick-supervisor __supervise APP_DIR

the supervisor of one local app, started by wick (not by hand)
`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the program: its messages go to stderr, the app's supervisor.log, as wick's
// did, one line each, "wick: " first (the launcher reports the last line of that log
// as why a supervisor ended before it started the app).
func run(args []string, stdout, stderr io.Writer) (code int) {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprint(stdout, usage)
		return 0
	}
	if len(args) != 2 || args[0] != local.SuperviseVerb || args[1] == "" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "wick: internal error: %v (please report it)\n", r)
			code = 1
		}
	}()
	if err := local.Supervise(context.Background(), args[1]); err != nil {
		fmt.Fprintf(stderr, "wick: %s\n", strings.Join(strings.Fields(err.Error()), " "))
		return 1
	}
	return 0
}
