package cli

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/internal/testkit"
)

// metricLines is what the test app prints: a torchrun-prefixed loop over two local
// ranks with a NaN on rank 1, a JSON line, a tqdm bar, a pid and a port.
const metricLines = `echo "INFO pid 4242 listening on port 29500"
echo "[0]:step 1 loss 2.5 lr 1e-4"
echo "[1]:step 1 loss 2.6 lr 1e-4"
echo "[0]:step 2 loss 2.25 lr 2e-4"
echo "[1]:step 2 loss nan lr 2e-4"
echo '[0]:{"step": 3, "loss": 2.0}'
printf 'Epoch 0: 100%%|##########| 3/3 [00:01<00:00, 3.00it/s, loss=2.00]\n'
echo "[0]:epoch 0 done: eval loss 2.1"`

// TestMetricsTableCSVJSONAndDescribe runs an app that prints metrics and reads them
// back as a table, CSV, JSON lines and in describe.
func TestMetricsTableCSVJSONAndDescribe(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "utils.sh", "sh", "-c", metricLines)
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)

	table := h.exec("metrics", handle)
	// RANKS counts torch's ranks: loss comes from ranks 0 and 1 and from the bar,
	// which has no torchrun prefix (the node's own line), so it is not a third rank.
	want := `NAME       RANKS  COUNT  FIRST   LAST    MIN     MAX
loss       2      6      2.5     2       2       2.6
lr         2      4      0.0001  0.0002  0.0001  0.0002
it/s       1      1      3       3       3       3
eval/loss  1      1      2.1     2.1     2.1     2.1

ALARMS
  ! loss on rank 1 is NaN at step 2
`
	if table.code != 0 || table.stdout != want {
		t.Errorf("table: exit %d\n%s\nwant\n%s\nstderr %s", table.code, table.stdout, want, table.stderr)
	}

	c := h.exec("metrics", "--csv", handle)
	recs, err := csv.NewReader(strings.NewReader(c.stdout)).ReadAll()
	if c.code != 0 || err != nil || len(recs) != 13 {
		t.Fatalf("--csv: exit %d, %v, %d records:\n%s", c.code, err, len(recs), c.stdout)
	}
	if got := strings.Join(recs[0], ","); got != "rank,step,time,name,value" {
		t.Errorf("header %q", got)
	}
	var nan, eval []string
	for _, rec := range recs[1:] {
		if rec[4] == "NaN" {
			nan = rec
		}
		if rec[3] == "eval/loss" {
			eval = rec
		}
	}
	if nan == nil || nan[0] != "rank 1" || nan[1] != "2" || nan[3] != "loss" {
		t.Errorf("NaN point %q", nan)
	}
	if eval == nil || eval[0] != "rank 0" || eval[1] != "3" || eval[4] != "2.1" {
		t.Errorf("eval_loss point %q: it should sit at the last step of its rank", eval)
	}

	j := h.exec("metrics", "--json", "-m", "loss", handle)
	lines := strings.Split(strings.TrimSpace(j.stdout), "\n")
	if j.code != 0 || len(lines) != 6 {
		t.Fatalf("--json -m loss: exit %d, %d lines:\n%s", j.code, len(lines), j.stdout)
	}
	for _, l := range lines {
		var p struct {
			Rank  string `json:"rank"`
			Step  *int64 `json:"step"`
			Time  string `json:"time"`
			Name  string `json:"name"`
			Value any    `json:"value"`
		}
		if err := json.Unmarshal([]byte(l), &p); err != nil || p.Name != "loss" || p.Time == "" {
			t.Errorf("JSON line %q: %v", l, err)
		}
	}

	d := h.exec("describe", handle)
	if d.code != 0 || !strings.Contains(d.stdout, "ALARMS\n  ! loss on rank 1 is NaN at step 2\n") {
		t.Errorf("describe lists no alarm: exit %d\n%s", d.code, d.stdout)
	}
	dj := h.exec("describe", "--json", handle)
	var desc struct {
		Alarms []struct {
			Kind, Metric, Rank, Message string
			Step                        int64
			Value                       any
		} `json:"metric_alarms"`
	}
	if err := json.Unmarshal([]byte(dj.stdout), &desc); err != nil || len(desc.Alarms) != 1 ||
		desc.Alarms[0].Kind != "nan" || desc.Alarms[0].Rank != "sh/0:1" || desc.Alarms[0].Value != "NaN" {
		t.Errorf("describe --json alarms: %v %+v\n%s", err, desc.Alarms, dj.stdout)
	}
}

// TestMetricsFollowsARunningApp follows demo.train with -t until it ends: every step of
// every replica is there.
func TestMetricsFollowsARunningApp(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "--detach", "demo.train", "--replicas", "2", "--steps", "300", "--rate", "200", "--steps_per_epoch", "100", "--progress", "false")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	f := h.exec("metrics", "-t", "--csv", "-m", "loss,eval_loss,train_loss,lr", handle)
	if f.code != 0 {
		t.Fatalf("metrics -t: %d %s", f.code, f.stderr)
	}
	count := map[string]int{}
	vals := map[string][]float64{} // rank 0's values by name
	for _, l := range strings.Split(strings.TrimSpace(f.stdout), "\n")[1:] {
		rec := strings.Split(l, ",")
		count[rec[0]+" "+rec[3]]++
		if rec[0] == "trainer/0" {
			v, _ := strconv.ParseFloat(rec[4], 64)
			vals[rec[3]] = append(vals[rec[3]], v)
		}
	}
	// demo.train looks like training: lr warms up for 100 steps then decays, the loss
	// falls, the eval loss sits above the train loss.
	lr, loss := vals["lr"], vals["loss"]
	if len(lr) != 300 || !(lr[0] < lr[50] && lr[50] < lr[99] && lr[99] > lr[299]) {
		t.Errorf("lr is no warm-up then decay: %v", lr)
	}
	if len(loss) < 300 || !(loss[0] > loss[299]+0.5) {
		t.Errorf("loss does not fall: %v", loss)
	}
	for i, ev := range vals["eval/loss"] {
		if tr := vals["train/loss"]; i >= len(tr) || ev <= tr[i] {
			t.Errorf("epoch %d: eval loss %v not above train loss %v", i, ev, tr)
		}
	}
	// 300 step lines and the final line's loss, and an eval loss per epoch, per rank.
	for _, k := range []string{"trainer/0 loss", "trainer/1 loss"} {
		if count[k] != 301 {
			t.Errorf("%s: %d points, want 301 (%v)", k, count[k], count)
		}
	}
	for _, k := range []string{"trainer/0 eval/loss", "trainer/1 eval/loss"} {
		if count[k] != 3 {
			t.Errorf("%s: %d points, want 3 (%v)", k, count[k], count)
		}
	}
}

// TestMetricsCSVIsTheLogsInOrder: `wick metrics --csv` writes, in order, the points
// that the lines `wick log --json` prints give when each is added to a Store in turn,
// over thousands of lines of three replicas (progress bars and warnings included):
// extracting the values ahead (streamMetrics) changes nothing of the output.
func TestMetricsCSVIsTheLogsInOrder(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "demo.train", "--replicas", "3", "--steps", "2000", "--rate", "20000", "--steps_per_epoch", "500")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	lg := h.exec("log", "--json", handle)
	if lg.code != 0 {
		t.Fatalf("log --json: %d %s", lg.code, lg.stderr)
	}
	var want bytes.Buffer
	w := bufio.NewWriter(&want)
	w.WriteString("rank,step,time,name,value\n")
	store := metrics.NewStore(metrics.DefaultConfig())
	names := metrics.NewNamerOf(nil)
	pw := &pointWriter{w: w, csv: true, name: names.Name}
	var p metrics.Parsed
	lines := strings.Split(strings.TrimSpace(lg.stdout), "\n")
	for _, text := range lines {
		var l sched.Line
		if err := json.Unmarshal([]byte(text), &l); err != nil {
			t.Fatalf("log --json line %q: %v", text, err)
		}
		names.Observe(l)
		if l.Pending {
			continue
		}
		// Store.Add, point by point: a bar's earlier drawings, then the line's own.
		store.Extractor().Extract(l.Text, &p)
		rank := metrics.Rank{Role: l.Role, Replica: l.Replica, Local: p.Local}
		point := func(info metrics.LineInfo, samples []metrics.Sample) {
			q := metrics.Parsed{Samples: samples, LineInfo: info}
			store.AddLine(rank, l.Time, &q)
			if len(samples) > 0 {
				pw.write(rank, store.StepOf(rank, &q), l.Time, samples)
			}
		}
		p.Drawings(point)
		point(p.LineInfo, p.Samples)
	}
	w.Flush()
	got := h.exec("metrics", "--csv", handle)
	if got.code != 0 {
		t.Fatalf("metrics --csv: %d %s", got.code, got.stderr)
	}
	if got.stdout != want.String() {
		g, wl := strings.Split(got.stdout, "\n"), strings.Split(want.String(), "\n")
		for i := range min(len(g), len(wl)) {
			if g[i] != wl[i] {
				t.Fatalf("line %d of %d (want %d):\n got  %s\n want %s", i+1, len(g), len(wl), g[i], wl[i])
			}
		}
		t.Fatalf("%d lines, want %d", len(g), len(wl))
	}
	if n := strings.Count(got.stdout, "\n"); len(lines) < 6000 || n < 4*6000 {
		t.Fatalf("%d log lines, %d points: want thousands of lines, four values or more each", len(lines), n)
	}
}

// TestMetricsBadInput: every mistake is one line on stderr and a non-zero exit.
func TestMetricsBadInput(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "utils.sh", "sh", "-c", "echo step 1 loss 2")
	handle := strings.TrimSpace(r.stdout)
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"metrics", "--csv", "--json", handle}, 2, "wick: --csv and --json exclude each other"},
		{[]string{"metrics", "local_cwd://wick/nope-bcdfghjklmnp"}, 2, "wick: no such app: "}, // 2: no such app (docs/json.md)
		{[]string{"metrics", "nonsense"}, 2, "wick: no such app: "},
		{[]string{"--config", "[wick:metrics]\npattern.acc = acc (\\d+\n", "metrics", handle}, 1, "[wick:metrics] pattern.acc: pattern acc: error parsing regexp: missing closing )"},
	} {
		args := c.args
		if args[0] == "--config" {
			if err := os.WriteFile(filepath.Join(h.work, ".torchxconfig"), []byte(args[1]), 0o644); err != nil {
				t.Fatal(err)
			}
			args = args[2:]
		}
		got := h.exec(args...)
		if got.code != c.code || !strings.Contains(got.stderr, c.msg) || strings.Count(got.stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, got.code, got.stderr, c.code, c.msg)
		}
	}
	// describe still works with a broken [wick:metrics], with a warning.
	if d := h.exec("describe", handle); d.code != 0 || !strings.Contains(d.stderr, "wick: metrics: ") {
		t.Errorf("describe: exit %d, stderr %q", d.code, d.stderr)
	}
}

// TestMetricsOfAMistypedName: -m naming a metric no line has (a typo: -m lss) is one
// line and exit 1, where it printed "no metrics found" (nothing with --csv) and exited
// 0; a list of which some match prints their table and warns of the others.
func TestMetricsOfAMistypedName(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "utils.sh", "sh", "-c", "echo step 1 loss 2 lr 0.1; echo step 2 loss 1.5 lr 0.1")
	handle := strings.TrimSpace(r.stdout)
	if r.code != 0 || handle == "" {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	miss := "-m lss matched no metric in the logs of " + handle + " (without -m, wick metrics lists the metrics found)"
	for _, c := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"metrics", "-m", "lss", handle}, 1, "", "wick: " + miss + "\n"},
		{[]string{"metrics", "--csv", "-m", "lss", handle}, 1, "rank,step,time,name,value\n", "wick: " + miss + "\n"},
		{[]string{"metrics", "-m", "loss,lss", handle}, 0, "loss", "wick: warning: -m lss matched no metric in the logs of " + handle + "\n"},
		{[]string{"metrics", "-m", "loss", handle}, 0, "loss", ""},
	} {
		got := h.exec(c.args...)
		if got.code != c.code || got.stderr != c.stderr || !strings.Contains(got.stdout, c.stdout) || c.stdout == "" && got.stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d, %q, %q", c.args, got.code, got.stdout, got.stderr, c.code, c.stdout, c.stderr)
		}
	}
}

// TestMetricsOfTheDDPExample trains the real DDP example (examples/ddp, torch) on two
// workers and reads its losses back through torchrun's [N]: prefixes.
func TestMetricsOfTheDDPExample(t *testing.T) {
	// Waits on torch processes of its own (own WICK_HOME, work dir and ports): it may
	// overlap the other DDP tests.
	t.Parallel()
	h := ddpHarness(t)
	r := h.exec(ddpArgs(t, "1x2", "--epochs", "3", "--samples", "256")...)
	if r.code != 0 {
		t.Fatalf("training failed: exit %d\n%s", r.code, r.stderr)
	}
	handle := handleOf(t, r)
	c := h.exec("metrics", "--csv", "-m", "loss", handle)
	if c.code != 0 {
		t.Fatalf("metrics: %d %s", c.code, c.stderr)
	}
	// Every worker's epoch losses, attributed to its global rank: 3 each.
	count := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(c.stdout), "\n")[1:] {
		rec := strings.Split(l, ",")
		if v, err := strconv.ParseFloat(rec[4], 64); err != nil || !(v >= 0) {
			t.Errorf("loss %q", l)
		}
		count[rec[0]]++
	}
	for _, rank := range []string{"rank 0", "rank 1"} {
		if count[rank] < 3 {
			t.Errorf("%s: %d losses, want at least 3 (%v)\n%s", rank, count[rank], count, c.stdout)
		}
	}
	table := h.exec("metrics", handle)
	t.Logf("wick metrics of the DDP example:\n%s", table.stdout)
	// torchrun's own configuration (min_nodes: 1, timeout: 900) is not a metric.
	if table.code != 0 || !strings.Contains(table.stdout, "\nloss ") || strings.Contains(table.stdout, "ALARMS") ||
		strings.Contains(table.stdout, "min_nodes") || strings.Contains(table.stdout, "timeout") {
		t.Errorf("table: %d\n%s", table.code, table.stdout)
	}
}

// TestMetricsOnDocker reads the metrics of a local_docker app, whose logs come from the
// Docker Engine rather than files.
func TestMetricsOnDocker(t *testing.T) {
	img := dockerImage(t)
	h := newHarness(t)
	r := h.exec("run", "-s", "local_docker", "utils.sh", "--image", img, "--entrypoint", "/helper", "--",
		"echo", "step 7 loss nan lr 0.25")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { h.exec("delete", "--force", handle) })
	c := h.exec("metrics", "--csv", handle)
	lines := strings.Split(strings.TrimSpace(c.stdout), "\n")
	if c.code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[1], "sh/0,7,") || !strings.HasSuffix(lines[1], ",loss,NaN") ||
		!strings.HasSuffix(lines[2], ",lr,0.25") {
		t.Fatalf("metrics --csv: exit %d\n%s\n%s", c.code, c.stdout, c.stderr)
	}
	if d := h.exec("describe", handle); !strings.Contains(d.stdout, "ALARMS\n  ! loss on sh/0 is NaN at step 7\n") {
		t.Errorf("describe lists no alarm:\n%s", d.stdout)
	}
}

// TestMetricsFollowTableLive: wick metrics -t on a terminal (tmux) redraws its table in
// place as a running app's values change, and Ctrl-C ends it with status 0.
func TestMetricsFollowTableLive(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "--detach", "demo.train", "--replicas", "2", "--rate", "20", "--duration", "60s", "--progress=false", "--warnings=false")
	if r.code != 0 {
		t.Fatalf("run: exit %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { h.exec("cancel", handle) })
	lt := startLiveTerm(t, h, "metrics -t -m loss,lr "+handle)
	counts := map[string]bool{}
	deadline := time.Now().Add(testkit.Scale(30 * time.Second))
	for len(counts) < 2 {
		screen := lt.Screen()
		if n := strings.Count(screen, "NAME"); n > 1 {
			t.Fatalf("the table is drawn %d times, want once, in place:\n%s", n, screen)
		}
		for _, l := range strings.Split(screen, "\n") {
			if f := strings.Fields(l); len(f) == 7 && f[0] == "loss" {
				counts[f[2]] = true
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the table did not change (counts %v):\n%s", counts, screen)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Ctrl-C stops following; the command ends well, its table on the screen.
	lt.Keys("C-c")
	status := lt.WaitExit(30 * time.Second)
	screen := lt.Screen()
	if status != "0" {
		t.Fatalf("after Ctrl-C, wick metrics -t: exit status %q, want 0:\n%s", status, screen)
	}
	if !strings.Contains(screen, "\nloss  2  ") && !strings.HasPrefix(screen, "loss  2  ") {
		t.Fatalf("after Ctrl-C, no table:\n%s", screen)
	}
}

// TestMetricsUnitsAndSettings: a value's unit is shown with its metric, a value that
// stayed the same on every line is listed apart as a setting, and a user pattern too
// slow for its budget is given up with a notice.
func TestMetricsUnitsAndSettings(t *testing.T) {
	h := newHarness(t)
	pad := strings.Repeat("a", 4000)
	r := h.exec("run", "utils.sh", "sh", "-c", `echo "step 1 loss 2.5 lr 0.001 time 30.5ms `+pad+`"; echo "step 2 loss 2.4 lr 0.001 time 31ms"; echo "Test set: Average loss: 0.0512, Accuracy: 9800/10000 (98%)"`)
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	// 127 groups (the most a 512-character pattern holds) on a line of 4 KiB (the most
	// the metrics read of a line): each step of the regexp's NFA copies every group's
	// bounds, so this takes tens of ms on a quiet machine, far over a line's budget
	// (5 ms); a loaded machine only takes longer. (60 groups could come in under it.)
	slow := strings.Repeat("(.*)", 127) + "Z"
	if err := os.WriteFile(filepath.Join(h.work, ".torchxconfig"), []byte("[wick:metrics]\npattern.slow = "+slow+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := h.exec("metrics", handle)
	want := `NAME           UNIT  RANKS  COUNT  FIRST   LAST    MIN     MAX
loss                 1      2      2.5     2.4     2.4     2.5
time           ms    1      2      30.5    31      30.5    31
test/loss            1      1      0.0512  0.0512  0.0512  0.0512
test/accuracy        1      1      0.98    0.98    0.98    0.98

SETTING  VALUE
lr       0.001
`
	if got.code != 0 || got.stdout != want {
		t.Errorf("exit %d\n%s\nwant\n%s\nstderr %s", got.code, got.stdout, want, got.stderr)
	}
	if !strings.HasPrefix(got.stderr, "wick: metrics: pattern.slow is too slow (") || strings.Count(got.stderr, "\n") != 1 {
		t.Errorf("stderr %q, want the slow pattern's notice", got.stderr)
	}
}

// TestMetricsEpochsAndSummary: wick metrics reads a step within an epoch as the chart
// does, counted over epochs (timm's `Train: 1 [ 0/100]` is at 100, after epoch 0's
// 50), and a summary line (` * Acc@1 ...`) in the context of the lines before it.
func TestMetricsEpochsAndSummary(t *testing.T) {
	h := newHarness(t)
	r := h.exec("run", "utils.sh", "sh", "-c", `printf '%s\n' \
		"Train: 0 [   0/100 (  0%)]  Loss: 6.95 (6.95)" \
		"Train: 0 [  50/100 ( 50%)]  Loss: 6.50 (6.60)" \
		"Test: [   0/10]  Loss:   6.875 ( 6.875)  Acc@1:   0.195 (  0.195)" \
		" *   Acc@1 0.200 Acc@5 0.900" \
		"Train: 1 [   0/100 (  0%)]  Loss: 6.10 (6.10)"`)
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	c := h.exec("metrics", "--csv", strings.TrimSpace(r.stdout))
	recs, err := csv.NewReader(strings.NewReader(c.stdout)).ReadAll()
	if c.code != 0 || err != nil || len(recs) < 2 {
		t.Fatalf("--csv: exit %d, %v:\n%s%s", c.code, err, c.stdout, c.stderr)
	}
	var got []string
	for _, rec := range recs[1:] {
		got = append(got, rec[3]+"@"+rec[1]+"="+rec[4])
	}
	// The test lines name no epoch and count their own batches: they are at the latest
	// training step (50), as the summary after them is.
	want := []string{"loss@0=6.95", "loss@50=6.5", "test/loss@50=6.875", "test/acc@1@50=0.195",
		"test/acc@1@50=0.2", "test/acc@5@50=0.9", "loss@100=6.1"}
	if !slices.Equal(got, want) {
		t.Errorf("points %q\nwant %q", got, want)
	}
}
