package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/engine/pystack"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/render"
)

// stackTimeout bounds the sampling of every process of an app (they are sampled at
// once): gdb reads a torch process's libraries' symbols in tens of seconds on a busy
// machine.
const stackTimeout = 90 * time.Second

func (a *app) stackCmd() *cobra.Command {
	var full, asJSON bool
	cmd := &cobra.Command{
		Use:               "stack HANDLE[/ROLE[/IDS]]",
		ValidArgsFunction: a.completeHandles,
		Short:             "Dump the Python stack of every rank of a running app, grouped by where they are",
		Long: `Dump the Python stack of every process of a running app's replicas at once (every
worker of a torchrun node, named by its global rank) and group those that are at the
same place: what a hung job's ranks are doing.

    ranks 0,2,3: all_reduce in distributed_c10d.py:1541
    rank 1: slow_io in hang.py:23

--full adds each process's whole stack, innermost frame first. The sampler is py-spy
where it is installed, else gdb with CPython's gdb extension (Debian: apt-get install
gdb python3-dbg); a missing one is named in one line. Local apps (local_cwd,
local_dir) only, for now.

` + handleHelp,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.runStack(argv[0], full, asJSON)
		},
	}
	cmd.Flags().BoolVar(&full, "full", false, "print each process's whole stack too")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the stacks as JSON")
	return cmd
}

func (a *app) runStack(ident string, full, asJSON bool) error {
	id, err := a.resolveLogID(ident)
	if err != nil {
		return err
	}
	if s := id.Handle.Scheduler; s != "local_cwd" && s != "local_dir" {
		return fmt.Errorf("wick stack reads local apps only for now (local_cwd, local_dir), not %s", s)
	}
	tool, err := pystack.Find()
	if err != nil {
		return err
	}
	st, err := a.runner().Status(a.ctx, id.Handle)
	if err != nil {
		return err
	}
	refs, err := selectReplicas(id, st, nil)
	if err != nil {
		return err
	}
	targets := stackTargets(st, refs)
	if len(targets) == 0 {
		return errors.New(id.Handle.String() + " has no running Python process to dump")
	}
	ctx, cancel := context.WithTimeout(a.ctx, stackTimeout)
	defer cancel()
	dumps := pystack.Sample(ctx, tool, targets)
	groups := pystack.GroupByTop(dumps)
	if asJSON {
		return writeJSON(a.env.Stdout, dumps)
	}
	for _, g := range groups {
		fmt.Fprintf(a.env.Stdout, "%s: %s\n", render.Escape(pystack.Label(g.Labels)), render.Escape(g.Top))
	}
	if full {
		for _, d := range dumps {
			fmt.Fprintf(a.env.Stdout, "\n%s (pid %d):\n", render.Escape(d.Label), d.PID)
			for _, f := range d.Frames {
				fmt.Fprintf(a.env.Stdout, "  %s\n", render.Escape(f.String()))
			}
		}
	}
	return nil
}

// stackTargets are the Python processes of the running replicas refs names: a
// torchrun node's workers, as "rank N" (their own children, DataLoader workers, as
// "rank N pid P"), a plain replica's Python processes as "ROLE/K" ("ROLE/K pid P"
// after the first).
func stackTargets(st *spec.AppStatus, refs []replicaRef) []pystack.Target {
	want := map[replicaRef]bool{}
	for _, r := range refs {
		want[r] = true
	}
	var out []pystack.Target
	for _, role := range st.Roles {
		for _, r := range role.Replicas {
			if !want[replicaRef{role.Role, r.ID}] || r.State != spec.Running || r.PID <= 0 {
				continue
			}
			name := role.Role + "/" + strconv.Itoa(r.ID)
			seen := map[string]bool{}
			pids := pystack.Pythons(r.PID)
			workers := false
			for _, pid := range pids {
				workers = workers || pystack.RankOf(pid) >= 0
			}
			for _, pid := range pids {
				label := name
				if workers {
					rank := pystack.RankOf(pid)
					if rank < 0 {
						continue // torchrun's agent
					}
					label = "rank " + strconv.Itoa(rank)
				}
				if seen[label] {
					label += " pid " + strconv.Itoa(pid)
				}
				seen[strings.SplitN(label, " pid ", 2)[0]] = true
				out = append(out, pystack.Target{PID: pid, Label: label})
			}
		}
	}
	return out
}
