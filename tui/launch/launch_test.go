package launch_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/viewtest"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/launch"
)

// The launch view alone (internal/viewtest) over a real Runner: real local apps,
// supervised by this test binary.

func TestMain(m *testing.M) { viewtest.Main(m) }

// TestLaunchSucceeds: the view says what it launches and where, then "launched
// HANDLE", and hands over to the app list with the new app selected and a notice
// for it.
func TestLaunchSucceeds(t *testing.T) {
	r := viewtest.Runner(t)
	app := &spec.AppDef{Name: "hello", Roles: []spec.Role{{Name: "hello", Image: "/", Entrypoint: "echo", Args: []string{"hi"}, NumReplicas: 1}}}
	info, err := r.DryRun(context.Background(), app, "local_cwd", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	vc := viewtest.Context(t, 100, 20, time.Now(), launch.Actions())
	vc.Backend = r
	d := viewtest.New(t, vc, launch.New(vc, info))
	want := "local_cwd://wick/" + info.AppID
	d.WaitFor("Launching hello on local_cwd", "✓ launched "+want)
	// The notice travels with the hand-over, so it shows over the app list and not
	// over this view (issue 25: notices belong to the view that raised them).
	var home, notice bool
	for _, m := range d.Sent {
		if m, ok := m.(common.HomeMsg); ok {
			home = m.Handle == want
			notice = m.Notice == "launched "+want
		}
	}
	if !home || !notice {
		t.Errorf("sent %v; want the app list with %s selected and the notice \"launched %s\"", d.Sent, want, want)
	}
}

// TestRelaunchOfAMissingApp fails, and says why in the view and in a notice.
func TestRelaunchOfAMissingApp(t *testing.T) {
	r := viewtest.Runner(t)
	h := spec.Handle{Scheduler: "local_cwd", Session: "wick", AppID: "gone-app"}
	vc := viewtest.Context(t, 100, 20, time.Now(), launch.Actions())
	vc.Backend = r
	d := viewtest.New(t, vc, launch.Relaunch(vc, h))
	scr := d.WaitFor("Relaunching local_cwd://wick/gone-app", "✗", "esc: back")
	if !strings.Contains(scr, "gone-app") {
		t.Errorf("the error does not name the app:\n%s", scr)
	}
	ns := d.Notices()
	if len(ns) != 1 || !ns[0].Err || !strings.HasPrefix(ns[0].Text, "launch failed: ") {
		t.Errorf("notices %+v, want one error \"launch failed: ...\"", ns)
	}
}
