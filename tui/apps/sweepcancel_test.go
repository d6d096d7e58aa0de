package apps_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/internal/testkit"
	"github.com/wick-dev/wick/internal/viewtest"
	"github.com/wick-dev/wick/tui/apps"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/describe"
)

// TestSweepRowCancelStartsNoQueuedApp: a real queue (max 1 at a time) runs the first
// of four sleeping apps of a sweep; x on the sweep's row asks once for the whole sweep
// (1 running, 3 queued), and after the yes the running app is CANCELLED and none of
// the queued apps ever starts: the queue ends with them taken out, never launched.
func TestSweepRowCancelStartsNoQueuedApp(t *testing.T) {
	r := viewtest.Runner(t)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	id := sweep.NewID()
	sw := &sweep.Sweep{ID: id, Created: time.Now(), Component: "utils.sh", Scheduler: "local_cwd",
		Session: spec.DefaultSession, Names: []string{"v"}, MaxParallel: 1}
	var plans []sweep.Plan
	for i := range 4 {
		v := fmt.Sprint(i)
		app := &spec.AppDef{Name: "sleep-v" + v, Roles: []spec.Role{{Name: "sleep", Image: "/", Entrypoint: "sleep", Args: []string{"60"}, NumReplicas: 1}}}
		sweep.SetRef(app, &spec.SweepRef{ID: id, Names: []string{"v"}, Values: map[string]string{"v": v}})
		info, err := r.DryRun(ctx, app, "local_cwd", nil, "")
		if err != nil {
			t.Fatal(err)
		}
		plans = append(plans, sweep.PlanOf(info))
		h := spec.Handle{Scheduler: "local_cwd", Session: info.Session, AppID: info.AppID}
		sw.Entries = append(sw.Entries, sweep.Entry{Index: i, Values: []string{v}, Name: app.Name, Handle: h.String(), State: sweep.Queued})
	}
	if _, err := r.Sweeps().Create(sw, plans); err != nil {
		t.Fatal(err)
	}
	q := &sweep.Queue{Store: r.Sweeps(), ID: id, Launcher: r, Logf: t.Logf}
	qdone := make(chan error, 1)
	go func() { qdone <- q.Run(ctx) }()
	t.Cleanup(func() {
		for _, e := range sw.Entries {
			if h, err := spec.ParseHandle(e.Handle); err == nil {
				_ = r.Cancel(context.Background(), h)
			}
		}
	})
	first := sw.Entries[0].Handle
	testkit.Wait(t, testkit.Scale(20*time.Second), "the first app running", func() (bool, string) {
		h, _ := spec.ParseHandle(first)
		st, err := r.Status(ctx, h)
		return err == nil && st.State == spec.Running, fmt.Sprint(st, err)
	})

	vc := viewtest.Context(t, 160, 30, time.Now(), apps.Actions(), describe.Actions())
	vc.Backend = r
	d := viewtest.New(t, vc, apps.New(vc))
	d.WaitFor("+ "+id, "sweep of 4: 1 running, 3 queued")
	// One queued app is cancelled from elsewhere after the list was read: the
	// confirmation counts what is, when it is asked, not the list's last reading.
	last, _ := spec.ParseHandle(sw.Entries[3].Handle)
	if err := r.Cancel(ctx, last); err != nil {
		t.Fatal(err)
	}
	d.Contains("sweep of 4: 1 running, 3 queued") // the list has not read it again
	d.Keys("x")
	var confirm *common.ConfirmMsg
	for _, m := range d.Sent {
		if c, ok := m.(common.ConfirmMsg); ok {
			confirm = &c
		}
	}
	want := "Cancel sweep " + id + ": 2 queued and 1 running app?"
	if confirm == nil || !strings.HasPrefix(confirm.Prompt, want) {
		t.Fatalf("x on the sweep's row sent %v, want a confirmation %q", d.Sent, want)
	}
	d.Run(confirm.Yes)
	ns := d.Notices()
	if len(ns) == 0 || ns[len(ns)-1].Text != "cancelled 1 app (2 queued: never started)" {
		t.Errorf("notices %+v, want \"cancelled 1 app (2 queued: never started)\"", ns)
	}
	select {
	case err := <-qdone:
		if err != nil {
			t.Fatalf("the queue: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the queue did not end after the sweep was cancelled")
	}
	got, err := r.Sweeps().Load(id)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range got.Entries {
		if i > 0 && (e.State != sweep.Removed || !e.LaunchStarted.IsZero()) {
			t.Errorf("%s: %s (launch started %v): a queued app started after the cancel", e.Handle, e.State, e.LaunchStarted)
		}
	}
	h, _ := spec.ParseHandle(first)
	if st, err := r.Wait(ctx, h, 20*time.Millisecond); err != nil || st.State != spec.Cancelled {
		t.Errorf("the running app: %v, %v; want CANCELLED", st, err)
	}
	d.WaitFor(id, "sweep of 4: 4 cancelled")
}
