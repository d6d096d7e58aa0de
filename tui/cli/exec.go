package cli

import (
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

func (a *app) execCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:               "exec HANDLE/ROLE/ID [COMMAND [ARG...]]",
		ValidArgsFunction: a.completeHandles,
		Short:             "Run a command, or open a shell, where a running replica runs",
		Long: `Run a command, or open a shell when none is given, in a running replica's own place:

  local_cwd, local_dir   its working directory and its environment (as its process has
                        them), on this machine; the shell is $SHELL
  local_docker          inside its container (docker exec); the shell is bash, else sh
  slurm                 on its node, within its job (srun --overlap --jobid), in its
                        directory; the shell is $SHELL

COMMAND runs as given, without a shell between (wick exec H/trainer/0 sh -c 'echo $X'
for one). wick exits with the command's exit status. Ctrl-C goes to the command.

` + handleHelp + `
Exits 2 for a replica that does not exist, 1 for an app that has ended or a replica
that is not running.`,
		Example: `  wick exec train-kf2/trainer/0
  wick exec train-kf2/trainer/1 nvidia-smi
  wick exec local_docker://wick/train-kf2/trainer/0 -- env`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.runExec(argv[0], argv[1:])
		},
	}
	// What follows the replica is the command's: its flags are not wick's.
	cmd.Flags().SetInterspersed(false)
	return cmd
}

func (a *app) runExec(ident string, argv []string) error {
	id, err := a.resolveLogID(ident)
	if err != nil {
		return err
	}
	if id.Role == "" || len(id.Replicas) != 1 {
		return usagef("wick exec needs one replica: HANDLE/ROLE/ID (as wick status lists them)")
	}
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	c, err := a.execCommand(id.Handle, id.Role, id.Replicas[0], argv, isTerminalReader(a.env.Stdin))
	if err != nil {
		return err
	}
	c.SetStdin(a.env.Stdin)
	c.SetStdout(a.env.Stdout)
	c.SetStderr(a.env.Stderr)
	// Ctrl-C and Ctrl-\ are the command's (the terminal sends them to it too, or to
	// the container's terminal): wick waits for its end.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	err = c.Run()
	var exit *sched.ExitError
	if errors.As(err, &exit) {
		return exitError{code: exit.Code}
	}
	return err
}

// execCommand prepares argv (a shell when empty) in the replica's place; tty says
// whether the caller's stdin is a terminal.
func (a *app) execCommand(h spec.Handle, role string, k int, argv []string, tty bool) (sched.Command, error) {
	return a.runner().Exec(a.ctx, h, role, k, sched.ExecRequest{Argv: argv, Shell: a.env.Getenv("SHELL"), TTY: tty})
}

// isTerminalReader reports whether r is a terminal.
func isTerminalReader(r any) bool {
	f, ok := r.(*os.File)
	return ok && IsTerminal(f)
}
