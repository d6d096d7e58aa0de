package alerts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/hang"
	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Verb is the hidden verb of the watcher: `wick __alerts DIR`.
const Verb = "__alerts"

// Files of a watcher's directory.
const (
	jobFile  = "job.json"
	WatchLog = "watch.log"
)

// Bounds of a watcher.
const (
	// maxJob bounds what is read of job.json.
	maxJob = 64 << 10
	// describeWait bounds one look at the app (a Slurm query, a Docker Engine's
	// answer) and the reading of its alarms.
	describeWait = 30 * time.Second
	// MaxAlarmRuns bounds how many times on_alarm runs for one app: an alarm that
	// comes and goes does not run a command without end.
	MaxAlarmRuns = 100
	// maxAlarmLog bounds on_alarm.log, which each run appends to.
	maxAlarmLog = 1 << 20
)

// Job is what a watcher runs for one app: job.json.
type Job struct {
	Handle  string `json:"handle"`
	OnEnd   string `json:"on_end,omitempty"`
	OnAlarm string `json:"on_alarm,omitempty"`
	// EveryMS is how often the app is looked at, in milliseconds.
	EveryMS int64 `json:"every_ms"`
}

// EnvEvery, when it holds a duration, is how often every watcher looks (tests).
const EnvEvery = "WICK_ALERTS_EVERY"

// Every is how often a watcher looks at an app of scheduler: each look describes it
// (for Slurm a query of slurmctld, so less often) and reads its new lines.
func Every(scheduler string) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(EnvEvery)); err == nil && d > 0 {
		return d
	}
	switch scheduler {
	case "slurm":
		return 15 * time.Second
	case "kubernetes":
		return 10 * time.Second
	}
	return 5 * time.Second
}

// OwnsOnEnd is a scheduler whose own supervisor runs on_end (the local schedulers):
// the watcher runs only its on_alarm.
type OwnsOnEnd interface {
	RunsOnEnd() bool
}

// JobOf is the watcher's job for the app info launched on s, and whether it needs
// one: an on_alarm, or an on_end its scheduler does not run itself.
func JobOf(info *sched.DryRunInfo, s sched.Scheduler) (Job, bool) {
	cfg := info.Submission.Cfg
	j := Job{Handle: info.Handle().String(), OnAlarm: cfg.String(OptOnAlarm), EveryMS: Every(info.Scheduler).Milliseconds()}
	if o, ok := s.(OwnsOnEnd); !ok || !o.RunsOnEnd() {
		j.OnEnd = cfg.String(OptOnEnd)
	}
	return j, j.OnEnd != "" || j.OnAlarm != ""
}

// Dir is the watcher's directory of app h under stateDir.
func Dir(stateDir string, h spec.Handle) string {
	clean := func(s string) string {
		s = strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:-", r) {
				return r
			}
			return '_'
		}, s)
		if s == "" || s == "." || s == ".." {
			return "_" + s
		}
		return s
	}
	return filepath.Join(stateDir, "alerts", clean(h.Scheduler), clean(h.Session), clean(h.AppID))
}

// Start writes job into its directory under stateDir and starts `SELF __alerts DIR` in
// a new session (no terminal, no signal from the launcher's Ctrl-C, no death with the
// launcher), with env (the launcher's: the schedulers' settings) and WICK_HOME set to
// stateDir. Its output goes to watch.log.
func Start(self []string, stateDir string, env []string, job Job) error {
	if len(self) == 0 || self[0] == "" {
		return errors.New("no wick binary to run the watcher with")
	}
	h, err := spec.ParseHandle(job.Handle)
	if err != nil {
		return err
	}
	dir := Dir(stateDir, h)
	if err := safefs.MkdirAll(dir); err != nil {
		return fmt.Errorf("alerts: %w", err)
	}
	data, err := json.MarshalIndent(job, "", "  ")
	if err != nil {
		return err
	}
	if err := safefs.WriteFileAtomic(dir, jobFile, append(data, '\n')); err != nil {
		return fmt.Errorf("alerts: %w", err)
	}
	logf, err := safefs.OpenAppend(filepath.Join(dir, WatchLog))
	if err != nil {
		return fmt.Errorf("alerts: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(self[0], append(slices.Clone(self[1:]), Verb, dir)...)
	cmd.Dir = "/"
	cmd.Env = append(slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "WICK_HOME=") }), "WICK_HOME="+stateDir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("alerts: start the watcher: %w", err)
	}
	// Reaped whenever it ends, so that a long-lived launcher (the UI) keeps no zombie.
	go func() { _ = cmd.Wait() }()
	return nil
}

// Source is what a watcher looks at the app through: the Runner.
type Source interface {
	Describe(ctx context.Context, h spec.Handle) (*sched.Description, error)
	LogLines(ctx context.Context, h spec.Handle, role string, k int, opts sched.LogOptions) (sched.LogIterator, error)
}

// Watch is the watcher of the app whose job is in dir: it looks at the app every
// job.EveryMS until it has ended, runs on_alarm when an alarm rises and on_end once it
// has ended, then returns. One watcher runs per directory: a second returns at once.
// An app deleted under it ends the watch with nothing run. logf gets its messages.
func Watch(ctx context.Context, src Source, dir string, logf func(format string, args ...any)) error {
	data, err := safefs.ReadFile(filepath.Join(dir, jobFile), maxJob)
	if err != nil {
		return fmt.Errorf("alerts: %w", err)
	}
	var job Job
	if err := json.Unmarshal(data, &job); err != nil {
		return fmt.Errorf("alerts: %s: %w", filepath.Join(dir, jobFile), err)
	}
	h, err := spec.ParseHandle(job.Handle)
	if err != nil {
		return fmt.Errorf("alerts: %w", err)
	}
	unlock, ok, err := tryLock(dir)
	if err != nil || !ok {
		return err
	}
	defer unlock()
	every := time.Duration(job.EveryMS) * time.Millisecond
	if every <= 0 {
		every = Every(h.Scheduler)
	}
	w := &watcher{job: job, h: h, dir: dir, src: src, logf: logf}
	if job.OnAlarm != "" {
		w.book = metrics.NewBook(src, metrics.DefaultConfig(), "")
	}
	logf("watching %s every %s", h, every)
	lastErr := ""
	for {
		d, err := w.look(ctx)
		switch {
		case errors.Is(err, sched.ErrNotFound):
			logf("%s is gone (deleted): nothing more to run", h)
			return nil
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			if err.Error() != lastErr { // a scheduler that is down: said once
				logf("%v (trying again every %s)", err, every)
				lastErr = err.Error()
			}
		default:
			lastErr = ""
			if d.Status.State.Terminal() {
				w.ended(d)
				return nil
			}
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// watcher is the state of one Watch.
type watcher struct {
	job  Job
	h    spec.Handle
	dir  string
	src  Source
	logf func(string, ...any)
	book *metrics.Book
	// hangKey is the hang alarm last told ("" none), metricN the metric alarms told.
	hangKey   string
	metricN   int
	alarmRuns int
}

// look describes the app and, with an on_alarm, tells the alarms that rose since the
// last look.
func (w *watcher) look(ctx context.Context) (*sched.Description, error) {
	ctx, cancel := context.WithTimeout(ctx, describeWait)
	defer cancel()
	d, err := w.src.Describe(ctx, w.h)
	if err != nil || w.job.OnAlarm == "" {
		return d, err
	}
	now := time.Now()
	if !d.Status.State.Terminal() {
		hg, herr := hang.Check(ctx, w.src, w.h, d, now)
		switch {
		case herr != nil:
		case hg == nil:
			w.hangKey = ""
		case fmt.Sprint(hg.Ranks, hg.Step, hg.Ahead) != w.hangKey:
			w.hangKey = fmt.Sprint(hg.Ranks, hg.Step, hg.Ahead)
			w.alarm(d, "hang", hg.Message(now))
		}
	}
	if d.Status.State == spec.Queued || d.Status.State == spec.UnknownState {
		return d, nil
	}
	f, ferr := w.book.Scan(ctx, w.h, d)
	if ferr == nil && f.N > w.metricN {
		msg := fmt.Sprintf("%d metric alarms", f.N)
		if len(f.Lines) > 0 {
			msg = f.Lines[min(w.metricN, len(f.Lines)-1)]
			if f.N > w.metricN+1 {
				msg += fmt.Sprintf(" (and %d more)", f.N-w.metricN-1)
			}
		}
		w.metricN = f.N
		w.alarm(d, "metric", msg)
	}
	return d, nil
}

// alarm runs on_alarm for one alarm, appending its output to on_alarm.log.
func (w *watcher) alarm(d *sched.Description, kind, msg string) {
	if w.alarmRuns >= MaxAlarmRuns {
		if w.alarmRuns == MaxAlarmRuns {
			w.logf("on_alarm has run %d times: not again for this app (%s)", MaxAlarmRuns, msg)
			w.alarmRuns++
		}
		return
	}
	w.alarmRuns++
	vars := append(Vars(w.h, d.Status.State, spec.ErrorMessage(d.Status.StructuredError), ""),
		"WICK_ALARM="+oneLine(msg), "WICK_ALARM_KIND="+kind)
	out, err := Run(w.job.OnAlarm, w.dir, vars)
	head := fmt.Sprintf("--- %s %s: %s", time.Now().Format(time.RFC3339), kind, oneLine(msg))
	if err != nil {
		head += " (" + err.Error() + ")"
		w.logf("on_alarm %q: %v", w.job.OnAlarm, err)
	}
	appendLog(filepath.Join(w.dir, AlarmLog), append([]byte(head+"\n"), out...), w.logf)
}

// ended runs on_end for the app d describes, which has ended.
func (w *watcher) ended(d *sched.Description) {
	if w.job.OnEnd == "" {
		return
	}
	st := d.Status
	errMsg := spec.ErrorMessage(st.StructuredError)
	if errMsg == "" && st.State == spec.Failed {
		errMsg = st.Msg
	}
	out, err := Run(w.job.OnEnd, w.dir, Vars(w.h, st.State, errMsg, ""))
	if werr := safefs.WriteFileAtomic(w.dir, EndLog, out); werr != nil {
		w.logf("on_end: %v", werr)
	}
	if err != nil {
		w.logf("on_end %q: %v", w.job.OnEnd, err)
		return
	}
	w.logf("on_end ran (%s %s)", w.h.AppID, st.State)
}

// appendLog appends b to path unless the file has reached maxAlarmLog.
func appendLog(path string, b []byte, logf func(string, ...any)) {
	f, err := safefs.OpenAppend(path)
	if err != nil {
		logf("%v", err)
		return
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size()+int64(len(b)) > maxAlarmLog {
		logf("%s is full (%d bytes): this run's output is not kept", path, maxAlarmLog)
		return
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	if _, err := f.Write(b); err != nil {
		logf("%v", err)
	}
}

// tryLock takes dir's flock without waiting: ok is false when another watcher holds it.
func tryLock(dir string) (unlock func(), ok bool, err error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	if err == unix.EWOULDBLOCK {
		unix.Close(fd)
		return nil, false, nil
	}
	if err != nil {
		unix.Close(fd)
		return nil, false, &os.PathError{Op: "flock", Path: dir, Err: err}
	}
	return func() { unix.Close(fd) }, true, nil
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
