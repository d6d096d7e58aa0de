package wall_test

import (
	"regexp"
	"testing"
)

// TestWallChartCountsStepsOverEpochs: timm prints its step within an epoch (`Train: 1
// [  50/100]`); the chart's x counts it over epochs, so the curve of two epochs runs
// from step 0 to 150 and never goes back, and the test lines that name no epoch are
// their own series.
func TestWallChartCountsStepsOverEpochs(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("timm", 1, `printf '%s\n' \
		"Train: 0 [   0/100 (  0%)]  Loss: 6.95 (6.95)  LR: 1.000e-06" \
		"Train: 0 [  50/100 ( 50%)]  Loss: 6.50 (6.60)  LR: 1.000e-06" \
		"Test: [   0/10]  Loss:   6.875 ( 6.875)  Acc@1:   0.195 (  0.195)" \
		"Train: 1 [   0/100 (  0%)]  Loss: 6.10 (6.10)  LR: 2.000e-04" \
		"Train: 1 [  50/100 ( 50%)]  Loss: 5.90 (6.00)  LR: 2.000e-04"`))
	e.wait(h)
	d := e.open(h, 120, 40, nil)
	d.waitFor("end of logs", "Summary")
	d.keys("i", "p")
	d.contains("● worker/0 5.9")
	// The x axis: "0 ... step ... 150".
	d.waitForRe(regexp.MustCompile(`(?m)^\s+0\s+step\s+150\s*$`))
}
