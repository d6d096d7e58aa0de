package wall_test

import (
	"strings"
	"testing"
)

// TestWallPanesStayReadable: at 100 columns an 8-replica wall picked 4 columns of 24
// characters, each log line cut after a few words. Panes keep about 40 columns: two
// side by side here, every replica still on the page.
func TestWallPanesStayReadable(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("eight", 8, `echo "replica $K says a line of a useful length, long enough to need room"`))
	e.wait(h)
	d := e.open(h, 100, 24, nil)
	scr := d.waitFor("end of logs", "replica 7 says")
	for _, l := range strings.Split(scr, "\n") {
		if n := strings.Count(l, "│"); n > 1 {
			t.Fatalf("more than two panes side by side at 100 columns:\n%s", scr)
		}
	}
	if !strings.Contains(scr, "replica 1 says a line of a useful") {
		t.Fatalf("lines are cut short:\n%s", scr)
	}
}
