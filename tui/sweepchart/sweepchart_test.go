package sweepchart_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/internal/testkit"
	"github.com/wick-dev/wick/internal/viewtest"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/sweepchart"
)

// The sweep chart alone (internal/viewtest) over a real Runner: real local apps,
// supervised by this test binary, tied to a sweep in the Runner's store as the queue
// leaves them once launched.

func TestMain(m *testing.M) { viewtest.Main(m) }

// TestSweepChartOverlaysEveryApp: a sweep of four apps that ran (loss 1.2, 9, 1 and
// NaN at steps 1-3) and one still queued. The chart draws every app's loss on one set
// of axes, its legend naming each app by its value, the best first, the app far above
// the median and the NaN one marked; M, L, E and Z change what the rank chart's keys
// change; t shows the table, sorted by the best loss, with why each alarm is raised.
func TestSweepChartOverlaysEveryApp(t *testing.T) {
	r := viewtest.Runner(t)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	script := `for s in 1 2 3; do echo "step $s loss $1 acc 0.$s"; done`
	const id = "sweep-t3stch4r"
	sw := &sweep.Sweep{ID: id, Created: time.Now(), Component: "utils.sh", Scheduler: "local_cwd", Session: spec.DefaultSession, Names: []string{"v"}}
	for i, v := range []string{"1.2", "9", "1", "nan"} {
		app := &spec.AppDef{Name: "sh-v" + v, Roles: []spec.Role{{
			Name: "sh", Image: "/", Entrypoint: "sh", Args: []string{"-c", script, "sh", v}, NumReplicas: 1,
		}}}
		sweep.SetRef(app, &spec.SweepRef{ID: id, Names: []string{"v"}, Values: map[string]string{"v": v}})
		h, err := r.Run(ctx, app, "local_cwd", nil, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if st, err := r.Wait(ctx, h, 20*time.Millisecond); err != nil || st.State != spec.Succeeded {
			t.Fatalf("%s: %v, %v; want SUCCEEDED", h, st, err)
		}
		sw.Entries = append(sw.Entries, sweep.Entry{Index: i, Values: []string{v}, Name: app.Name, Handle: h.String(), State: sweep.Launched})
	}
	sw.Entries = append(sw.Entries, sweep.Entry{Index: 4, Values: []string{"3"}, Name: "sh-v3", Handle: "local_cwd://wick/sh-v3-queued0000", State: sweep.Queued})
	if _, err := r.Sweeps().Create(sw, nil); err != nil {
		t.Fatal(err)
	}

	vc := viewtest.Context(t, 100, 24, time.Now(), sweepchart.Actions())
	vc.Backend = r
	d := viewtest.New(t, vc, sweepchart.New(vc, id))
	scr := d.WaitFor("sweep "+id+" · 5 apps: 1 queued, 4 succeeded · t: table", "loss · 1 more metric (M)")
	for _, want := range []string{
		"⚠ 2 alarms", // 9 (7.5x the median 1.2 at step 3) and NaN
		// The legend: the best first, each app by its value and its last loss.
		"● v=1 1  ● v=1.2 1.2  ● ⚠ v=9 9  ● ⚠ v=nan NaN",
	} {
		if !strings.Contains(scr, want) {
			t.Errorf("the chart lacks %q:\n%s", want, scr)
		}
	}
	if !strings.Contains(scr, "1                                          step                                          3") {
		t.Errorf("the x axis is not the steps 1 to 3:\n%s", scr)
	}
	if !strings.Contains(scr, "    9┤") && !strings.Contains(scr, "        9┤") {
		t.Errorf("the y axis does not go up to the worst app's 9:\n%s", scr)
	}

	d.Keys("L")
	d.Contains("loss · log scale · 1 more metric (M)")
	d.Keys("E")
	d.Contains("loss · log scale · smoothed 0.6 · 1 more metric (M)")
	d.Keys("Z")
	d.Contains("loss · log scale · smoothed 0.6 · last 10000 steps · 1 more metric (M)")
	d.Keys("M")
	d.Contains("acc · log scale · smoothed 0.6 · last 10000 steps · 1 more metric (M)")
	d.Lacks("alarm") // every app's accuracy is the same
	d.Keys("M")

	// The table: `wick metrics --sweep -m loss`'s (render.Compare), wide enough not to
	// be cut.
	vc.Width = 160
	d.Keys("t")
	scr = d.Screen()
	lines := strings.Split(scr, "\n")
	if strings.TrimSpace(lines[2]) != "5 apps · sorted by the lowest best loss" {
		t.Errorf("the table's title: %q\n%s", lines[2], scr)
	}
	want := [][]string{
		{"APP", "V", "STATE", "LAST", "LOSS", "BEST", "@STEP", "ALARM"},
		{"sh-v1-", "1", "SUCCEEDED", "1", "1", "1"},
		{"sh-v1.2-", "1.2", "SUCCEEDED", "1.2", "1.2", "1"},
		{"sh-v9-", "9", "SUCCEEDED", "9", "9", "1", "!", "loss", "9", "at", "step", "3:", "7.5x", "the", "sweep's", "median", "1.2"},
		{"sh-vnan-", "nan", "SUCCEEDED", "NaN", "-", "-", "!", "loss", "NaN", "at", "step", "1"},
		{"sh-v3-queued0000", "3", "QUEUED", "-", "-", "-"},
	}
	if len(lines) < 3+len(want) {
		t.Fatalf("the table:\n%s", scr)
	}
	for i, w := range want {
		got := strings.Fields(strings.TrimPrefix(lines[3+i], "▸"))
		if len(got) != len(w) {
			t.Errorf("row %d: %q, want %q\n%s", i, got, w, scr)
			continue
		}
		for j := range w {
			if got[j] != w[j] && !(j == 0 && strings.HasPrefix(got[j], w[j])) { // an app id ends in a random part
				t.Errorf("row %d, cell %d: %q, want %q\n%s", i, j, got[j], w[j], scr)
			}
		}
	}
	if !strings.HasPrefix(lines[4], "▸ sh-v1-") {
		t.Errorf("the best app is not the one selected:\n%s", scr)
	}
	d.Keys("down", "down")
	if !strings.HasPrefix(strings.Split(d.Screen(), "\n")[6], "▸ sh-v9-") {
		t.Errorf("down, down does not select the third app:\n%s", d.Screen())
	}
	// x on an app that ended says so; l opens its logs.
	d.Keys("x")
	if n := d.Notices(); len(n) == 0 || !strings.Contains(n[len(n)-1].Text, "sh-v9-") || !strings.Contains(n[len(n)-1].Text, "has already ended (SUCCEEDED)") {
		t.Errorf("x on a finished app: %v", n)
	}
	d.Keys("l")
	if last, ok := d.Sent[len(d.Sent)-1].(common.OpenLogsMsg); !ok || !strings.Contains(last.Handle, "/sh-v9-") {
		t.Errorf("l on the third app: %#v", d.Sent[len(d.Sent)-1])
	}
	vc.Width = 100
	d.Keys("t")
	d.Contains("● v=1 1")
}

// TestSweepChartCancelsTheAppSelected: x on a running app of the table asks to cancel
// it (to free its slot), and the app is cancelled once the user says yes.
func TestSweepChartCancelsTheAppSelected(t *testing.T) {
	r := viewtest.Runner(t)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	const id = "sweep-c4nc3l00"
	app := &spec.AppDef{Name: "sh-v50", Roles: []spec.Role{{
		Name: "sh", Image: "/", Entrypoint: "sh", Args: []string{"-c", `echo "step 1 loss 50"; exec sleep 60`}, NumReplicas: 1,
	}}}
	sweep.SetRef(app, &spec.SweepRef{ID: id, Names: []string{"v"}, Values: map[string]string{"v": "50"}})
	h, err := r.Run(ctx, app, "local_cwd", nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	sw := &sweep.Sweep{ID: id, Created: time.Now(), Component: "utils.sh", Scheduler: "local_cwd", Session: spec.DefaultSession, Names: []string{"v"},
		Entries: []sweep.Entry{{Index: 0, Values: []string{"50"}, Name: app.Name, Handle: h.String(), State: sweep.Launched}}}
	if _, err := r.Sweeps().Create(sw, nil); err != nil {
		t.Fatal(err)
	}
	vc := viewtest.Context(t, 120, 20, time.Now(), sweepchart.Actions())
	vc.Backend = r
	d := viewtest.New(t, vc, sweepchart.New(vc, id))
	d.WaitFor("1 running", "● v=50 50")
	d.Keys("x")
	if n := d.Notices(); len(n) == 0 || n[len(n)-1].Text != "t shows the table, to select an app" {
		t.Errorf("x on the chart: %v", n)
	}
	d.Keys("t", "x")
	confirm, ok := d.Sent[len(d.Sent)-1].(common.ConfirmMsg)
	if !ok || !strings.HasPrefix(confirm.Prompt, "Cancel "+h.String()+"?") {
		t.Fatalf("x on the running app: %#v", d.Sent[len(d.Sent)-1])
	}
	d.Run(confirm.Yes)
	d.WaitFor("CANCELLED")
}
