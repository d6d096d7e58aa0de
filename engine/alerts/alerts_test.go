package alerts

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// TestRunGivesTheAppAndTheOutput: a command gets the app in WICK_* variables, its
// output (both streams) comes back, and its exit code is the error.
func TestRunGivesTheAppAndTheOutput(t *testing.T) {
	h := spec.Handle{Scheduler: "slurm", Session: "wick", AppID: "42"}
	out, err := Run(`echo "$WICK_HANDLE $WICK_STATE $WICK_ERROR"; echo err >&2; exit 7`, t.TempDir(),
		Vars(h, spec.Failed, "rank 1: boom\nTraceback", ""))
	if got := string(out); got != "slurm://wick/42 FAILED rank 1: boom\nerr\n" {
		t.Errorf("output %q", got)
	}
	if err == nil || err.Error() != "exit code 7" {
		t.Errorf("error %v, want exit code 7", err)
	}
}

// owns is a scheduler whose supervisor runs on_end.
type owns struct{ sched.Scheduler }

func (owns) RunsOnEnd() bool { return true }

// TestJobOf: a watcher is started for an on_alarm, or an on_end the scheduler does not
// run itself, and not otherwise.
func TestJobOf(t *testing.T) {
	info := func(cfg spec.Cfg) *sched.DryRunInfo {
		return &sched.DryRunInfo{Scheduler: "local_docker", Submission: sched.Submission{AppID: "a-1", Session: "s", Cfg: cfg}}
	}
	var other sched.Scheduler
	for _, c := range []struct {
		cfg      spec.Cfg
		s        sched.Scheduler
		want     bool
		end, alm string
	}{
		{spec.Cfg{}, other, false, "", ""},
		{spec.Cfg{OptOnEnd: "x"}, other, true, "x", ""},
		{spec.Cfg{OptOnEnd: "x"}, owns{}, false, "", ""},
		{spec.Cfg{OptOnEnd: "x", OptOnAlarm: "y"}, owns{}, true, "", "y"},
	} {
		j, ok := JobOf(info(c.cfg), c.s)
		if ok != c.want || j.OnEnd != c.end || j.OnAlarm != c.alm || j.Handle != "local_docker://s/a-1" {
			t.Errorf("JobOf(%v, %T) = %+v, %v", c.cfg, c.s, j, ok)
		}
	}
}

// TestDirStaysUnder: an app id that is not a plain name stays one directory under
// alerts.
func TestDirStaysUnder(t *testing.T) {
	for _, id := range []string{"..", "a/../../b", "ns:app-1", ""} {
		d := Dir("/h", spec.Handle{Scheduler: "kubernetes", Session: "s", AppID: id})
		if filepath.Dir(d) != "/h/alerts/kubernetes/s" || strings.Contains(filepath.Base(d), "/") {
			t.Errorf("Dir of %q = %s", id, d)
		}
	}
}

// TestOneWatcherADirectory: a second watcher of the same directory does not take it.
func TestOneWatcherADirectory(t *testing.T) {
	dir := t.TempDir()
	unlock, ok, err := tryLock(dir)
	if err != nil || !ok {
		t.Fatalf("first lock: %v %v", ok, err)
	}
	if _, ok, err := tryLock(dir); ok || err != nil {
		t.Errorf("second lock taken: %v %v", ok, err)
	}
	unlock()
	if unlock, ok, _ := tryLock(dir); !ok {
		t.Error("lock not taken after release")
	} else {
		unlock()
	}
}
