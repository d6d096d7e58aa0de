package cli

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/engine/pystack"
	"github.com/wick-dev/wick/engine/sched"
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
gdb python3-dbg); a missing one is named in one line. Local apps are sampled from this
machine; local_docker ones too (their containers' processes, by their host pids: the
Engine must be this machine's); Slurm ones on their nodes, within their jobs (srun
--overlap, as wick exec), by wick itself there: its binary at the same path where the
node has it, else copied to the node's /tmp with sbcast; failing both, the node's
sampler, with a warning saying why.

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
	if s := id.Handle.Scheduler; s == "slurm" {
		return a.runSlurmStack(id, full, asJSON)
	} else if s != "local_cwd" && s != "local_dir" && s != "local_docker" {
		return fmt.Errorf("wick stack reads local, local_docker and slurm apps, not %s", s)
	}
	tool, err := pystack.Find()
	if err != nil {
		return err
	}
	st, err := a.runner().Status(a.ctx, id.Handle)
	if err != nil {
		return err
	}
	// A container's processes, read from this machine: their host pids.
	pids, err := a.runner().HostPIDs(a.ctx, id.Handle)
	if err != nil {
		return err
	}
	for i := range st.Roles {
		for j := range st.Roles[i].Replicas {
			rep := &st.Roles[i].Replicas[j]
			if pid, ok := pids[sched.ReplicaKey{Role: st.Roles[i].Role, Replica: rep.ID}]; ok {
				rep.PID = pid
			}
		}
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
	return a.printStacks(pystack.Sample(ctx, tool, targets), full, asJSON)
}

// printStacks prints dumps grouped by their innermost frame, then (full) each one's
// stack; or all of them as JSON.
func (a *app) printStacks(dumps []pystack.Dump, full, asJSON bool) error {
	if asJSON {
		return writeJSON(a.env.Stdout, dumps)
	}
	for _, g := range pystack.GroupByTop(dumps) {
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

// maxNodeStack bounds what is read of the sampling of one Slurm replica's processes.
const maxNodeStack = 4 << 20

// runSlurmStack reads the stacks of the Python processes of a Slurm app's running
// replicas on their nodes, all replicas at once: wick's own reader there
// (slurmNodeStacks).
func (a *app) runSlurmStack(id spec.LogID, full, asJSON bool) error {
	st, err := a.runner().Status(a.ctx, id.Handle)
	if err != nil {
		return err
	}
	refs, err := selectReplicas(id, st, nil)
	if err != nil {
		return err
	}
	running := map[replicaRef]bool{}
	for _, role := range st.Roles {
		for _, r := range role.Replicas {
			running[replicaRef{role.Role, r.ID}] = r.State == spec.Running
		}
	}
	ctx, cancel := context.WithTimeout(a.ctx, stackTimeout)
	defer cancel()
	type result struct {
		ref   replicaRef
		dumps []pystack.NodeDump
		err   error
		warn  string
	}
	results := make([]result, 0, len(refs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, ref := range refs {
		if !running[ref] {
			continue
		}
		wg.Go(func() {
			dumps, warn, err := a.slurmNodeStacks(ctx, id.Handle, ref)
			mu.Lock()
			results = append(results, result{ref, dumps, err, warn})
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(results) == 0 {
		return errors.New(id.Handle.String() + " has no running replica to dump")
	}
	slices.SortFunc(results, func(x, y result) int {
		return cmp.Or(cmp.Compare(x.ref.role, y.ref.role), cmp.Compare(x.ref.k, y.ref.k))
	})
	var dumps []pystack.Dump
	for _, r := range results {
		if r.warn != "" {
			fmt.Fprintf(a.env.Stderr, "wick: warning: %s\n", render.Escape(r.warn))
		}
		name := r.ref.role + "/" + strconv.Itoa(r.ref.k)
		if r.err != nil && len(r.dumps) == 0 {
			dumps = append(dumps, pystack.Dump{Target: pystack.Target{Label: name}, Err: r.err})
			continue
		}
		dumps = append(dumps, nodeDumps(name, r.dumps)...)
	}
	if len(dumps) == 0 {
		return errors.New(id.Handle.String() + " has no running Python process to dump")
	}
	return a.printStacks(dumps, full, asJSON)
}

// nodeVerbTimeout is how long wick's reader on a node may take (pystack.NodeVerb's
// --timeout): within stackTimeout, less the step's launch. It reads CPython 3.11 in
// milliseconds; the rest is for the node's gdb or py-spy, for another Python.
const nodeVerbTimeout = stackTimeout * 2 / 3

// slurmNodeStacks reads the stacks of replica ref's Python processes on its node with
// wick's own reader there (pystack.NodeVerb, through Runner.RunSelf: srun --overlap in
// the replica's job, wick's binary at its path there or sbcast to the node). Where wick
// cannot run there, the node's py-spy or gdb sample them (pystack.NodeScript, through
// wick exec's step), and warn says why.
func (a *app) slurmNodeStacks(ctx context.Context, h spec.Handle, ref replicaRef) (dumps []pystack.NodeDump, warn string, err error) {
	args := []string{pystack.NodeVerb, "--timeout", nodeVerbTimeout.String(), h.AppID, ref.role, strconv.Itoa(ref.k)}
	out, err := a.runner().RunSelf(ctx, h, ref.role, ref.k, args)
	if err == nil {
		dumps, err = pystack.ReadNode(out)
		return dumps, "", err
	}
	if !errors.Is(err, sched.ErrNoSelf) {
		return nil, "", err
	}
	warn = err.Error() + ": sampled with the node's py-spy or gdb instead (slower)"
	c, err := a.runner().Exec(ctx, h, ref.role, ref.k, sched.ExecRequest{Argv: []string{"/bin/sh", "-c", pystack.NodeScript}})
	if err != nil {
		return nil, warn, err
	}
	var o, errb bytes.Buffer
	c.SetStdout(&limitedBuffer{&o, maxNodeStack})
	c.SetStderr(&limitedBuffer{&errb, 64 << 10})
	if err = c.Run(); err != nil {
		if msg := strings.TrimSpace(errb.String()); msg != "" {
			err = errors.New(render.FirstLine(msg))
		}
	}
	return pystack.ParseNode(o.Bytes()), warn, err
}

// nodeDumps labels the processes of one replica sampled on its node as stackTargets
// labels a local replica's: a torchrun node's workers by rank (its agent left out),
// else the replica's name.
func nodeDumps(name string, nds []pystack.NodeDump) []pystack.Dump {
	slices.SortFunc(nds, func(x, y pystack.NodeDump) int { return cmp.Compare(x.PID, y.PID) })
	workers := slices.ContainsFunc(nds, func(d pystack.NodeDump) bool { return d.Rank >= 0 })
	seen := map[string]bool{}
	var out []pystack.Dump
	for _, d := range nds {
		label := name
		if workers {
			if d.Rank < 0 {
				continue // torchrun's agent
			}
			label = "rank " + strconv.Itoa(d.Rank)
		}
		if seen[label] {
			label += " pid " + strconv.Itoa(d.PID)
		} else {
			seen[label] = true
		}
		out = append(out, pystack.Dump{Target: pystack.Target{PID: d.PID, Label: label}, Frames: d.Frames, Err: d.Err, Tool: d.Tool})
	}
	return out
}

// limitedBuffer keeps at most n bytes of what is written to it.
type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
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
