package describe_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
	"github.com/wick-dev/wick/internal/viewtest"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/describe"
)

// The describe view alone (internal/viewtest) over a real Runner and real local apps,
// supervised by this test binary.

func TestMain(m *testing.M) { viewtest.Main(m) }

// TestDescribeShowsAnEndedApp: a replica that printed and exited 3 is described as the
// user needs it: the handle, FAILED with the replica's exit code, the replica's host,
// log directory and error, and the AppDef it ran (entrypoint and arguments).
func TestDescribeShowsAnEndedApp(t *testing.T) {
	r := viewtest.Runner(t)
	app := &spec.AppDef{Name: "three", Roles: []spec.Role{{
		Name: "worker", Image: "/", Entrypoint: "sh", Args: []string{"-c", "echo hello; exit 3"}, NumReplicas: 1,
	}}}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	h, err := r.Run(ctx, app, "local_cwd", nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := r.Wait(ctx, h, 20*time.Millisecond); err != nil || st.State != spec.Failed {
		t.Fatalf("the app: %v, %v; want FAILED", st, err)
	}

	vc := viewtest.Context(t, 120, 40, time.Now(), describe.Actions())
	vc.Backend = r
	d := viewtest.New(t, vc, describe.New(vc, h))
	scr := d.WaitFor(h.String(), "FAILED")
	for _, want := range []string{
		"error:    worker/0: exit code 3", // why the app failed
		"worker/0  FAILED  3",             // the replica's row: state, exit code
		"hostname: localhost",             // where it ran
		"entrypoint:   sh",                // the AppDef it ran
		`args:         [-c, "echo hello; exit 3"]`,
	} {
		if !strings.Contains(scr, want) {
			t.Errorf("describe lacks %q:\n%s", want, scr)
		}
	}
}

// TestDescribeOfAMissingApp says the app does not exist, and how to go back.
func TestDescribeOfAMissingApp(t *testing.T) {
	r := viewtest.Runner(t)
	h := spec.Handle{Scheduler: "local_cwd", Session: "wick", AppID: "nosuch-app"}
	vc := viewtest.Context(t, 100, 20, time.Now(), describe.Actions())
	vc.Backend = r
	d := viewtest.New(t, vc, describe.New(vc, h))
	d.WaitFor("nosuch-app", "esc: back")
	// Esc is the root's (back): the view leaves it to the root.
	vc.Actions = common.NewRegistry(describe.Actions(), []common.Action{common.NewAction(common.ActBack, "back", []string{"esc"}, true)})
	d.Keys("esc")
	if len(d.Unhandled) != 1 || d.Unhandled[0] != common.ActBack {
		t.Errorf("esc: unhandled %v, want back left to the root", d.Unhandled)
	}
}

// TestDescribeShowsAlarmNotes: what the metrics reading gave up on (a user pattern too
// slow for the background scan) is shown under ALARMS beside the alarms, so a user
// knows the alarms may miss what the pattern would have read.
func TestDescribeShowsAlarmNotes(t *testing.T) {
	r := viewtest.Runner(t)
	// 300 lines of 1 KiB: a pattern of 60 groups takes milliseconds on each, far over
	// its mean budget of 50 µs a line, however loaded the machine.
	pad := strings.Repeat("a", 1000)
	app := &spec.AppDef{Name: "slowpat", Roles: []spec.Role{{
		Name: "tr", Image: "/", Entrypoint: "sh", NumReplicas: 1,
		Args: []string{"-c", `i=0; while [ $i -lt 300 ]; do echo "step $i loss 2.5 ` + pad + `"; i=$((i+1)); done; echo "step 300 loss nan"`},
	}}}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	h, err := r.Run(ctx, app, "local_cwd", nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := r.Wait(ctx, h, 20*time.Millisecond); err != nil || st.State != spec.Succeeded {
		t.Fatalf("the app: %v, %v; want SUCCEEDED", st, err)
	}
	cfg, err := metrics.ParseConfig(map[string]string{"pattern.slow": strings.Repeat("(.*)", 60) + "Z"})
	if err != nil {
		t.Fatal(err)
	}
	vc := viewtest.Context(t, 160, 40, time.Now(), describe.Actions())
	vc.Backend = r
	vc.Alarms = metrics.NewBook(r, cfg, "")
	d := viewtest.New(t, vc, describe.New(vc, h))
	scr := d.WaitFor("ALARMS", "note: pattern.slow is too slow")
	if !strings.Contains(scr, "loss on tr/0 is NaN at step 300") {
		t.Errorf("describe lacks the NaN alarm:\n%s", scr)
	}
}

// TestDescribeAt80Columns: at 80 columns the replica table of a running app cut its
// RSS ("12.…"). What is said elsewhere (ERROR: each replica's error is under its
// name) or says nothing (RESTARTS, all 0) gives way; each replica's CPU and RSS are
// whole.
func TestDescribeAt80Columns(t *testing.T) {
	r := viewtest.Runner(t)
	app := &spec.AppDef{Name: "sleepy-trainer", Roles: []spec.Role{{
		Name: "trainer", Image: "/", Entrypoint: "sh", Args: []string{"-c", "sleep 60"}, NumReplicas: 2,
	}}}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	h, err := r.Run(ctx, app, "local_cwd", nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Cancel(context.Background(), h) })

	vc := viewtest.Context(t, 80, 24, time.Now(), describe.Actions())
	vc.Backend = r
	d := viewtest.New(t, vc, describe.New(vc, h))
	row := regexp.MustCompile(`(?m)^trainer/([01]) +RUNNING .* \d+% +\d+(\.\d+)?[KMG]?i?B *$`)
	var scr string
	testkit.Wait(t, 20*time.Second, "both replicas' usage", func() (bool, string) {
		d.Send(common.TickMsg{Time: time.Now()})
		scr = d.Screen()
		return len(row.FindAllString(scr, -1)) == 2, scr
	})
	if !strings.Contains(scr, "handle:   "+h.String()) || !strings.Contains(scr, "RSS") {
		t.Errorf("describe at 80 columns:\n%s", scr)
	}
}
