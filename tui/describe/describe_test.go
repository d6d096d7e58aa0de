package describe_test

import (
	"context"
	"strings"
	"testing"
	"time"

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
		"error:    worker/0 failed with exit code 3", // why the app failed
		"worker/0  FAILED  3",                        // the replica's row: state, exit code
		"hostname: localhost",                        // where it ran
		"entrypoint:   sh",                           // the AppDef it ran
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
