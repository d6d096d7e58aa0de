package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// slurmTrainer is what each replica of the Slurm metrics test prints: five steps of a
// falling loss and a rising lr, 0.4 s apart (twice the period of the .times sampler
// that dates Slurm's lines). Replica 0's loss goes 19..15, replica 1's 9..5 with a NaN
// at step 3. ${replica_id} is TorchX's macro, filled in per replica at submission.
const slurmTrainer = `K=${replica_id}; i=1
while [ $i -le 5 ]; do
  loss=$((20 - 10*K - i)); if [ $K = 1 ] && [ $i = 3 ]; then loss=nan; fi
  echo "step $i loss $loss lr 0.00$i"; i=$((i+1)); sleep 0.4
done`

// TestSlurmMetrics runs a two-replica app on Slurm that prints metrics, follows them
// with -t until the job ends, and reads them back from the job's files once it has:
// the table, every point as CSV (each replica's steps, values and the times the lines
// were written), and the NaN alarm in describe.
func TestSlurmMetrics(t *testing.T) {
	t.Parallel()
	needSlurm(t)
	h := newHarness(t)
	start := time.Now()
	r := h.exec("run", "-s", "slurm", "--detach", "utils.sh", "--num_replicas", "2", "--", "sh", "-c", slurmTrainer)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { h.exec("cancel", handle); h.exec("delete", handle) })

	// Followed from submission (the files do not exist while the job is pending) to
	// the end of the job: every point of both replicas. The job runs 2 s; how long
	// Slurm keeps it pending depends on what else the cluster runs, so the bound on
	// the follow starts when the job has left PENDING, not at submission.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	follow := h.wickCmd(ctx, "metrics", "-t", "--csv", handle)
	var fout, ferr bytes.Buffer
	follow.Stdout, follow.Stderr = &fout, &ferr
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- follow.Wait() }()
	testkit.Wait(t, 2*time.Minute, handle+" leaves PENDING", func() (bool, string) {
		st := h.status(handle).State
		return st != spec.Pending && st != spec.Submitted && st != spec.UnknownState, st.String()
	})
	select {
	case err := <-ended:
		if st := h.status(handle); err != nil || st.State != spec.Succeeded {
			t.Fatalf("metrics -t: %v, app %s\n%s\n%s", err, st.State, fout.String(), ferr.String())
		}
	case <-time.After(testkit.Scale(time.Minute)):
		cancel()
		<-ended
		t.Fatalf("metrics -t still following a minute after the job started:\n%s\n%s", fout.String(), ferr.String())
	}
	followed := result{0, fout.String(), ferr.String()}
	end := time.Now()

	// The table: both replicas, five values each; the NaN counts but is no minimum.
	table := h.exec("metrics", handle)
	rows := map[string][]string{}
	for _, l := range strings.Split(table.stdout, "\n") {
		if f := strings.Fields(l); len(f) == 7 {
			rows[f[0]] = f
		}
	}
	for name, want := range map[string]string{
		"loss": "loss 2 10 5 19",
		"lr":   "lr 2 10 0.001 0.005",
	} {
		f := rows[name]
		if len(f) != 7 || strings.Join([]string{f[0], f[1], f[2], f[5], f[6]}, " ") != want {
			t.Errorf("table row %s = %q, want NAME RANKS COUNT MIN MAX = %s", name, f, want)
		}
	}
	if table.code != 0 || !strings.HasSuffix(table.stdout, "\nALARMS\n  ! loss on sh/1 is NaN at step 3\n") {
		t.Errorf("table: exit %d\n%s\nstderr %s", table.code, table.stdout, table.stderr)
	}

	// CSV: each replica's five steps in order, with its own values, at the times the
	// lines were written: while the job ran, 0.4 s apart; the points of both replicas
	// in time order, whichever replica's files are read first (each read has its own
	// timing: a few reads show a race).
	var recs [][]string
	for range 3 {
		c := h.exec("metrics", "--csv", handle)
		r, err := csv.NewReader(strings.NewReader(c.stdout)).ReadAll()
		if c.code != 0 || err != nil || len(r) != 21 || strings.Join(r[0], ",") != "rank,step,time,name,value" {
			t.Fatalf("--csv: exit %d, %v, %d records:\n%s\n%s", c.code, err, len(r), c.stdout, c.stderr)
		}
		var last time.Time
		for i, rec := range r[1:] {
			at, err := time.Parse(time.RFC3339Nano, rec[2])
			if err != nil || at.Before(last) {
				t.Fatalf("--csv: row %d %q: %v, or older than the row before:\n%s", i+1, rec, err, c.stdout)
			}
			last = at
		}
		if a, b := points(t, followed.stdout), points(t, c.stdout); a != b {
			t.Errorf("followed live:\n%s\nread after the end:\n%s", a, b)
		}
		recs = r
	}
	got := map[string][]string{} // "sh/0 loss" -> "step=value" in order
	times := map[string][]time.Time{}
	for _, rec := range recs[1:] {
		at, err := time.Parse(time.RFC3339Nano, rec[2])
		if err != nil {
			t.Fatalf("time of %q: %v", rec, err)
		}
		if at.Before(start.Add(-time.Second)) || at.After(end.Add(time.Second)) {
			t.Errorf("%q: time %s is not while the job ran (%s to %s)", rec, at, start, end)
		}
		k := rec[0] + " " + rec[3]
		got[k] = append(got[k], rec[1]+"="+rec[4])
		times[k] = append(times[k], at)
	}
	for k, want := range map[string]string{
		"sh/0 loss": "1=19 2=18 3=17 4=16 5=15",
		"sh/1 loss": "1=9 2=8 3=NaN 4=6 5=5",
		"sh/0 lr":   "1=0.001 2=0.002 3=0.003 4=0.004 5=0.005",
		"sh/1 lr":   "1=0.001 2=0.002 3=0.003 4=0.004 5=0.005",
	} {
		if s := strings.Join(got[k], " "); s != want {
			t.Errorf("%s: %s, want %s", k, s, want)
		}
		ts := times[k]
		for i := 1; i < len(ts); i++ {
			if ts[i].Before(ts[i-1]) { // two lines may be read in the same millisecond
				t.Errorf("%s: step %d read at %s, before step %d at %s", k, i+1, ts[i], i, ts[i-1])
			}
		}
		if len(ts) == 5 && ts[4].Sub(ts[0]) < 800*time.Millisecond {
			t.Errorf("%s: five lines 0.4 s apart are dated %s apart: %v", k, ts[4].Sub(ts[0]), ts)
		}
	}

	d := h.exec("describe", handle)
	if d.code != 0 || !strings.Contains(d.stdout, "ALARMS\n  ! loss on sh/1 is NaN at step 3\n") {
		t.Errorf("describe lists no alarm: exit %d\n%s\n%s", d.code, d.stdout, d.stderr)
	}
}

// points is the CSV of wick metrics without its times, sorted: what two reads of the
// same logs agree on.
func points(t *testing.T, out string) string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatalf("CSV: %v\n%s", err, out)
	}
	var lines []string
	for _, rec := range recs {
		if len(rec) == 5 {
			rec[2] = ""
		}
		lines = append(lines, strings.Join(rec, ","))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
