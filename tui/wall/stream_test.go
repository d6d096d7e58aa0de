package wall_test

import (
	"strings"
	"testing"
)

// TestWallKeyRedrawsAtOnceWhileLinesStream: while lines stream (the feed then hands
// them over at most 10 times a second), a key is drawn by the very next frame: the
// screen after the key's Update shows it, with no message between.
func TestWallKeyRedrawsAtOnceWhileLinesStream(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("stream", 2, `i=0; while [ $i -lt 5000 ]; do echo "w$K line $i"; i=$((i+1)); sleep 0.01; done`))
	d := e.open(h, 120, 30, nil)
	// Two seconds of lines: past streamAfter batches, the feed's slower pace.
	d.waitFor("w1 line 150")
	d.keys("i")
	d.update(key("z"))
	if scr := d.screen(); !strings.Contains(scr, "zoomed on worker/") {
		t.Fatalf("the zoom was not drawn in the frame after its key:\n%s", scr)
	}
	d.update(key("esc"))
	if scr := d.screen(); strings.Contains(scr, "zoomed on") {
		t.Fatalf("the zoom's end was not drawn in the frame after its key:\n%s", scr)
	}
}
