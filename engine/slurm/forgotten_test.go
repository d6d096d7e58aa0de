package slurm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// ghost moves a job's record to a job id slurmctld has never known, as if Slurm had
// purged the job (MinJobAge, no accounting), with the replicas' exit files out of
// reach and the last status seen set to running: what wick knew of a job it last saw
// running. It returns the ghost id.
func (h *harness) ghost(id, ghost string) {
	h.t.Helper()
	rec, err := h.s.loadRecord(id)
	if err != nil || rec == nil {
		h.t.Fatal(err, rec)
	}
	rec.JobID, rec.Ended = ghost, false
	for i := range rec.Replicas {
		rec.Replicas[i].ExitFile += ".missing"
	}
	if rec.Last == nil {
		h.t.Fatal("the job was never seen")
	}
	rec.Last.State = spec.Running
	for i := range rec.Last.Roles {
		for j := range rec.Last.Roles[i].Replicas {
			rep := &rec.Last.Roles[i].Replicas[j]
			rep.State, rep.ExitCode, rep.Ended, rep.StructuredError = spec.Running, nil, time.Time{}, ""
			if rep.Started.IsZero() {
				rep.Started = rec.Submitted
			}
		}
	}
	if err := h.s.saveRecord(rec); err != nil {
		h.t.Fatal(err)
	}
}

// TestClusterForgottenJobsEnd: a job Slurm has forgotten has ended. Its replicas that
// left no exit status are not RUNNING any more; the batch log and the replicas' .err
// say how it ended (srun's exit code, slurmstepd's CANCELLED and DUE TO TIME LIMIT);
// and waiting or following its logs ends, with the status saying so, also when its
// files say nothing.
func TestClusterForgottenJobsEnd(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
	defer cancel()

	// SIGKILLed: the wrapper itself is killed, so no exit file; srun says 137.
	killed := h.submit(&spec.AppDef{Name: "killed", Roles: []spec.Role{testRole("k", 1, "sh", "-c", "echo started; kill -9 $PPID; sleep 30")}}, nil)
	// Cancelled while running.
	cancelled := h.submit(&spec.AppDef{Name: "cancelled", Roles: []spec.Role{testRole("c", 1, "sh", "-c", "echo started; sleep 600")}}, nil)
	// Two replicas that succeed: srun exits 0.
	fine := h.submit(&spec.AppDef{Name: "fine", Roles: []spec.Role{testRole("f", 2, "sh", "-c", "echo started")}}, nil)
	// Killed at its time limit (one minute, Slurm's smallest).
	timed := h.submit(&spec.AppDef{Name: "timed", Roles: []spec.Role{testRole("t", 1, "sh", "-c", "echo started; sleep 600")}}, spec.Cfg{OptTime: "1"})

	h.waitFor(cancelled, "RUNNING", func(st *spec.AppStatus) bool { return st.State == spec.Running })
	// RUNNING is the job; its step may still be starting, and a step cancelled before
	// it starts leaves "job has expired", not slurmstepd's notice. Cancel once the
	// replica has printed.
	if rec, err := h.s.loadRecord(cancelled); err != nil || rec == nil {
		t.Fatal(err, rec)
	} else {
		testkit.Wait(t, testTimeout, "job "+cancelled+"'s replica prints", func() (bool, string) {
			b, _ := os.ReadFile(rec.Replicas[0].Stdout)
			return strings.Contains(string(b), "started"), string(b)
		})
	}
	if err := h.s.Cancel(ctx, cancelled); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{killed, cancelled, timed, fine} {
		if st, err := h.s.Wait(ctx, id); err != nil || !st.State.Terminal() {
			t.Fatalf("job %s: %v %v", id, st, err)
		}
	}
	// Slurm says CANCELLED at once; slurmstepd writes its notice when it signals the
	// step, a moment later. A job is purged minutes after that: wait for the files to
	// be complete, as they are by then.
	for id, word := range map[string]string{killed: "srun exited with code", cancelled: "CANCELLED AT", timed: "DUE TO TIME LIMIT", fine: "srun exited with code 0"} {
		rec, err := h.s.loadRecord(id)
		if err != nil || rec == nil {
			t.Fatal(err, rec)
		}
		testkit.Wait(t, testTimeout, "job "+id+"'s files say "+word, func() (bool, string) {
			b, _ := os.ReadFile(rec.BatchLog)
			e, _ := os.ReadFile(rec.Replicas[0].Stderr)
			return strings.Contains(string(b)+string(e), word), string(b) + "\n" + string(e)
		})
	}

	// The killed wrapper's sampler ended with it: nothing samples its files for ever.
	if rec, err := h.s.loadRecord(killed); err != nil || rec == nil {
		t.Fatal(err, rec)
	} else {
		testkit.Wait(t, testTimeout, "the killed replica's sampler ends", func() (bool, string) {
			left := samplersOf(rec.Replicas[0].ExitFile)
			return len(left) == 0, fmt.Sprintf("processes %v still sample %s", left, rec.Replicas[0].ExitFile)
		})
	}

	for _, c := range []struct {
		id, ghost, role string
		state           spec.AppState
		says            string
	}{
		// The replica's own end names the cause, as on local (its status is 137).
		{killed, "990000011", "k", spec.Failed, "k/0: killed by SIGKILL"},
		{cancelled, "990000012", "c", spec.Cancelled, "cancelled (CANCELLED in "},
		{timed, "990000013", "t", spec.Failed, "killed by Slurm at its time limit (DUE TO TIME LIMIT in "},
		{fine, "990000014", "f", spec.Succeeded, "srun exited with code 0"},
	} {
		h.ghost(c.id, c.ghost)
		d, err := h.s.Describe(ctx, c.ghost)
		if err != nil {
			t.Fatal(err)
		}
		st := d.Status
		if st.State != c.state || !strings.Contains(st.Msg, c.says) {
			t.Errorf("forgotten %s job: %s %q, want %s saying %q", c.role, st.State, st.Msg, c.state, c.says)
		}
		for _, r := range st.Roles[0].Replicas {
			if r.State != c.state || r.Ended.IsZero() {
				t.Errorf("its replica: %+v, want %s and ended", r, c.state)
			}
		}
	}

	// Nothing in the files: the job is over, how is not known. Wait returns (not
	// forever), the status says why, and a follower of its logs ends.
	h.ghost("990000011", "990000015")
	rec, _ := h.s.loadRecord("990000015")
	rec.BatchLog += ".missing"
	for i := range rec.Replicas {
		rec.Replicas[i].Stderr += ".missing"
	}
	if err := h.s.saveRecord(rec); err != nil {
		t.Fatal(err)
	}
	st, err := h.s.Wait(ctx, "990000015")
	if err != nil {
		t.Fatalf("waiting for a forgotten job: %v", err)
	}
	if st.State != spec.UnknownState || !strings.Contains(st.Msg, "Slurm no longer knows job 990000015") || !strings.Contains(st.Msg, "do not say how it ended") {
		t.Errorf("forgotten job, nothing in its files: %s %q", st.State, st.Msg)
	}
	if r := replica(st, "k", 0); r == nil || r.State == spec.Running || r.Ended.IsZero() {
		t.Errorf("its replica: %+v, want not RUNNING, and ended", r)
	}
	it, err := h.s.Logs(ctx, "990000015", "k", 0, sched.LogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var got []string
	for {
		l, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("following a forgotten job's logs: %v (after %q)", err, got)
		}
		got = append(got, l.Text)
	}
	if strings.Join(got, "\n") != "started" {
		t.Errorf("followed %q", got)
	}
}

// samplersOf returns the pids of the replica wrappers (and of their samplers, which
// share their command line) whose replica's exit file is exitFile.
func samplersOf(exitFile string) []int {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, p := range procs {
		cmd, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || !bytes.HasPrefix(cmd, []byte("/bin/sh\x00-c\x00w=\"${WICK_EXIT_FILE%.exit}\"")) {
			continue
		}
		env, err := os.ReadFile(filepath.Join(p, "environ"))
		if err != nil || !bytes.Contains(env, []byte("\x00WICK_EXIT_FILE="+exitFile+"\x00")) && !bytes.HasPrefix(env, []byte("WICK_EXIT_FILE="+exitFile+"\x00")) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(p)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
