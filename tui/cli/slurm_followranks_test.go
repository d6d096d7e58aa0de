package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestSlurmFollowRanks: `wick log --rank N -f` and `wick metrics -t` started as soon
// as a two-node DDP job is submitted to Slurm, before any status can know which node
// c10d made group rank 0 (node 0 is group rank 1 as often as not). Each follower
// prints only its rank's lines, every epoch of them, and the followed metrics name
// no node by a rank it is not: what they learn of the ranks mid-run comes from the
// status, asked again while following.
func TestSlurmFollowRanks(t *testing.T) {
	t.Parallel()
	needSlurm(t)
	h := multinodeHarness(t)
	var early, swaps, named, byReplica int
	repeat(t, "followers started at submission print only their rank's lines", func(t *testing.T, run int) {
		args := multinodeArgs("2x1", slurmPort(t), "3")
		args[2] = "slurm"
		args = append([]string{"run", "--detach"}, args[1:]...)
		r := h.exec(args...)
		if r.code != 0 {
			t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
		}
		handle := strings.TrimSpace(r.stdout)
		t.Cleanup(func() { h.exec("cancel", handle); h.exec("delete", handle) })

		ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(ddpTimeout))
		defer cancel()
		type follower struct {
			cmd      *exec.Cmd
			out, err bytes.Buffer
		}
		start := func(args ...string) *follower {
			f := &follower{cmd: h.wickCmd(ctx, args...)}
			f.cmd.Stdout, f.cmd.Stderr = &f.out, &f.err
			if err := f.cmd.Start(); err != nil {
				t.Fatal(err)
			}
			return f
		}
		logs := []*follower{start("log", handle+"/multinode", "--rank", "0", "-f"), start("log", handle+"/multinode", "--rank", "1", "-f")}
		met := start("metrics", "-t", "--csv", handle)
		if !knowsGroupRanks(h.status(handle)) {
			early++
		}
		for _, f := range append(logs, met) {
			if err := f.cmd.Wait(); err != nil {
				t.Fatalf("%v: %v\n%s", f.cmd.Args, err, f.err.String())
			}
		}
		if st := h.status(handle); st.State != spec.Succeeded {
			t.Fatalf("app %s %q", st.State, st.Msg)
		}
		if swapped(h, handle) {
			swaps++
		}
		for rank, f := range logs {
			for other := range 2 {
				for epoch := range 3 {
					line := "[RANK" + strconv.Itoa(other) + "] Epoch " + strconv.Itoa(epoch) + " | loss"
					if has := strings.Contains(f.out.String(), line); has != (other == rank) {
						t.Errorf("wick log --rank %d -f: has %q: %v\n%s%s", rank, line, has, f.out.String(), f.err.String())
					}
				}
			}
		}
		// Every followed point named "rank N" is rank N's, as the metrics read once
		// the job has ended (its status then knows every group rank) say.
		final := h.exec("metrics", "--csv", handle)
		want := map[string]bool{}
		for _, row := range csvRows(t, final.stdout) {
			want[strings.Join(row, ",")] = true
		}
		// How many points the follower could name by rank depends on when its status
		// poll learned the ranks (on a busy machine, maybe after the last line): what
		// it may never do is name a point by a rank that is not the point's, or leave
		// a point nameless.
		for _, row := range csvRows(t, met.out.String()) {
			switch {
			case strings.HasPrefix(row[0], "rank "):
				named++
				if !want[strings.Join(row, ",")] {
					t.Errorf("followed point %q is not that rank's; after the job:\n%s", row, final.stdout)
				}
			case strings.HasPrefix(row[0], "multinode/"):
				byReplica++ // a node whose group rank was not known yet
			default:
				t.Errorf("followed point %q is named neither by rank nor by replica", row)
			}
		}
	})
	t.Logf("followers started before the status knew the group ranks in %d of %d runs; node 0 was group rank 1 in %d; followed points named by rank %d, by replica %d", early, *ddpRuns, swaps, named, byReplica)
}

// knowsGroupRanks reports whether st gives every replica's group rank.
func knowsGroupRanks(st spec.AppStatus) bool {
	n := 0
	for _, role := range st.Roles {
		for _, r := range role.Replicas {
			if r.GroupRank == nil {
				return false
			}
			n++
		}
	}
	return n > 0
}

// csvRows reads `wick metrics --csv` (rank,step,time,name,value) without its header,
// with the time blanked: the same point read twice is dated once by each reading.
func csvRows(t *testing.T, s string) [][]string {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(s)).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("csv %q: %v", s, err)
	}
	for _, row := range rows[1:] {
		row[2] = ""
	}
	return rows[1:]
}
