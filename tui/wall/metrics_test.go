package wall_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/wick-dev/wick/engine/config"
	"github.com/wick-dev/wick/tui"
)

// trainers print 40 steps of a falling loss and a warming lr; worker 2's loss turns
// NaN at step 30, and every worker prints its pid and port (not metrics).
const trainers = `echo "pid $$ port 2950$K"; i=0; while [ $i -lt 40 ]; do
  loss=$(awk "BEGIN{print 3/($i+1)+0.1*$K}"); if [ "$K" = 2 ] && [ $i -ge 30 ]; then loss=nan; fi
  echo "step $i loss $loss lr 0.00$i"; i=$((i+1)); done; echo "eval loss 0.5"`

func TestWallMetrics(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("train", 4, trainers))
	e.wait(h)
	d := e.open(h, 160, 48, nil)
	d.waitFor("end of logs", "Summary")
	// Each pane's title: the loss as a sparkline and its last value; worker 2 has an
	// alarm (NaN at step 30). The summary gives each rank's last and best loss.
	d.contains("worker/0 SUCCEEDED exit 0 loss ", "0.075", "worker/2 SUCCEEDED exit 0 loss ", "NaN ⚠",
		"loss last 0.075 best 0.075 @ step 39", "loss last NaN best 0.3 @ step 29")
	d.waitForRe(regexp.MustCompile(`worker/1 SUCCEEDED exit 0 loss [▁▂▃▄▅▆▇█]{8,} 0\.175`))
	d.keys("i")

	// The chart: one key, every rank on one set of axes with a legend.
	d.keys("p")
	d.contains("loss · 2 more metrics (M)  ⚠ 1 alarms", "┤", "step", "● worker/0 0.075", "● worker/3 0.375", "● worker/2 NaN")
	d.lacks("w0 line")
	d.keys("L", "E", "Z")
	d.contains("loss · log scale · smoothed 0.6 · last 10000 steps")
	d.keys("M")
	d.contains("lr · log scale · smoothed 0.6", "● worker/0 0.0039")
	d.keys("esc")
	d.lacks("● worker/0")
	// The chosen metric is in the pane titles too.
	d.contains("worker/0 SUCCEEDED exit 0 lr ")
	// Back in the app list, the app's row is marked.
	d.keys("esc")
	d.waitFor("⚠ train")
}

// A bad [wick:metrics] in .torchxconfig is a clear error when the UI starts.
func TestWallMetricsBadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".torchxconfig")
	if err := os.WriteFile(path, []byte("[wick:metrics]\ndivergence = -2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	conf, err := config.LoadFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tui.NewModel(tui.Options{Runner: newEnv(t).r, Config: conf, Getenv: func(string) string { return "" }, Theme: "dark"})
	if err == nil || err.Error() != ".torchxconfig: [wick:metrics] divergence: must be 0 (off) or a factor above 1, not -2" {
		t.Fatalf("err = %v", err)
	}
}

// The UI settings name the metrics too ([metrics] in config.toml); a bad value there is
// an error naming the file and line.
func TestWallMetricsSettings(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.home, "config", "wick")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(settings, []byte("[metrics]\nmetrics = [\"lr\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := e.run(shApp("train", 2, trainers))
	e.wait(h)
	d := e.open(h, 160, 48, nil)
	d.waitFor("end of logs", "worker/0 SUCCEEDED exit 0 lr ")
	d.lacks("exit 0 loss ")

	if err := os.WriteFile(settings, []byte("[metrics]\n\ndivergence = \"x\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := tui.NewModel(tui.Options{Runner: e.r, Getenv: func(k string) string {
		return map[string]string{"XDG_CONFIG_HOME": filepath.Join(e.home, "config")}[k]
	}, Theme: "dark"})
	want := settings + `: line 3: [metrics] divergence: "x" is not a number`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}
