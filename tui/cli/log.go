package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/render"
)

type logFlags struct {
	regex      string
	follow     bool
	streams    string
	since      string
	until      string
	timestamps bool
	asJSON     bool
	noPrefix   bool
	lines      int
	ranks      []int
	raw        bool
}

func (a *app) logCmd() *cobra.Command {
	var f logFlags
	cmd := &cobra.Command{
		Use:               "log IDENTIFIER",
		ValidArgsFunction: a.completeHandles,
		Short:             "Print (or follow) the logs of an app, a role, or some replicas",
		Long: `Print the logs of an app's replicas, each line prefixed with role/replica.

IDENTIFIER is SCHEDULER://SESSION/APP_ID[/ROLE[/IDS]], e.g.
  local_cwd://wick/train-kf2vb0x9qwm3              every replica of every role
  local_cwd://wick/train-kf2vb0x9qwm3/trainer      every replica of one role
  local_cwd://wick/train-kf2vb0x9qwm3/trainer/0,2  replicas 0 and 2
  sweep-fn3lj1lt                                   each app of a sweep in turn (not -f)

--since and --until take a time (RFC 3339, e.g. 2026-11-21T13:05:00Z, or 15:04:05 today)
or a duration back from now (e.g. 10m). A window that cannot hold a line (a negative
duration, a --since in the future, --until not after --since) is an error; a window
that merely holds no line prints a warning. With -t (or -f) the logs are followed
until the app ends.

A line longer than 1 MiB is printed whole, as stored; --json gives its first 1 MiB
with "cut": true and its "size" in bytes, and a terminal its start and its size.

On a terminal, lines keep their colors (SGR) but every other escape sequence (titles,
clipboard writes, cursor moves, screen clears, report requests) is dropped, and other
control characters show as U+FFFD; --raw, or a pipe, gives the bytes as stored.

--rank N prints what global rank N of a torchrun role (dist.ddp run with --tee 1 or 3)
wrote, from torchrun's "[local_rank]:" prefixes; the node's own lines are left out.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if sw, apps, ok, err := a.sweepOf(argv[0]); ok || err != nil {
				if err != nil {
					return err
				}
				return a.sweepLog(sw, apps, f)
			}
			return a.runLog(argv[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.regex, "regex", "", "print only lines matching this regular expression")
	fl.BoolVarP(&f.follow, "tail", "t", false, "follow the logs until the app ends")
	fl.BoolVarP(&f.follow, "follow", "f", false, "same as --tail")
	fl.BoolVar(&f.raw, "raw", false, "on a terminal too, print the bytes as stored, escape sequences included (a pipe always gets them)")
	fl.StringVar(&f.streams, "streams", "combined", "stdout, stderr or combined")
	fl.StringVar(&f.since, "since", "", "only lines at or after this time or duration ago")
	fl.StringVar(&f.until, "until", "", "only lines before this time or duration ago")
	fl.BoolVar(&f.timestamps, "timestamps", false, "prefix each line with the time it was read")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object per line (time, stream, role, replica, text)")
	fl.BoolVar(&f.noPrefix, "no-prefix", false, "print lines without the role/replica prefix")
	fl.IntVarP(&f.lines, "lines", "n", 0, "start with only the last N lines of each replica")
	fl.IntSliceVar(&f.ranks, "rank", nil, "torchrun roles: print only the lines of these global ranks (e.g. 3 or 0,2)")
	return cmd
}

func (a *app) runLog(ident string, f logFlags) error {
	id, err := a.resolveLogID(ident)
	if err != nil {
		return err
	}
	opts, err := f.options(time.Now())
	if err != nil {
		return err
	}
	r := a.runner()
	d, err := describeFor(a.ctx, r, id, f)
	if err != nil {
		return err
	}
	if err := errNeverRan(id.Handle, d.Status); err != nil {
		return err
	}
	if st := d.Status; st.State == spec.Pending && st.Msg != "" {
		// A job its scheduler holds back (Slurm: no resources, a dependency) has no
		// line yet: say why, rather than print nothing, or follow in silence a job
		// that may never start.
		then := "no logs yet"
		if opts.Follow {
			then = "following its logs once it starts"
		}
		why := strings.TrimPrefix(oneLine(st.Msg), "pending: ")
		fmt.Fprintf(a.env.Stderr, "wick: %s is PENDING (%s): %s\n", id.Handle, render.Escape(why), then)
	}
	refs, err := selectReplicas(id, &d.Status, d.App)
	if err != nil {
		return err
	}
	a.follow(opts.Follow)
	var out io.Writer = a.env.Stdout
	if !f.raw && !f.asJSON {
		v := &validUTF8{w: a.env.Stdout} // invalid UTF-8 as U+FFFD, as TorchX prints it
		defer v.flush()                  // after w's Flush
		out = v
	}
	w := bufio.NewWriterSize(out, 64<<10)
	defer w.Flush()
	p := &linePrinter{w: w, st: a.out(), timestamps: f.timestamps, asJSON: f.asJSON, prefix: !f.noPrefix, index: prefixIndex(refs),
		sanitize: a.env.StdoutTTY && !f.raw && !f.asJSON}
	emit, idle := p.print, w.Flush
	named := p.printNamed
	if opts.Follow && a.env.StdoutTTY && !f.asJSON {
		lp := newLivePrinter(p, w, out)
		opts.Pending = true
		emit, idle = lp.emit, lp.idle
		named = func(name string, l sched.Line) error { lp.erase(); return p.printNamed(name, l) }
		defer lp.finish()
	}
	retried := false
	if !f.asJSON {
		emit, retried = attemptDividers(&d.Status, refs, emit)
	}
	var rf *rankFilter
	ctx, stopFollow := a.ctx, func() os.Signal { return nil }
	if len(f.ranks) > 0 {
		// While following, the status is asked again until every node's group rank
		// is known; the asking ends with the command.
		rctx, cancel := context.WithCancel(a.ctx)
		defer cancel()
		var fresh <-chan *sched.Description
		if opts.Follow {
			fresh = refreshRanks(rctx, r, id.Handle, d)
			// Ctrl-C or SIGTERM ends the follow, not before the lines held for their
			// node's rank are printed.
			ctx, stopFollow = catchInterrupt(a.ctx)
			defer stopFollow()
		}
		rf = newRankFilter(d, f.ranks, fresh, emit, named)
		emit, idle = rf.line, rf.idle(idle)
	}
	// Every line printed as stored: the file is copied (one replica), or the replicas
	// are merged a run of lines at a time when their iterators can (sched.RunReader).
	var asStored *linePrinter
	if f.plain(opts) && len(f.ranks) == 0 && !p.sanitize && !retried {
		asStored = p
	}
	if len(refs) == 1 && asStored != nil {
		rc, err := r.RawLog(a.ctx, id.Handle, refs[0].role, refs[0].k, opts.Streams)
		if err == nil {
			defer rc.Close()
			return p.copyRaw(rc, refs[0])
		}
		if !errors.Is(err, runner.ErrNoRawLog) {
			return err
		}
	}
	emit, warn := a.emptyWindowWarning(ident, f, opts, emit)
	defer warn()
	err = a.streamLogsRuns(ctx, id.Handle, refs, opts, emit, idle, asStored)
	if rf != nil {
		err = a.endRanks(rf, r, id.Handle, err, stopFollow())
	}
	if err == nil && opts.Follow {
		err = a.followEnded(r, id.Handle, d.Status.State)
	}
	return err
}

// followEnded says how the app of a follow that ended of itself ended, when that is
// not its own end: deleted under the follower (an error: its logs are gone), or
// cancelled (a line on stderr). An app that had ended when the follow began (was) is
// not asked again: its end was read then.
func (a *app) followEnded(r *runner.Runner, h spec.Handle, was spec.AppState) error {
	if was.Terminal() {
		return nil
	}
	ctx, cancel := context.WithTimeout(a.ctx, followEndAsk)
	defer cancel()
	d, err := r.Describe(ctx, h)
	switch {
	case errors.Is(err, sched.ErrNotFound):
		return exitError{code: ExitFailure, err: fmt.Errorf("%s was deleted while its logs were followed: they end here", h)}
	case err == nil && d.Status.State == spec.Cancelled:
		fmt.Fprintf(a.env.Stderr, "wick: %s was cancelled\n", h)
	}
	return nil
}

// followEndAsk bounds the question followEnded asks: the follow has ended already.
const followEndAsk = 10 * time.Second

// describeFor describes the app of id for its log: when id names replicas (and no
// --rank asks for every node's ranks), those replicas only, so that the log of one
// replica of a thousand-replica app costs about one replica's reading, not the app's
// (runner.DescribeReplicas).
func describeFor(ctx context.Context, r *runner.Runner, id spec.LogID, f logFlags) (*sched.Description, error) {
	if id.Role == "" || len(id.Replicas) == 0 || len(f.ranks) > 0 {
		return r.Describe(ctx, id.Handle)
	}
	refs := make([]sched.ReplicaRef, len(id.Replicas))
	for i, k := range id.Replicas {
		refs[i] = sched.ReplicaRef{Role: id.Role, Replica: k}
	}
	d, err := r.DescribeReplicas(ctx, id.Handle, refs)
	if err == nil && neverStarted(d.Status) {
		// Those replicas never started: whether any of the app's did (errNeverRan)
		// is the whole app's to say.
		return r.Describe(ctx, id.Handle)
	}
	return d, err
}

// endRanks ends the rank filter of a `wick log --rank` that ended with err, or was
// interrupted by sig (nil if not): however it ended, the lines it still holds are
// printed, named by node if their rank is still not known (see rankFilter.finish).
// An interrupted follow ends as it would have without them (see interrupted).
func (a *app) endRanks(rf *rankFilter, r *runner.Runner, h spec.Handle, err error, sig os.Signal) error {
	var final *sched.Description
	if sig == nil && len(rf.held) > 0 {
		// Its latest status may know more ranks; without it, the lines go by node.
		final, _ = r.Describe(a.ctx, h)
	}
	if ferr := rf.finish(final, a.env.Stderr, h); err == nil {
		err = ferr
	}
	// Said of an interrupted follow too: Ctrl-C of one that printed nothing
	// because no line could be a rank's was silent.
	if (err == nil || sig != nil) && !rf.seen {
		fmt.Fprintf(a.env.Stderr, "wick: warning: no line of %s carries torchrun's rank prefix \"[N]:\" (run dist.ddp with --tee 1 to tell ranks apart)\n", h)
	}
	if s, ok := sig.(syscall.Signal); ok {
		return interrupted{s}
	}
	return err
}
