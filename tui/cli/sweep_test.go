package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestSweepBadInput: each mistake is one line, exit 2, and nothing is launched.
func TestSweepBadInput(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sweep", "nope=1,2", "demo.train"}, `unknown NAME "nope": not an argument of demo.train`},
		{[]string{"--sweep", "rate=", "demo.train"}, "empty value"},
		{[]string{"--sweep", "rate=1,2", "--sweep", "rate=3", "demo.train"}, "rate is swept twice"},
		{[]string{"--sweep", "rate=" + seq(101), "--sweep", "steps=" + seq(100), "demo.train"}, "more than 10000 apps"},
		{[]string{"--sweep", "rate=1,2", "demo.train", "--rate", "3"}, "rate is swept and also given as --rate"},
		{[]string{"--sweep", "replicas=1,0", "demo.train"}, "the app of replicas=0"},
		{[]string{"--max-parallel", "2", "demo.train"}, "--max-parallel and --stop-on-nan need --sweep"},
		{[]string{"--sweep", "rate=1", "--max-parallel", "-1", "demo.train"}, "--max-parallel -1"},
	} {
		r := h.run(append([]string{"run"}, tc.args...)...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != ExitUsage || len(lines) != 1 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("wick run %q: exit %d, stderr %q; want exit 2 and one line with %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	for _, dir := range []string{"sweeps", "local/apps"} {
		if ents, _ := os.ReadDir(filepath.Join(h.home, dir)); len(ents) > 0 {
			t.Errorf("%s holds %d entries after bad input", dir, len(ents))
		}
	}
}

func seq(n int) string {
	vs := make([]string, n)
	for i := range vs {
		vs[i] = strconv.Itoa(i + 1)
	}
	return strings.Join(vs, ",")
}

// TestSweepDryRunListsTheGrid: every app of the product, with its values; a name the
// component does not have goes to the script, after --.
func TestSweepDryRunListsTheGrid(t *testing.T) {
	h := newHarness(t)
	r := h.run("run", "--dryrun", "--sweep", "rate=10,20", "--sweep", "steps=5,6,7", "demo.train")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "6 apps of demo.train on local_cwd") {
		t.Errorf("no header:\n%s", r.stdout)
	}
	for _, name := range []string{"rate10-steps5", "rate10-steps7", "rate20-steps6"} {
		if !strings.Contains(r.stdout, "local_cwd://wick/demo-train-"+name+"-") {
			t.Errorf("no app %s:\n%s", name, r.stdout)
		}
	}
	r = h.run("run", "--dryrun", "--json", "--sweep", "lr=0.1,0.01", "utils.sh", "--", "train.sh", "--lr", "1", "--epochs", "3")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var got struct {
		Apps []struct {
			Values map[string]string `json:"values"`
		} `json:"apps"`
		DryRuns []struct {
			App spec.AppDef `json:"app"`
		} `json:"dryruns"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.DryRuns) != 2 || got.Apps[1].Values["lr"] != "0.01" {
		t.Fatalf("dry runs: %s", r.stdout)
	}
	args := got.DryRuns[1].App.Roles[0].Args
	if !strings.Contains(strings.Join(args, " "), "train.sh --lr 0.01 --epochs 3") {
		t.Errorf("the script's --lr was not set: %q", args)
	}
}

// cancelAtEnd cancels the sweep when the test ends, and waits for its queue process
// to be gone, before the test's directories are removed.
func cancelAtEnd(t *testing.T, h *harness, id string) {
	t.Cleanup(func() {
		h.exec("cancel", id)
		store := sweep.NewStore(h.home)
		testkit.Wait(t, 20*time.Second, "the sweep's queue gone", func() (bool, string) {
			sw, err := store.Load(id)
			return err != nil || !sw.QueueRunning(), fmt.Sprint(err)
		})
	})
}

// sweepRows lists the apps of a sweep as `wick list --sweep --json` prints them.
func sweepRows(t *testing.T, h *harness, id string) []spec.AppStatus {
	t.Helper()
	r := h.exec("list", "--sweep", id, "--json")
	if r.code != 0 {
		t.Fatalf("wick list --sweep: %d %s", r.code, r.stderr)
	}
	var apps []spec.AppStatus
	if err := json.Unmarshal([]byte(r.stdout), &apps); err != nil {
		t.Fatal(err)
	}
	return apps
}

func states(apps []spec.AppStatus) string {
	var s []string
	for _, a := range apps {
		s = append(s, a.State.String())
	}
	return strings.Join(s, " ")
}

// TestSweepQueueSurvivesKill9OfLauncher: the attached launcher is SIGKILLed while
// apps are queued; the queue goes on, never runs more than --max-parallel apps at
// once, and every app succeeds.
func TestSweepQueueSurvivesKill9OfLauncher(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cmd := h.wickCmd(context.Background(), "run", "--sweep", "steps=40,41,42,43,44", "--max-parallel", "2",
		"demo.train", "--replicas", "1", "--rate", "20", "--progress=false")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the sweep id: %v", err)
	}
	id := strings.TrimSpace(line)
	testkit.Wait(t, 20*time.Second, "an app running, others queued", func() (bool, string) {
		apps := sweepRows(t, h, id)
		s := states(apps)
		return strings.Contains(s, "RUNNING") && strings.Contains(s, "QUEUED"), s
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	var apps []spec.AppStatus
	testkit.Wait(t, 60*time.Second, "every app SUCCEEDED", func() (bool, string) {
		apps = sweepRows(t, h, id)
		return states(apps) == strings.TrimSpace(strings.Repeat("SUCCEEDED ", 5)), states(apps)
	})
	// At no moment were more than 2 apps between their creation and their end.
	type ev struct {
		at    time.Time
		delta int
	}
	var evs []ev
	for _, a := range apps {
		evs = append(evs, ev{a.Created, 1}, ev{a.Ended, -1})
		if a.Sweep == nil || a.Sweep.ID != id || a.Sweep.Values["steps"] == "" {
			t.Errorf("%s: sweep %+v", a.Handle, a.Sweep)
		}
	}
	slices.SortStableFunc(evs, func(x, y ev) int {
		if c := x.at.Compare(y.at); c != 0 {
			return c
		}
		return x.delta - y.delta // an end before a start at the same instant
	})
	n := 0
	for _, e := range evs {
		if n += e.delta; n > 2 {
			t.Fatalf("%d apps ran at once with --max-parallel 2", n)
		}
	}
}

// TestSweepCancelAndDelete: a queued app is cancelled alone (it leaves the queue);
// cancel of the sweep id stops the rest; delete of the sweep id removes it all.
func TestSweepCancelAndDelete(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "--detach", "--sweep", "rate=1,2,3", "--max-parallel", "1",
		"demo.train", "--replicas", "1", "--duration", "60s", "--progress=false")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	cancelAtEnd(t, h, id)
	var apps []spec.AppStatus
	testkit.Wait(t, 20*time.Second, "first app running", func() (bool, string) {
		apps = sweepRows(t, h, id)
		return states(apps) == "RUNNING QUEUED QUEUED", states(apps)
	})
	if r := h.exec("list", "--sweep", id); !strings.Contains(r.stdout, "RATE") || !strings.Contains(r.stdout, "QUEUED") {
		t.Errorf("list --sweep:\n%s", r.stdout)
	}
	if r := h.exec("sweep", "list"); !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "2 queued, 1 running") || !strings.Contains(r.stdout, "running") {
		t.Errorf("sweep list:\n%s", r.stdout)
	}
	if r := h.exec("status", apps[2].Handle); r.code != 0 || !strings.Contains(r.stdout, "QUEUED") {
		t.Errorf("status of a queued app: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := h.exec("log", apps[1].Handle); r.code != 1 || !strings.Contains(r.stderr, "is queued in sweep "+id+": no logs until it starts") {
		t.Errorf("log of a queued app: %d %s", r.code, r.stderr)
	}
	if r := h.exec("cancel", apps[2].Handle); r.code != 0 || !strings.Contains(r.stderr, "CANCELLED") {
		t.Fatalf("cancel of a queued app: %d %s", r.code, r.stderr)
	}
	if s := states(sweepRows(t, h, id)); s != "RUNNING QUEUED CANCELLED" {
		t.Errorf("after cancelling the third: %s", s)
	}
	if r := h.exec("cancel", id); r.code != 0 {
		t.Fatalf("cancel of the sweep: %d %s", r.code, r.stderr)
	}
	if s := states(sweepRows(t, h, id)); s != "CANCELLED CANCELLED CANCELLED" {
		t.Errorf("after cancelling the sweep: %s", s)
	}
	if r := h.exec("delete", id); r.code != 0 {
		t.Fatalf("delete of the sweep: %d %s", r.code, r.stderr)
	}
	if r := h.exec("list", "--sweep", id); r.code != ExitUsage || !strings.Contains(r.stderr, "no such sweep") {
		t.Errorf("list of a deleted sweep: %d %s", r.code, r.stderr)
	}
	if r := h.exec("list", "--json"); strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("apps left after deleting the sweep: %s", r.stdout)
	}
}

// TestSweepFailedLaunchDoesNotStopTheQueue: an app whose launch fails (its state
// directory is taken) is FAILED on its row with why, and the next apps run.
func TestSweepFailedLaunchDoesNotStopTheQueue(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "--detach", "--json", "--sweep", "steps=5,6,7", "--max-parallel", "1",
		"demo.train", "--replicas", "1", "--duration", "2s", "--progress=false")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var sw struct {
		Sweep string `json:"sweep"`
		Apps  []struct {
			Handle string `json:"handle"`
		} `json:"apps"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &sw); err != nil {
		t.Fatal(err)
	}
	cancelAtEnd(t, h, sw.Sweep)
	// The second app's directory holds an app before the queue gets to it. (An empty
	// one is what a launcher killed before its first save left: it is made anew.)
	hd, err := spec.ParseHandle(sw.Apps[1].Handle)
	if err != nil {
		t.Fatal(err)
	}
	taken := filepath.Join(h.home, "local", "apps", hd.AppID)
	if err := os.MkdirAll(taken, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(taken, "launch.json"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var apps []spec.AppStatus
	testkit.Wait(t, 60*time.Second, "the queue done", func() (bool, string) {
		apps = sweepRows(t, h, sw.Sweep)
		return states(apps) == "SUCCEEDED FAILED SUCCEEDED", states(apps)
	})
	if !strings.Contains(apps[1].Msg, "launch failed") || !strings.Contains(apps[1].Msg, "already exists") {
		t.Errorf("the failed launch's row says %q", apps[1].Msg)
	}
	if r := h.exec("list", "--sweep", sw.Sweep); !strings.Contains(r.stdout, "launch failed") {
		t.Errorf("list --sweep does not say why:\n%s", r.stdout)
	}
}

// TestMetricsComparesASweep: one row per app, best loss first; the run whose loss is
// NaN and the one far above the sweep's median are marked; --csv has an app column.
func TestMetricsComparesASweep(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "--sweep", "v=1.2,9,1,nan,1.1", "utils.sh", "--",
		"sh", "-c", `for s in 1 2 3; do echo "step $s loss $1"; done`)
	if r.code != 0 {
		t.Fatalf("the sweep: %d %s", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	r = h.exec("metrics", "--sweep", id)
	if r.code != 0 {
		t.Fatalf("metrics --sweep: %d %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 7 {
		t.Fatalf("want a title, a header and 5 rows:\n%s", r.stdout)
	}
	var order []string
	for _, l := range lines[2:] {
		order = append(order, strings.Fields(l)[1])
	}
	if strings.Join(order, " ") != "1 1.1 1.2 9 nan" {
		t.Errorf("rows in order %v, want the best loss first:\n%s", order, r.stdout)
	}
	if !strings.Contains(lines[5], "! loss 9 at step 3: 7.8x the sweep's median 1.15") {
		t.Errorf("the outlier is not marked: %q", lines[5])
	}
	if !strings.Contains(lines[6], "! loss NaN at step 1") {
		t.Errorf("the NaN run is not marked: %q", lines[6])
	}
	if strings.Contains(strings.Join(lines[2:5], "\n"), "!") {
		t.Errorf("a healthy run is marked:\n%s", r.stdout)
	}
	r = h.exec("metrics", "--sweep", id, "--csv", "--sort", "loss")
	if !strings.HasPrefix(r.stdout, "app,handle,v,state,loss_last,loss_best,loss_best_step,alarm\n") {
		t.Errorf("csv header:\n%s", r.stdout)
	}
	// Two handles compare too.
	apps := sweepRows(t, h, id)
	r = h.exec("metrics", "--json", apps[0].Handle, apps[1].Handle)
	var rows []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 2 || rows[0]["app"] == nil {
		t.Errorf("metrics H1 H2 --json: %v %s %s", err, r.stdout, r.stderr)
	}
	if r := h.exec("metrics", "--sweep", id, "--sort", "acc"); r.code != ExitUsage || !strings.Contains(r.stderr, "--sort acc: no app has that metric (metrics: loss)") {
		t.Errorf("--sort of an unknown metric: %d %s", r.code, r.stderr)
	}
}

// TestSweepResumeAfterQueueKilled: the queue process itself is SIGKILLed; its queued
// apps say so, `wick sweep resume` starts it again, and the rest of the sweep runs.
// `wick sweep move` reorders what is queued.
func TestSweepResumeAfterQueueKilled(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "--detach", "--sweep", "rate=5,6,7,8", "--max-parallel", "1",
		"demo.train", "--replicas", "1", "--duration", "60s", "--progress=false")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	var apps []spec.AppStatus
	testkit.Wait(t, 20*time.Second, "first app running, its launch recorded", func() (bool, string) {
		apps = sweepRows(t, h, id)
		// Its scheduler lists it RUNNING a moment before the queue records it
		// launched: killed in between, the queue leaves it launching (resumed, it is
		// adopted, but counted among the 4 waiting).
		sw, err := sweep.NewStore(h.home).Load(id)
		return err == nil && sw.Entries[0].State == sweep.Launched && states(apps) == "RUNNING QUEUED QUEUED QUEUED", states(apps)
	})
	cancelAtEnd(t, h, id)
	// The last queued app goes first.
	if r := h.exec("sweep", "move", apps[3].Handle, "--to", "1"); r.code != 0 {
		t.Fatalf("sweep move: %d %s", r.code, r.stderr)
	}
	if r := h.exec("sweep", "move", apps[0].Handle); r.code != ExitUsage || !strings.Contains(r.stderr, "is not queued") {
		t.Errorf("moving a running app: %d %s", r.code, r.stderr)
	}
	sw, err := sweep.NewStore(h.home).Load(id)
	if err != nil || sw.Queue.PID == 0 {
		t.Fatalf("no queue process in the sweep: %v %+v", err, sw)
	}
	if err := syscall.Kill(sw.Queue.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.Wait(t, 20*time.Second, "the queued apps say the queue is not running", func() (bool, string) {
		r := h.exec("list", "--sweep", id)
		return strings.Contains(r.stdout, "queue not running (wick sweep resume "+id+")"), r.stdout
	})
	if r := h.exec("sweep", "resume", id); r.code != 0 || !strings.Contains(r.stderr, "queue resumed, 3 queued") {
		t.Fatalf("sweep resume: %d %s", r.code, r.stderr)
	}
	// The running app is adopted: cancelling it starts the moved app, not another.
	if r := h.exec("cancel", apps[0].Handle); r.code != 0 {
		t.Fatalf("cancel: %d %s", r.code, r.stderr)
	}
	// wick list --sweep lists in queue order: the moved app second.
	testkit.Wait(t, 20*time.Second, "the moved app running", func() (bool, string) {
		rows := sweepRows(t, h, id)
		s := states(rows)
		return s == "CANCELLED RUNNING QUEUED QUEUED" && rows[1].Handle == apps[3].Handle, s
	})
	if r := h.exec("cancel", id); r.code != 0 {
		t.Fatalf("cancel of the sweep: %d %s", r.code, r.stderr)
	}
}

// TestSweepQueueKill9LosesNoApp: the queue process is SIGKILLed again and again while
// it works (each time as soon as its sweep's journal has changed: mid-launch, mid-write
// of a change, mid-compaction) and started again with wick sweep resume: in the end
// every app of the sweep ran, each once; no app was lost, none launched twice.
func TestSweepQueueKill9LosesNoApp(t *testing.T) {
	t.Parallel()
	const n = 40
	h := newHarness(t)
	r := h.exec("run", "--detach", "--sweep", "msg="+seq(n), "--max-parallel", "2", "utils.echo")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	cancelAtEnd(t, h, id)
	store := sweep.NewStore(h.home)
	journal := filepath.Join(h.home, "sweeps", id, "journal")
	// stamp tells one state of the journal from another: a change appends to it, a
	// compaction replaces it.
	stamp := func() string {
		fi, err := os.Stat(journal)
		if err != nil {
			return err.Error()
		}
		st, _ := fi.Sys().(*syscall.Stat_t)
		return fmt.Sprint(fi.Size(), st.Ino)
	}
	kills := 0
	for round := 0; ; round++ {
		if round > 3*n {
			t.Fatalf("the sweep is not done after %d kills and resumes", kills)
		}
		sw, err := store.Load(id)
		if err != nil {
			t.Fatal(err)
		}
		if !sw.QueueRunning() {
			if sw.Waiting() == 0 {
				break
			}
			if r := h.exec("sweep", "resume", id); r.code != 0 {
				t.Fatalf("sweep resume: %d %s", r.code, r.stderr)
			}
			continue
		}
		if kills >= 12 {
			// Enough: let the queue finish.
			testkit.Wait(t, 30*time.Second, "the queue done", func() (bool, string) {
				sw, err := store.Load(id)
				return err == nil && !sw.QueueRunning(), fmt.Sprint(err)
			})
			continue
		}
		before := stamp()
		testkit.Wait(t, 20*time.Second, "the journal changed", func() (bool, string) {
			return stamp() != before || !sw.Queue.Alive(), stamp()
		})
		if err := syscall.Kill(sw.Queue.PID, syscall.SIGKILL); err == nil {
			kills++
		}
		testkit.Wait(t, 20*time.Second, "the queue gone", func() (bool, string) { return !sw.Queue.Alive(), "" })
	}
	if kills < 3 {
		t.Fatalf("the queue was killed %d times only: the test tested little", kills)
	}
	var apps []spec.AppStatus
	testkit.Wait(t, 30*time.Second, "every app ended", func() (bool, string) {
		apps = sweepRows(t, h, id)
		for _, a := range apps {
			if !a.State.Terminal() {
				return false, states(apps)
			}
		}
		return true, ""
	})
	for _, a := range apps {
		if a.State != spec.Succeeded {
			t.Errorf("%s: %s: %s", a.Handle, a.State, a.Msg)
		}
	}
	sw, err := sweep.NewStore(h.home).Load(id)
	if err != nil {
		t.Fatal(err)
	}
	if sw.Gen < 2 {
		t.Errorf("the journal was never compacted (generation %d): no kill could land in a compaction", sw.Gen)
	}
	log, err := os.ReadFile(filepath.Join(h.home, "sweeps", id, sweep.QueueLog))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range sw.Entries {
		if e.State != sweep.Launched || e.Error != "" {
			t.Errorf("%s: %s %s", e.Handle, e.State, e.Error)
		}
		if c := strings.Count(string(log), "launched "+e.Handle+"\n"); c > 1 {
			t.Errorf("%s launched %d times", e.Handle, c)
		}
	}
	if strings.Contains(string(log), "already exists") || t.Failed() {
		t.Errorf("queue.log:\n%s", log)
	}
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, "cut short") || strings.Contains(l, "taken over late") || strings.Contains(l, "journal:") {
			t.Log(l)
		}
	}
	t.Logf("%d kills; generation %d", kills, sw.Gen)
}

// TestSweepStopOnNaN: with --stop-on-nan the queue cancels the app whose loss went
// NaN, says why on its row, and leaves the healthy one running.
func TestSweepStopOnNaN(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "--detach", "--stop-on-nan", "--sweep", "v=1,nan", "utils.sh", "--",
		"sh", "-c", `echo "step 1 loss 2"; echo "step 2 loss $1"; sleep 60`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	cancelAtEnd(t, h, id)
	var apps []spec.AppStatus
	testkit.Wait(t, 30*time.Second, "the NaN app cancelled", func() (bool, string) {
		apps = sweepRows(t, h, id)
		return states(apps) == "RUNNING CANCELLED", states(apps)
	})
	if !strings.Contains(apps[1].Msg, "stopped by its sweep (--stop-on-nan): loss NaN at step 2") {
		t.Errorf("the stopped app's row says %q", apps[1].Msg)
	}
	if r := h.exec("list", "--sweep", id); !strings.Contains(r.stdout, "loss NaN at step 2") {
		t.Errorf("list --sweep does not say why:\n%s", r.stdout)
	}
}

// TestSweepOnSlurm: on slurm every app of the sweep is a job (Slurm queues them); the
// sweep knows them by their job ids once submitted.
func TestSweepOnSlurm(t *testing.T) {
	t.Parallel()
	needSlurm(t)
	h := newHarness(t)
	r := h.exec("run", "-s", "slurm", "--sweep", "msg=a,b", "utils.echo")
	if r.code != 0 || !strings.Contains(r.stderr, "2 SUCCEEDED") {
		t.Fatalf("the sweep: %d %s", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	apps := sweepRows(t, h, id)
	if states(apps) != "SUCCEEDED SUCCEEDED" || apps[0].Sweep.Values["msg"] != "a" || !strings.HasPrefix(apps[0].Handle, "slurm://") {
		t.Errorf("the sweep's apps: %+v", apps)
	}
	if r := h.exec("delete", id); r.code != 0 {
		t.Errorf("delete of the sweep: %d %s", r.code, r.stderr)
	}
}

// TestSweepAttachedCtrlC: Ctrl-C of an attached sweep cancels it (its queue first,
// then its running apps) and exits 1; every app ends CANCELLED.
func TestSweepAttachedCtrlC(t *testing.T) {
	h := newHarness(t)
	cmd := h.wickCmd(context.Background(), "run", "--sweep", "rate=1,2,3", "--max-parallel", "1",
		"demo.train", "--replicas", "1", "--duration", "60s", "--progress=false")
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the sweep id: %v", err)
	}
	id := strings.TrimSpace(line)
	cancelAtEnd(t, h, id)
	testkit.Wait(t, 20*time.Second, "first app running", func() (bool, string) {
		s := states(sweepRows(t, h, id))
		return s == "RUNNING QUEUED QUEUED", s
	})
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("exit %v, want 1", err)
	}
	if !strings.Contains(stderr.String(), "cancelling sweep "+id) || !strings.Contains(stderr.String(), "3 CANCELLED") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
	if s := states(sweepRows(t, h, id)); s != "CANCELLED CANCELLED CANCELLED" {
		t.Errorf("after Ctrl-C: %s", s)
	}
}

// TestSweepCompletion: a <TAB> offers a sweep's id where one is taken (wick cancel and
// delete beside the apps' handles, list --sweep, metrics --sweep, sweep resume), and
// sweep move offers the queued apps only.
func TestSweepCompletion(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "--detach", "--sweep", "rate=1,2", "--max-parallel", "1",
		"demo.train", "--replicas", "1", "--duration", "60s", "--progress=false")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	cancelAtEnd(t, h, id)
	var apps []spec.AppStatus
	testkit.Wait(t, 20*time.Second, "first app running", func() (bool, string) {
		apps = sweepRows(t, h, id)
		return states(apps) == "RUNNING QUEUED", states(apps)
	})
	offers := func(argv ...string) string {
		t.Helper()
		r := h.run(append([]string{"__complete"}, argv...)...)
		if r.code != 0 {
			t.Fatalf("__complete %v: %d %s", argv, r.code, r.stderr)
		}
		return r.stdout
	}
	want := id + "\tsweep of 2 apps: demo.train"
	for _, argv := range [][]string{
		{"cancel", ""}, {"cancel", "sweep-"}, {"delete", ""}, {"cancel", apps[0].Handle, ""},
		{"list", "--sweep", ""}, {"metrics", "--sweep", ""}, {"sweep", "resume", ""},
	} {
		if out := offers(argv...); !strings.Contains(out, want) {
			t.Errorf("%q<TAB> does not offer the sweep %s:\n%s", argv, id, out)
		}
	}
	if out := offers("cancel", ""); !strings.Contains(out, apps[0].Handle+"\t") {
		t.Errorf("cancel <TAB> no longer offers the apps' handles:\n%s", out)
	}
	if out := offers("cancel", id, ""); strings.Contains(out, id+"\t") {
		t.Errorf("cancel %s <TAB> offers the sweep again:\n%s", id, out)
	}
	if out := offers("cancel", "local_cwd://"); strings.Contains(out, id) {
		t.Errorf("cancel local_cwd://<TAB> offers a sweep id:\n%s", out)
	}
	out := offers("sweep", "move", "")
	if !strings.Contains(out, apps[1].Handle+"\tQUEUED") || strings.Contains(out, apps[0].Handle) || strings.Contains(out, id) {
		t.Errorf("sweep move <TAB> should offer the queued app %s only:\n%s", apps[1].Handle, out)
	}
}

// TestTypoAmongSeveralStopsThemAll: cancel or delete of several arguments with one (or
// two) naming nothing acts on none of them, and the one-line error names every bad
// one and says nothing was done. Before, a typo after a sweep id failed only once the
// sweep's queue had been emptied (its apps CANCELLED without having run), and of two
// typos only the first was named.
func TestTypoAmongSeveralStopsThemAll(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "--detach", "--sweep", "rate=1,2", "--max-parallel", "1",
		"demo.train", "--replicas", "1", "--duration", "60s", "--progress=false")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	cancelAtEnd(t, h, id)
	testkit.Wait(t, 20*time.Second, "first app running", func() (bool, string) {
		s := states(sweepRows(t, h, id))
		return s == "RUNNING QUEUED", s
	})
	r = h.exec("run", "--detach", "utils.sh", "--", "sleep", "60")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	app := strings.TrimSpace(r.stdout)
	cancelAtEnd(t, h, app)

	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"cancel", id, "nosuch-xq1"}, `no app id starts with "nosuch-xq1" (wick list shows them); nothing cancelled: every argument is read before any app is touched`},
		{[]string{"cancel", app, "nosuch-xq1", "nosuch-xq2"}, `no app id starts with "nosuch-xq1" (wick list shows them); no such app: no app id starts with "nosuch-xq2" (wick list shows them); nothing cancelled`},
		{[]string{"cancel", "--now", id, "sweep-zzzzzzzz"}, "no such sweep: sweep-zzzzzzzz; nothing cancelled"},
		{[]string{"delete", "--force", id, app, "nosuch-xq1"}, `no app id starts with "nosuch-xq1" (wick list shows them); nothing deleted`},
	} {
		r := h.exec(tc.argv...)
		if r.code == 0 {
			t.Errorf("%q: exit 0, want an error", tc.argv)
		}
		assertOneLineError(t, r.stderr, tc.want)
	}
	if s := states(sweepRows(t, h, id)); s != "RUNNING QUEUED" {
		t.Errorf("the sweep was acted on: %s", s)
	}
	if st := h.status(app); st.State != spec.Running {
		t.Errorf("the app was acted on: %s", st.State)
	}
}

// TestAppThatNeverRanSaysSo: describe of an app still queued in its sweep shows it
// QUEUED with nothing on stderr (before, it warned "metrics: reading the logs: ... is
// queued in sweep ...: no logs until it starts"); once it is cancelled in the queue,
// wick log and wick metrics say it never started.
func TestAppThatNeverRanSaysSo(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "--detach", "--sweep", "rate=1,2", "--max-parallel", "1",
		"demo.train", "--replicas", "1", "--duration", "60s", "--progress=false")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	cancelAtEnd(t, h, id)
	var apps []spec.AppStatus
	testkit.Wait(t, 20*time.Second, "first app running", func() (bool, string) {
		apps = sweepRows(t, h, id)
		return states(apps) == "RUNNING QUEUED", states(apps)
	})
	for _, argv := range [][]string{{"describe", apps[1].Handle}, {"describe", "--json", apps[1].Handle}} {
		r := h.exec(argv...)
		if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "QUEUED") {
			t.Errorf("%q: exit %d, stderr %q, stdout:\n%s", argv, r.code, r.stderr, r.stdout)
		}
	}

	// Cancelled in the queue, it never ran: its logs and metrics say so, where they
	// said "no such app" of an app wick status shows.
	if r := h.exec("cancel", apps[1].Handle); r.code != 0 {
		t.Fatalf("cancel: %d %s", r.code, r.stderr)
	}
	want := apps[1].Handle + " is CANCELLED and none of its replicas ever started (cancelled before it was launched): it has no logs"
	for _, argv := range [][]string{{"log", apps[1].Handle}, {"log", "-f", apps[1].Handle}, {"metrics", apps[1].Handle}} {
		r := h.exec(argv...)
		if r.code != ExitFailure || r.stdout != "" {
			t.Errorf("%q: exit %d, stdout %q", argv, r.code, r.stdout)
		}
		assertOneLineError(t, r.stderr, want)
	}
	if r := h.exec("describe", apps[1].Handle); r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "CANCELLED") {
		t.Errorf("describe of the cancelled app: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestSweepMovePastTheEnd: sweep move --to N past the queue's end puts the app last
// and says at which place; it said "place 99" of a queue of two.
func TestSweepMovePastTheEnd(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "--detach", "--sweep", "rate=1,2,3", "--max-parallel", "1",
		"demo.train", "--replicas", "1", "--duration", "60s", "--progress=false")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	cancelAtEnd(t, h, id)
	var apps []spec.AppStatus
	testkit.Wait(t, 20*time.Second, "first app running", func() (bool, string) {
		apps = sweepRows(t, h, id)
		return states(apps) == "RUNNING QUEUED QUEUED", states(apps)
	})
	first := apps[1].Handle
	if r := h.exec("sweep", "move", first, "--to", "99"); r.code != 0 || r.stderr != first+": place 2 of the queue of sweep "+id+" (the last)\n" {
		t.Errorf("move --to 99: %d %q", r.code, r.stderr)
	}
	if rows := sweepRows(t, h, id); rows[2].Handle != first || !strings.Contains(rows[2].Msg, "1 ahead of it") {
		t.Errorf("after the move: %s %q", rows[2].Handle, rows[2].Msg)
	}
	if r := h.exec("sweep", "move", first, "--to", "1"); r.code != 0 || r.stderr != first+": place 1 of the queue of sweep "+id+"\n" {
		t.Errorf("move --to 1: %d %q", r.code, r.stderr)
	}
}
