package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/ranks"
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

// maxUnixSeconds is the largest unix time --since and --until take: 2262, where Go's
// nanosecond times end.
const maxUnixSeconds = math.MaxInt64/1_000_000_000 - 1

// parseWhen reads a time for --since/--until: RFC 3339, a clock time today, a unix time,
// or a duration before now.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q is a negative duration: a duration counts back from now (%s means %s ago)", s, strings.TrimPrefix(s, "-"), strings.TrimPrefix(s, "-"))
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", time.DateOnly} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	for _, layout := range []string{"15:04:05", "15:04"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			y, m, d := now.Date()
			return time.Date(y, m, d, t.Hour(), t.Minute(), t.Second(), 0, time.Local), nil
		}
	}
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		// Beyond these, nanoseconds overflow int64 and the time wraps into the past.
		if !(secs >= 0 && secs <= maxUnixSeconds) {
			return time.Time{}, fmt.Errorf("unix time %q is out of range (0 to %d)", s, maxUnixSeconds)
		}
		return time.Unix(0, int64(secs*1e9)), nil
	}
	return time.Time{}, fmt.Errorf("cannot read time %q (want RFC 3339, HH:MM:SS, unix seconds or a duration like 10m)", s)
}

func (f logFlags) options(now time.Time) (sched.LogOptions, error) {
	var o sched.LogOptions
	var err error
	if f.regex != "" {
		if o.Regex, err = regexp.Compile(f.regex); err != nil {
			return o, usagef("--regex: %v", err)
		}
	}
	if o.Streams, err = sched.ParseStream(f.streams); err != nil {
		return o, usagef("--streams: %v", err)
	}
	if o.Since, err = parseWhen(f.since, now); err != nil {
		return o, usagef("--since: %v", err)
	}
	if o.Until, err = parseWhen(f.until, now); err != nil {
		return o, usagef("--until: %v", err)
	}
	// A window that cannot hold a line is a mistake, not an empty log.
	if o.Since.After(now) {
		return o, usagef("--since %s is in the future (%s)", f.since, o.Since.Local().Format(time.DateTime))
	}
	if !o.Since.IsZero() && !o.Until.IsZero() && !o.Until.After(o.Since) {
		return o, usagef("--since %s --until %s holds nothing: --until must come after --since", f.since, f.until)
	}
	if f.lines < 0 {
		return o, usagef("--lines must not be negative")
	}
	for _, r := range f.ranks {
		if r < 0 {
			return o, usagef("--rank %d: a rank is not negative", r)
		}
	}
	o.Follow = f.follow
	o.Tail = f.lines
	return o, nil
}

// replicaRef is one replica whose logs are printed.
type replicaRef struct {
	role string
	k    int
}

// selectReplicas resolves a log identifier against the app's roles.
func selectReplicas(id spec.LogID, st *spec.AppStatus, app *spec.AppDef) ([]replicaRef, error) {
	counts := map[string]int{}
	var order []string
	add := func(role string, n int) {
		if _, ok := counts[role]; !ok {
			order = append(order, role)
		}
		counts[role] = max(counts[role], n)
	}
	if app != nil {
		for _, r := range app.Roles {
			add(r.Name, r.NumReplicas)
		}
	}
	for _, r := range st.Roles {
		n := 0
		for _, rep := range r.Replicas {
			n = max(n, rep.ID+1)
		}
		add(r.Role, n)
	}
	var refs []replicaRef
	for _, role := range order {
		if id.Role != "" && role != id.Role {
			continue
		}
		if len(id.Replicas) == 0 {
			for k := range counts[role] {
				refs = append(refs, replicaRef{role, k})
			}
			continue
		}
		for _, k := range id.Replicas {
			if k >= counts[role] {
				return nil, fmt.Errorf("role %q of %s has no replica %d (it has %d)", role, id.Handle, k, counts[role])
			}
			refs = append(refs, replicaRef{role, k})
		}
	}
	if id.Role != "" && len(refs) == 0 {
		return nil, fmt.Errorf("no role %q in %s%s", id.Role, id.Handle, spec.DidYouMean(id.Role, order))
	}
	return refs, nil
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

// interrupted is the error of a command a signal ended after it caught the signal
// to finish what it was writing: Main then ends wick by the same signal, so that its
// exit status is the one the signal's default action gives (a shell's 130 for SIGINT).
type interrupted struct{ sig syscall.Signal }

func (e interrupted) Error() string { return "interrupted by " + unix.SignalName(e.sig) }

// catchInterrupt returns a context that SIGINT or SIGTERM cancels, and stop, which
// ends the catching and returns the signal that came, or nil. A signal the command
// was started ignoring (a background job of a script) is left ignored, and a second
// one, once the first was caught, ends wick at once, as before it was caught.
func catchInterrupt(parent context.Context) (context.Context, func() os.Signal) {
	ctx, cancel := context.WithCancel(parent)
	var wanted []os.Signal
	for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGTERM} {
		if !signal.Ignored(s) {
			wanted = append(wanted, s)
		}
	}
	if len(wanted) == 0 {
		return ctx, func() os.Signal { cancel(); return nil }
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, wanted...)
	var got os.Signal
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case got = <-sigs:
			signal.Stop(sigs)
			cancel()
		case <-ctx.Done():
		}
	}()
	var once sync.Once
	return ctx, func() os.Signal {
		once.Do(func() {
			cancel()
			<-done
			signal.Stop(sigs)
			if got == nil {
				select {
				case got = <-sigs: // came as the follow ended for another reason
				default:
				}
			}
		})
		return got
	}
}

// emptyWindowWarning counts the lines emit is given, when --since or --until is set;
// warn then says so if there were none: the times may be off, not the logs.
func (a *app) emptyWindowWarning(ident string, f logFlags, opts sched.LogOptions, emit func(sched.Line) error) (counted func(sched.Line) error, warn func()) {
	if opts.Since.IsZero() && opts.Until.IsZero() {
		return emit, func() {}
	}
	n := 0
	return func(l sched.Line) error { n++; return emit(l) }, func() {
		if n == 0 && a.ctx.Err() == nil {
			fmt.Fprintf(a.env.Stderr, "wick: warning: no line of %s in the window%s\n", render.Escape(ident), window(f, opts))
		}
	}
}

// attemptDividers puts a divider line before the first line of each later attempt of
// a replica that was restarted, as the wall does: "── attempt 2, previous exit 3 ──".
// It reports whether any selected replica was restarted (the lines must then be read
// one by one, not copied from the file).
func attemptDividers(st *spec.AppStatus, refs []replicaRef, emit func(sched.Line) error) (func(sched.Line) error, bool) {
	reps := map[replicaRef]*spec.ReplicaStatus{}
	retried := false
	for i := range st.Roles {
		for j := range st.Roles[i].Replicas {
			r := &st.Roles[i].Replicas[j]
			ref := replicaRef{r.Role, r.ID}
			if !slices.Contains(refs, ref) {
				continue
			}
			reps[ref] = r
			retried = retried || r.Restarts > 0 || len(r.Attempts) > 0
		}
	}
	if !retried {
		return emit, false
	}
	last := map[replicaRef]int{}
	return func(l sched.Line) error {
		ref := replicaRef{l.Role, l.Replica}
		if l.Attempt > last[ref] {
			last[ref] = l.Attempt
			text := fmt.Sprintf("── attempt %d", l.Attempt+1)
			if r := reps[ref]; r != nil {
				if a, ok := r.Attempt(l.Attempt - 1); ok && a.ExitCode != nil {
					text += fmt.Sprintf(", previous exit %d", *a.ExitCode)
				}
			}
			div := sched.Line{Role: l.Role, Replica: l.Replica, Stream: l.Stream, Time: l.Time, Attempt: l.Attempt, Text: text + " ──"}
			if err := emit(div); err != nil {
				return err
			}
		}
		return emit(l)
	}, true
}

// window describes --since and --until for a message.
func window(f logFlags, o sched.LogOptions) string {
	s := ""
	if !o.Since.IsZero() {
		s += fmt.Sprintf(" --since %s (%s)", f.since, o.Since.Local().Format(time.DateTime))
	}
	if !o.Until.IsZero() {
		s += fmt.Sprintf(" --until %s (%s)", f.until, o.Until.Local().Format(time.DateTime))
	}
	return s
}

// plain reports whether the whole log is printed as stored: no filter, no time, no
// following, no JSON. The raw file can then be copied instead of iterated line by line.
func (f logFlags) plain(o sched.LogOptions) bool {
	return o.Regex == nil && o.Since.IsZero() && o.Until.IsZero() && !o.Follow && o.Tail == 0 && !f.timestamps && !f.asJSON
}

func prefixIndex(refs []replicaRef) map[string]int {
	m := map[string]int{}
	for i, r := range refs {
		m[r.role+"/"+strconv.Itoa(r.k)] = i
	}
	return m
}

// streamLogs opens one iterator per replica and hands every line to emit, in time order
// across replicas. idle is called whenever no line is ready, so that buffered output
// reaches the user promptly while following.
func (a *app) streamLogs(ctx context.Context, h spec.Handle, refs []replicaRef, opts sched.LogOptions, emit func(sched.Line) error, idle func() error) error {
	return a.streamLogsRuns(ctx, h, refs, opts, emit, idle, nil)
}

// streamLogsRuns is streamLogs, which, given runs, prints the lines through it a run at
// a time when every iterator can give runs (emit must then be runs.print).
func (a *app) streamLogsRuns(ctx context.Context, h spec.Handle, refs []replicaRef, opts sched.LogOptions, emit func(sched.Line) error, idle func() error, runs *linePrinter) error {
	srefs := make([]sched.ReplicaRef, len(refs))
	for i, ref := range refs {
		srefs[i] = sched.ReplicaRef{Role: ref.role, Replica: ref.k}
	}
	its, err := a.runner().LogLinesOf(ctx, h, srefs, opts)
	if err != nil {
		return err
	}
	if runs != nil {
		if rrs, ok := runReaders(its); ok {
			defer func() {
				for _, it := range its {
					it.Close()
				}
			}()
			return runs.mergeRuns(ctx, its, rrs)
		}
	}
	merged := logs.Merge(its...)
	defer merged.Close()
	for {
		line, err := merged.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := emit(line); err != nil {
			return err
		}
		if !merged.Ready() {
			if err := idle(); err != nil {
				return err
			}
		}
	}
}

// runReaders returns its as sched.RunReaders, if every one is.
func runReaders(its []sched.LogIterator) ([]sched.RunReader, bool) {
	rrs := make([]sched.RunReader, len(its))
	for i, it := range its {
		rr, ok := it.(sched.RunReader)
		if !ok {
			return nil, false
		}
		rrs[i] = rr
	}
	return rrs, true
}

// mergeRuns prints the lines of its in time order, as printing the lines of their
// logs.Merge one by one does (lines of one time keep the order of the iterators), but
// a run of lines at a time: no Line per line, no goroutine per replica. The iterators
// with a run to give are kept in logs.Heads, Merge's own order: each run costs
// O(log n) for n replicas, not a look at every replica (1,024 replicas that each
// wrote one line at a time made that look most of the time).
func (p *linePrinter) mergeRuns(ctx context.Context, its []sched.LogIterator, rrs []sched.RunReader) error {
	type head struct {
		l    sched.Line
		line bool // a single line from Next, not a run
	}
	heads := make([]head, len(its))
	order := logs.NewHeads(len(its))
	// next reads the next run of iterator i into heads[i], and reports false at its end.
	next := func(i int) (bool, error) {
		l, ok, err := rrs[i].NextRun(ctx)
		if err == nil && !ok {
			l, err = its[i].Next(ctx)
		}
		switch {
		case errors.Is(err, io.EOF):
			heads[i] = head{}
			return false, nil
		case err != nil:
			return false, err
		}
		heads[i] = head{l: l, line: !ok}
		return true, nil
	}
	for i := range heads {
		more, err := next(i)
		if err != nil {
			return err
		}
		if more {
			order.Push(i, heads[i].l.Time)
		}
	}
	for order.Len() > 0 {
		best := order.First()
		h := &heads[best]
		var err error
		if h.line {
			err = p.print(h.l)
		} else {
			err = p.writeRun(p.prefixOf(h.l.Role, h.l.Replica), h.l.Text)
		}
		if err != nil {
			return err
		}
		more, err := next(best)
		switch {
		case err != nil:
			return err
		case more:
			order.Advance(heads[best].l.Time)
		default:
			order.Pop()
		}
	}
	return nil
}

// writeRun writes the lines of a run (each ended by a newline but a partial last one)
// as writeText writes them one by one, building the output in one buffer.
func (p *linePrinter) writeRun(prefix, text string) error {
	out := p.scratch[:0]
	for len(text) > 0 {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		if prefix != "" && strings.IndexByte(line, '\r') >= 0 {
			p.w.Write(out)
			out = out[:0]
			p.writeText(prefix, line)
			continue
		}
		out = append(out, prefix...)
		out = append(out, line...)
		out = append(out, '\n')
	}
	_, err := p.w.Write(out)
	p.scratch = out[:0]
	return err
}

// linePrinter writes log lines as `role/k text`, with optional timestamps, or as JSON.
type linePrinter struct {
	w          *bufio.Writer
	st         interface{ Prefix(int, string) string }
	timestamps bool
	asJSON     bool
	prefix     bool
	index      map[string]int
	prefixes   map[replicaRef]string // styled "role/k " by replica, made once
	scratch    []byte                // writeRun's output buffer, reused
	// sanitize drops the escape sequences other than SGR (for a terminal).
	sanitize bool
}

// prefixOf returns the styled "role/k " prefix of a replica, or "".
func (p *linePrinter) prefixOf(role string, k int) string {
	if !p.prefix {
		return ""
	}
	ref := replicaRef{role, k}
	if s, ok := p.prefixes[ref]; ok {
		return s
	}
	if p.prefixes == nil {
		p.prefixes = map[replicaRef]string{}
	}
	name := role + "/" + strconv.Itoa(k)
	// The role name comes from the app's state file: escaped as every name is, so that a
	// tampered one cannot drive the terminal (render.Escape).
	s := p.st.Prefix(p.index[name], render.Escape(name)) + " "
	p.prefixes[ref] = s
	return s
}

// rawBlock is the read size of copyRaw.
const rawBlock = 256 << 10

// copyRaw prints a stored log file: as it is when there is no prefix, and otherwise
// with the prefix before each line, building the output in blocks rather than going
// through Line values. The output is what printing the file's lines one by one gives.
func (p *linePrinter) copyRaw(r io.Reader, ref replicaRef) error {
	prefix := p.prefixOf(ref.role, ref.k)
	if prefix == "" {
		return p.copyAsIs(r)
	}
	buf := make([]byte, rawBlock)
	out := make([]byte, 0, 2*rawBlock)
	var carry []byte     // a line begun in an earlier block
	var long *lineStream // a line longer than rawBlock, written as it comes
	for {
		n, err := r.Read(buf)
		block := buf[:n]
		// Progress bars need the per-line treatment of writeText.
		plain := bytes.IndexByte(block, '\r') < 0
		for len(block) > 0 {
			i := bytes.IndexByte(block, '\n')
			if long != nil {
				end := len(block)
				if i >= 0 {
					end = i
				}
				long.write(block[:end])
				if i < 0 {
					break
				}
				long.end()
				long, block = nil, block[i+1:]
				continue
			}
			if i < 0 {
				if len(carry)+len(block) > rawBlock {
					// Memory stays bounded whatever the line's length.
					p.w.Write(out)
					out = out[:0]
					long = p.streamLine(prefix)
					long.write(carry)
					long.write(block)
					carry = carry[:0]
					break
				}
				carry = append(carry, block...)
				break
			}
			line := block[:i]
			block = block[i+1:]
			joined := len(carry) > 0
			if joined {
				line = append(carry, line...)
				carry = carry[:0]
			}
			// A line begun in an earlier block may hold a \r that this block has not.
			if (!plain || joined) && bytes.IndexByte(line, '\r') >= 0 {
				p.w.Write(out)
				out = out[:0]
				p.writeText(prefix, string(line))
				continue
			}
			// Copy by hand: append's checks cost a fifth of the time here.
			need := len(prefix) + len(line) + 1
			if cap(out)-len(out) < need {
				p.w.Write(out)
				out = out[:0]
				if cap(out) < need {
					out = make([]byte, 0, need)
				}
			}
			n := len(out)
			out = out[:n+need]
			copy(out[n+copy(out[n:], prefix):], line)
			out[n+need-1] = '\n'
		}
		if len(out) >= rawBlock {
			p.w.Write(out)
			out = out[:0]
		}
		if err == io.EOF {
			p.w.Write(out)
			if long != nil {
				long.end()
			}
			if len(carry) > 0 {
				p.writeText(prefix, string(carry))
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// print writes one line: as JSON, or after its timestamp and prefix.
func (p *linePrinter) print(l sched.Line) error {
	if p.asJSON {
		b, err := json.Marshal(l)
		if err != nil {
			return err
		}
		p.w.Write(b)
		return p.w.WriteByte('\n')
	}
	prefix := p.prefixOf(l.Role, l.Replica)
	if p.timestamps {
		prefix = sched.Timestamp(l.Time) + " " + prefix
	}
	if p.sanitize {
		text := render.Sanitize(l.Text, 0)
		if l.Cut && !l.Pending {
			text += fmt.Sprintf(" … [line of %d bytes cut; --raw prints it whole]", l.Size)
		}
		return p.writeText(prefix, text)
	}
	if l.Full != nil {
		// A line too long to hold: its bytes as stored, a block at a time.
		ls := p.streamLine(prefix)
		buf := make([]byte, rawBlock)
		for {
			n, err := l.Full.Read(buf)
			ls.write(buf[:n])
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
		}
		return ls.end()
	}
	return p.writeText(prefix, l.Text)
}

// printNamed writes a line whose node's group rank is not known (see rankFilter),
// named by its node and local rank (role/replica:local, as `wick metrics` names it)
// whatever --no-prefix says: without the name it would pass for the asked rank's.
// JSON gives the line with the name as "node".
func (p *linePrinter) printNamed(name string, l sched.Line) error {
	if p.asJSON {
		b, err := json.Marshal(struct {
			sched.Line
			Node string `json:"node"`
		}{l, name})
		if err != nil {
			return err
		}
		p.w.Write(b)
		return p.w.WriteByte('\n')
	}
	prefix := render.Escape(name) + " "
	if p.timestamps {
		prefix = sched.Timestamp(l.Time) + " " + prefix
	}
	_, text, _ := ranks.Parse(l.Text) // the name has its local rank
	if p.sanitize {
		text = render.Sanitize(text, 0)
	}
	if l.Cut {
		text += fmt.Sprintf(" … [line of %d bytes cut]", l.Size)
	}
	return p.writeText(prefix, text)
}

// lineStream writes one line after its prefix as writeText does, a piece at a time,
// for lines too long to hold in memory.
type lineStream struct {
	p       *linePrinter
	prefix  string
	started bool // past the line's leading \r
	crs     int  // \r held back: the line's last one is dropped
}

// streamLine starts a line: its prefix is written at once.
func (p *linePrinter) streamLine(prefix string) *lineStream {
	p.w.WriteString(prefix)
	return &lineStream{p: p, prefix: prefix}
}

func (s *lineStream) write(b []byte) {
	if s.prefix == "" {
		s.p.w.Write(b)
		return
	}
	for len(b) > 0 {
		if !s.started {
			i := 0
			for i < len(b) && b[i] == '\r' {
				i++
			}
			b = b[i:]
			if len(b) == 0 {
				return
			}
			s.started = true
		}
		if b[0] == '\r' {
			s.crs++
			b = b[1:]
			continue
		}
		for ; s.crs > 0; s.crs-- {
			s.p.w.WriteByte('\r')
			s.p.w.WriteString(s.prefix)
		}
		i := bytes.IndexByte(b, '\r')
		if i < 0 {
			i = len(b)
		}
		s.p.w.Write(b[:i])
		b = b[i:]
	}
}

// end ends the line.
func (s *lineStream) end() error {
	for ; s.crs > 1; s.crs-- {
		s.p.w.WriteByte('\r')
		s.p.w.WriteString(s.prefix)
	}
	return s.p.w.WriteByte('\n')
}

// copyAsIs copies a log file unchanged, ending it with a newline if its last line has
// none, as printing its lines would.
func (p *linePrinter) copyAsIs(r io.Reader) error {
	buf := make([]byte, rawBlock)
	last := byte('\n')
	for {
		n, err := r.Read(buf)
		if n > 0 {
			p.w.Write(buf[:n])
			last = buf[n-1]
		}
		if err == io.EOF {
			if last != '\n' {
				p.w.WriteByte('\n')
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// writeText writes one line after its prefix.
func (p *linePrinter) writeText(prefix, text string) error {
	// Keep the prefix in place when a progress bar rewrites its line with \r; a
	// leading \r would only print the prefix twice.
	if prefix != "" && strings.Contains(text, "\r") {
		text = strings.TrimLeft(text, "\r")
		text = strings.ReplaceAll(strings.TrimSuffix(text, "\r"), "\r", "\r"+prefix)
	}
	p.w.WriteString(prefix)
	p.w.WriteString(text)
	return p.w.WriteByte('\n')
}
