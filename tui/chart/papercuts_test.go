package chart

import (
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/metrics"
)

// TestTimeAxisOfAFastApp: a series without steps that spans 850ms (an app that ran
// under a second) reads "01:46:40 ... +850ms", not the same clock time at both ends;
// 12.3s reads +12.3s; a span of a minute or more keeps two clock times.
func TestTimeAxisOfAFastApp(t *testing.T) {
	was := time.Local
	time.Local = time.UTC
	t.Cleanup(func() { time.Local = was })
	const t0 = int64(1e18) // 2001-09-09 01:46:40 UTC
	for _, c := range []struct {
		span        time.Duration
		left, right string
	}{
		{850 * time.Millisecond, "01:46:40", "+850ms"},
		{12300 * time.Millisecond, "01:46:40", "+12.3s"},
		{90 * time.Second, "01:46:40", "01:48:10"},
	} {
		pts := []metrics.Point{{Step: -1, Time: t0, Value: 1}, {Step: -1, Time: t0 + int64(c.span/2), Value: 3}, {Step: -1, Time: t0 + int64(c.span), Value: 2}}
		lines := checkSize(t, Render([]Series{{Label: "loss", Points: pts}}, Options{Width: 50, Height: 10}), 50, 10)
		x := strings.Fields(lines[8])
		if len(x) != 3 || x[0] != c.left || x[1] != "time" || x[2] != c.right {
			t.Errorf("span %v: x axis %q, want %s time %s", c.span, lines[8], c.left, c.right)
		}
	}
}
