package tui_test

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestAppListShowsUsage launches an app whose two replicas each hold 64 MiB and burn a
// core, and checks that the app list gets a CPU/RSS column whose cell for the app
// shows CPU > 0 and more than the 128 MiB it allocated, and the describe view shows
// each replica's; once the app is cancelled the column goes.
func TestAppListShowsUsage(t *testing.T) {
	e := newEnv(t)
	py := `b = bytearray(b"x" * (64 << 20))
import time
end = time.time() + 120
while time.time() < end:
    pass`
	r := spec.NewRole("burn", "unused", "/usr/bin/python3", "-c", py)
	r.NumReplicas = 2
	h := e.launch(&spec.AppDef{Name: "burn", Roles: []spec.Role{r}})
	d := newDriver(t, e.opts, 160, 20)
	d.waitScreen("CPU/RSS")

	cell := regexp.MustCompile(`burn\s+RUNNING\s+2/2\s.*\s(\d+)% +(\d+(?:\.\d+)?)MiB`)
	deadline := time.Now().Add(testkit.Scale(cmdTimeout))
	for {
		if m := cell.FindStringSubmatch(d.raw()); m != nil {
			mib, _ := strconv.ParseFloat(m[2], 64)
			if m[1] != "0" && mib > 128 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the app list never showed CPU > 0 and RSS > 128MiB for the app:\n%s", d.screen())
		}
		time.Sleep(100 * time.Millisecond)
		d.send(tick())
	}

	// The describe view shows each replica's CPU and RSS.
	d.keys("d")
	row := regexp.MustCompile(`(?m)^REPLICA .* CPU +RSS +ERROR`)
	if !row.MatchString(d.raw()) || !regexp.MustCompile(`(?m)^burn/1 +RUNNING .* \d+% +\d+(\.\d+)?MiB`).MatchString(d.raw()) {
		t.Fatalf("the describe view lacks the replicas' CPU and RSS:\n%s", d.raw())
	}
	d.keys("esc")

	e.cancel(h)
	d.waitScreen("CANCELLED")
	d.lacks("CPU/RSS")
}
