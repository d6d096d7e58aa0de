package apps_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/runner"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
	"github.com/wick-dev/wick/internal/viewtest"
	"github.com/wick-dev/wick/tui/apps"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/describe"
)

// The app list alone (internal/viewtest) over a real Runner and real local apps,
// supervised by this test binary.

func TestMain(m *testing.M) { viewtest.Main(m) }

func start(t *testing.T, r *runner.Runner, name string, argv ...string) spec.Handle {
	t.Helper()
	app := &spec.AppDef{Name: name, Roles: []spec.Role{{Name: name, Image: "/", Entrypoint: argv[0], Args: argv[1:], NumReplicas: 1}}}
	h, err := r.Run(context.Background(), app, "local_cwd", nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Cancel(context.Background(), h) })
	return h
}

// TestAppListCancelsWithConfirmation: the list shows each app with its handle and
// state; x on the running one asks first ("Cancel HANDLE?"), and the yes cancels it:
// a notice says so and the row turns CANCELLED.
func TestAppListCancelsWithConfirmation(t *testing.T) {
	r := viewtest.Runner(t)
	done := start(t, r, "quick", "echo", "hi")
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	if st, err := r.Wait(ctx, done, 20*time.Millisecond); err != nil || st.State != spec.Succeeded {
		t.Fatalf("quick: %v %v", st, err)
	}
	running := start(t, r, "sleeper", "sleep", "60")

	vc := viewtest.Context(t, 160, 30, time.Now(), apps.Actions(), describe.Actions())
	vc.Backend = r
	d := viewtest.New(t, vc, apps.New(vc))
	d.WaitFor(done.String(), "SUCCEEDED", running.String(), "RUNNING", "2 apps")

	// Filter down to the running app, then cancel it.
	d.Keys("/")
	d.Type(running.AppID)
	d.Keys("enter")
	d.WaitFor("▸ " + running.String())
	d.Keys("x")
	var confirm *common.ConfirmMsg
	for _, m := range d.Sent {
		if c, ok := m.(common.ConfirmMsg); ok {
			confirm = &c
		}
	}
	if confirm == nil || !strings.HasPrefix(confirm.Prompt, "Cancel "+running.String()+"?") {
		t.Fatalf("x sent %v, want a confirmation \"Cancel %s? ...\"", d.Sent, running)
	}
	d.Run(confirm.Yes)
	ns := d.Notices()
	if len(ns) == 0 || ns[len(ns)-1].Text != "cancelled "+running.String() {
		t.Errorf("notices %+v, want \"cancelled %s\"", ns, running)
	}
	d.WaitFor(running.String(), "CANCELLED")
}
