// Package slurm is wick's slurm scheduler: an AppDef runs as one Slurm heterogeneous
// job submitted with sbatch, one job component per replica, each with its role's
// resources, and one srun over every component.
//
// The app's handle is slurm://SESSION/JOBID: the app id is the job id sbatch prints
// (Schedule sets it on the DryRunInfo; a dry run shows a placeholder). Components are
// named wick:SESSION:APP:ROLE:REPLICA, which is how list tells wick's jobs from the
// other jobs of the user.
//
// Every replica writes its stdout and stderr to its own files in the job directory
// (the job_dir run option, else the directory wick was started from), named as in
// TorchX: slurm-JOBID-ROLE-REPLICA.out and .err, plus slurm-JOBID-ROLE-REPLICA.exit
// holding its exit status once it ends (Slurm records one exit code for the whole
// heterogeneous job, not one per component) and slurm-JOBID-ROLE-REPLICA.error.json,
// its TORCHELASTIC_ERROR_FILE, and slurm-JOBID-ROLE-REPLICA.times, when the logs grew
// (lines' times). The batch script's own output is slurm-JOBID.out there.
// Retries are TorchX's: a failed job requeues itself while its restarts are fewer than
// the smallest max_retries of its roles, and srun stops the other replicas when one
// fails (--kill-on-bad-exit).
//
// At submit wick records the job under $WICK_HOME/slurm/jobs/JOBID.json: the AppDef,
// the run options, the job directory and the script. Describe asks scontrol while
// slurmctld holds the job, then sacct when accounting is enabled, and else answers
// from that record (the last status seen, never a made-up SUCCEEDED). Logs are read
// from the recorded paths, so they are found from any directory; following polls the
// files with backoff, since the nodes that write them may be across a shared
// filesystem where inotify sees nothing. List asks squeue once for every job and
// shows those recorded under this $WICK_HOME.
package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/wick-dev/wick/engine/alerts"
	"github.com/wick-dev/wick/engine/execx"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Name is the scheduler's registry name.
const Name = "slurm"

// Run option names, as in TorchX.
const (
	OptPartition  = "partition"
	OptTime       = "time"
	OptComment    = "comment"
	OptConstraint = "constraint"
	OptMailUser   = "mail-user"
	OptMailType   = "mail-type"
	OptJobDir     = "job_dir"
	OptQOS        = "qos"
	OptAccount    = "account"
)

// JobNamePrefix starts the name of every job component wick submits.
const JobNamePrefix = "wick:"

// Errors a caller may decide on.
var (
	// ErrNoSlurm is wrapped when Slurm's commands are not on PATH.
	ErrNoSlurm = sched.Unreachable("the Slurm commands (sbatch, squeue, scontrol) are not on PATH")
	// ErrControllerDown is wrapped when slurmctld does not answer.
	ErrControllerDown = sched.Unreachable("the Slurm controller does not answer")
	// ErrRejected is wrapped when sbatch refuses a job; the message is Slurm's.
	ErrRejected = errors.New("sbatch rejected the job")
)

// Limits on what is read from Slurm's commands.
const (
	// maxOutput bounds a command's stdout: squeue over thousands of jobs is a few MB.
	maxOutput = 64 << 20
	// maxStderr bounds a command's stderr; Slurm's messages are a line or two.
	maxStderr = 64 << 10
)

// Scheduler is the slurm scheduler. Jobs are in Slurm and in the records under
// StateDir; in memory it keeps only whether the jobs its followers read have ended,
// for a second. It is safe for concurrent use.
type Scheduler struct {
	cfg sched.Config

	mu       sync.Mutex // guards endCache and reach
	endCache map[string]endEntry
	reach    reachState // what the last ping of slurmctld said
	// endMu and pingMu let one caller at a time ask Slurm whether a job ended, or
	// ping it: the others wait for that answer rather than ask again.
	endMu, pingMu sync.Mutex
	// build is wick's own binary, for RunSelf.
	build selfBuild
}

// New makes the slurm scheduler. It does not contact Slurm.
func New(cfg sched.Config) (sched.Scheduler, error) {
	if cfg.Session == "" {
		cfg.Session = spec.DefaultSession
	}
	if cfg.StateDir != "" && !filepath.IsAbs(cfg.StateDir) {
		abs, err := filepath.Abs(cfg.StateDir)
		if err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
		cfg.StateDir = abs
	}
	return &Scheduler{cfg: cfg}, nil
}

// Name returns "slurm".
func (s *Scheduler) Name() string { return Name }

// RunOpts lists TorchX's slurm options and the commands of engine/alerts (on_end,
// on_alarm).
func (s *Scheduler) RunOpts() spec.RunOpts {
	return append(spec.RunOpts{
		{Name: OptPartition, Type: spec.OptString, Help: "the partition to run the job in (default: the cluster's default partition)"},
		{Name: OptTime, Type: spec.OptString, Help: `the job's time limit: "minutes", "minutes:seconds", "hours:minutes:seconds", "days-hours", "days-hours:minutes" or "days-hours:minutes:seconds"`},
		{Name: OptComment, Type: spec.OptString, Help: "comment to set on the job"},
		{Name: OptConstraint, Type: spec.OptString, Help: "node features the job requires (sbatch --constraint)"},
		{Name: OptMailUser, Type: spec.OptString, Help: "user to mail on the events of mail-type"},
		{Name: OptMailType, Type: spec.OptString, Help: "events to mail about: NONE, BEGIN, END, FAIL, REQUEUE, ALL, TIME_LIMIT, ... (comma-separated)"},
		{Name: OptJobDir, Type: spec.OptString, Help: "directory the job runs in and writes its logs to (created if missing; default: the current directory); it must be visible from the nodes"},
		{Name: OptQOS, Type: spec.OptString, Help: "quality of service to assign to the job"},
		{Name: OptAccount, Type: spec.OptString, Help: "account to charge the job to"},
	}, alerts.RunOpts()...)
}

// Close does nothing: the scheduler holds no connection.
func (s *Scheduler) Close() error { return nil }

// workDir is the directory jobs run in when job_dir is not set.
func (s *Scheduler) workDir() (string, error) {
	if s.cfg.WorkDir != "" {
		return filepath.Abs(s.cfg.WorkDir)
	}
	return os.Getwd()
}

// CommandError is a Slurm command that failed: its name, exit status and message.
type CommandError struct {
	Cmd    string
	Code   int
	Stderr string
	// Stdout is what the command printed before failing (scontrol ping says DOWN there).
	Stdout string
}

func (e *CommandError) Error() string {
	msg := oneLine(e.Stderr)
	if msg == "" {
		msg = fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Cmd + ": " + msg
}

// oneLine joins the non-empty lines of a command's message.
func oneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}

// limitWriter keeps at most max bytes and then fails, so a runaway command cannot fill
// memory.
type limitWriter struct {
	buf bytes.Buffer
	max int
}

var errTooMuch = errors.New("output too large")

func (w *limitWriter) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) > w.max {
		return 0, errTooMuch
	}
	return w.buf.Write(p)
}

// How long each of Slurm's commands may take. A live slurmctld answers in
// milliseconds; one that is overloaded, stopped, or behind a site's wrapper that hangs
// must not hold a verb: a command that has not answered by then is killed with what it
// started (execx) and its error says which command and for how long (a *NoAnswerError).
const (
	// queryTimeout bounds the commands that read: scontrol show, squeue, sacct, sinfo.
	queryTimeout = 5 * time.Second
	// submitTimeout bounds sbatch, which may wait on a busy controller to accept a job.
	submitTimeout = 20 * time.Second
	// stepTimeout bounds the srun steps wick runs on a replica's node to find or sample
	// it (wick exec, wick stack): a step's launch and the look for the replica's
	// process (findReplica waits up to 10 s for its tasks to start).
	stepTimeout = 30 * time.Second
	// bcastTimeout bounds sbcast, which copies wick's binary (tens of MB) to a job's
	// nodes for wick stack (see RunSelf).
	bcastTimeout = 60 * time.Second
)

// timeoutFor is the deadline of one command.
func timeoutFor(name string, args []string) time.Duration {
	switch {
	case name == "scontrol" && len(args) > 0 && args[0] == "ping":
		return pingTimeout
	case name == "sbatch":
		return submitTimeout
	case name == "srun":
		return stepTimeout
	case name == "sbcast":
		return bcastTimeout
	}
	return queryTimeout
}

// NoAnswerError is one of Slurm's commands killed at its deadline: a controller that
// does not answer (it wraps ErrControllerDown), or a wrapper around the command that
// hangs.
type NoAnswerError struct {
	Cmd   string        // the command and its first argument ("scontrol show")
	After time.Duration // how long it was given
}

func (e *NoAnswerError) Error() string {
	return fmt.Sprintf("%s: no answer within %s", e.Cmd, e.After)
}

// Unwrap makes a command that did not answer read as a controller that does not.
func (e *NoAnswerError) Unwrap() error { return ErrControllerDown }

// command runs one of Slurm's commands and returns its stdout. A command missing from
// PATH wraps ErrNoSlurm; a controller that cannot be reached, or a command that does
// not answer within its deadline (timeoutFor), wraps ErrControllerDown; any other
// failure is a *CommandError with Slurm's message.
func command(ctx context.Context, stdin io.Reader, name string, args ...string) ([]byte, error) {
	return start(ctx, stdin, name, args...).wait()
}

// running is a Slurm command started by start: wait returns what command would.
type running struct {
	ctx       context.Context // the caller's
	cctx      context.Context // the command's: ctx with its deadline
	stop      context.CancelFunc
	name      string
	what      string // name and its first word, for NoAnswerError ("scontrol show")
	after     time.Duration
	cmd       *exec.Cmd
	out, errw *limitWriter
	err       error // the start's
}

// start starts one of Slurm's commands, in the calling goroutine: a verb starts it
// before it reads its own records, so that the command (most of the verb's time)
// runs meanwhile, not after a goroutine has been scheduled. The command has its
// deadline (timeoutFor) from here; wait must be called.
func start(ctx context.Context, stdin io.Reader, name string, args ...string) *running {
	return startWithin(ctx, timeoutFor(name, args), stdin, name, args...)
}

// startWithin is start with the deadline after, for a command whose own work on the
// node takes longer than timeoutFor allows (wick stack's sampling there).
func startWithin(ctx context.Context, after time.Duration, stdin io.Reader, name string, args ...string) *running {
	r := &running{ctx: ctx, name: name, what: name, after: after}
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		r.what = name + " " + args[0]
	}
	path, err := exec.LookPath(name)
	if err != nil {
		r.err = fmt.Errorf("%w (%s not found; install slurm-client, or run wick where Slurm is)", ErrNoSlurm, name)
		return r
	}
	r.cctx, r.stop = context.WithTimeout(ctx, r.after)
	r.cmd = exec.CommandContext(r.cctx, path, args...)
	execx.Bound(r.cmd)
	r.cmd.Stdin = stdin
	r.out = &limitWriter{max: maxOutput}
	r.errw = &limitWriter{max: maxStderr}
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.errw
	// The user's SBATCH_*, SQUEUE_*, SLURM_CONF... reach the command; what Slurm set
	// inside a job wick runs in does not (see env.go).
	r.cmd.Env = commandEnv(os.Environ())
	r.err = r.cmd.Start()
	return r
}

// wait waits for the command to end and returns its stdout, or its failure as
// command describes it.
func (r *running) wait() ([]byte, error) {
	if r.cmd == nil {
		return nil, r.err // not found on PATH
	}
	defer r.stop()
	ctx, name, out, errw := r.ctx, r.name, r.out, r.errw
	err := r.err
	if err == nil {
		err = r.cmd.Wait()
	}
	if errors.Is(err, exec.ErrWaitDelay) && r.cmd.ProcessState.Success() && r.cctx.Err() == nil {
		// The command answered and exited 0; something it left behind (a wrapper's
		// child) held its pipes, given up on after execx.WaitDelay.
		err = nil
	}
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("%s: %w", name, ctx.Err())
		case r.cctx.Err() != nil:
			return nil, &NoAnswerError{Cmd: r.what, After: r.after}
		case errors.Is(err, errTooMuch):
			return nil, fmt.Errorf("%s: output larger than %d bytes", name, maxOutput)
		}
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		msg := errw.buf.String()
		if controllerDown(msg) {
			return nil, fmt.Errorf("%w: %s: %s (is slurmctld running? scontrol ping says more)", ErrControllerDown, name, oneLine(msg))
		}
		return nil, &CommandError{Cmd: name, Code: code, Stderr: msg, Stdout: out.buf.String()}
	}
	return out.buf.Bytes(), nil
}

// Ping checks that Slurm's commands are on PATH and that the controller answers
// (scontrol ping).
func Ping(ctx context.Context) error {
	out, err := command(ctx, nil, "scontrol", "ping")
	if err != nil {
		var ce *CommandError
		if errors.As(err, &ce) {
			return fmt.Errorf("%w: scontrol ping: %s", ErrControllerDown, oneLine(ce.Stdout+"\n"+ce.Stderr))
		}
		return err
	}
	// With a backup controller one line may say DOWN while another says UP.
	if !strings.Contains(string(out), " is UP") {
		return fmt.Errorf("%w: scontrol ping: %s", ErrControllerDown, oneLine(string(out)))
	}
	return nil
}
