package wall_test

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/internal/testkit"
)

// lnavRun is how long demo.train runs in BenchmarkSoakBesideLnav, and lnavAfter how
// long both viewers are watched after it ends.
// lnavProfile, when set, is where the wall under BenchmarkSoakBesideLnav writes a CPU
// profile of its session (WICK_CPUPROFILE), one file per replica count
// (FILE.16, FILE.256): where its time goes, from the same run as its figures.
var lnavProfile = flag.String("lnav.cpuprofile", "", "BenchmarkSoakBesideLnav: the wall's CPU profile, FILE.N for N replicas")

const (
	lnavRun   = 30 * time.Second
	lnavAfter = 10 * time.Second
)

// BenchmarkSoakBesideLnav is the wall beside lnav (#37: at most 2x lnav's CPU, 10x
// tail -F's) on the same live app: demo.train at N replicas x 20 lines/s for 30 s,
// with its tqdm-style bars redrawn with \r and its warnings (what makes the wall
// work), watched from its launch to 10 s after its end by `wick ui --logs` and by
// `lnav` of the replicas' combined.log files (what the wall shows) and by `tail -F` of
// them, each in its own tmux of the same size (200x60), at once: the same load weighs
// on the three. Reported: each one's CPU seconds and peak RSS (VmHWM), and the
// ratios. WICK_BENCH_BASE names another wick (the one before a change): it watches
// the same app in a fourth tmux at once, and wick/base is reported (the load weighs on
// both alike). Skipped when lnav is not installed (apt-get install lnav); it runs when
// -bench names it (make bench's Soak line: -bench Soak -benchtime 1x ./tui/wall).
func BenchmarkSoakBesideLnav(b *testing.B) {
	if f := flag.Lookup("test.bench"); f == nil || !strings.Contains(f.Value.String(), "Soak") {
		b.Skip("a soak of a minute: select it by name (-bench SoakBesideLnav -benchtime 1x)")
	}
	testkit.NeedTmux(b)
	if _, err := exec.LookPath("lnav"); err != nil {
		b.Skip("lnav is not installed (apt-get install lnav)")
	}
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	for _, n := range []int{16, 256} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			base := os.Getenv("WICK_BENCH_BASE")
			var wick, lnav, tail, old procUse
			for b.Loop() {
				wick, lnav, tail, old = besideLnav(b, n, base)
			}
			b.ReportMetric(wick.cpu.Seconds(), "wick-cpu-s")
			b.ReportMetric(lnav.cpu.Seconds(), "lnav-cpu-s")
			b.ReportMetric(tail.cpu.Seconds(), "tail-cpu-s")
			b.ReportMetric(wick.cpu.Seconds()/max(lnav.cpu.Seconds(), 0.01), "wick/lnav-cpu")
			b.ReportMetric(wick.cpu.Seconds()/max(tail.cpu.Seconds(), 0.01), "wick/tail-cpu")
			b.ReportMetric(float64(wick.rss)/(1<<20), "wick-peak-RSS-MB")
			b.ReportMetric(float64(lnav.rss)/(1<<20), "lnav-peak-RSS-MB")
			if base != "" {
				b.ReportMetric(old.cpu.Seconds(), "base-cpu-s")
				b.ReportMetric(wick.cpu.Seconds()/max(old.cpu.Seconds(), 0.01), "wick/base-cpu")
				b.ReportMetric(float64(old.rss)/(1<<20), "base-peak-RSS-MB")
			}
			b.ReportMetric(testkit.Load(), "load")
		})
	}
}

// besideLnav launches demo.train of n replicas and watches it with the wall, lnav and
// tail -F at once (and with the wick base, when not empty) until lnavAfter past its
// end; it returns what each used.
func besideLnav(b *testing.B, n int, base string) (wick, lnav, tail, old procUse) {
	b.Helper()
	dir := b.TempDir()
	home := filepath.Join(dir, "state")
	env := "cd " + dir + " && exec env WICK_HOME=" + home + " HOME=" + dir + " XDG_CONFIG_HOME=" + filepath.Join(dir, "config") + " TERM=xterm-256color "
	run := exec.Command(wickBin, "run", "--detach", "demo.train", "--replicas", strconv.Itoa(n),
		"--rate", "20", "--duration", lnavRun.String())
	run.Env = append(os.Environ(), "WICK_HOME="+home, "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	run.Dir = dir
	out, err := run.Output()
	if err != nil {
		b.Fatalf("wick run: %v\n%s", err, out)
	}
	handle := strings.TrimSpace(string(out))
	b.Cleanup(func() {
		c := exec.Command(wickBin, "cancel", handle)
		c.Env = run.Env
		_ = c.Run()
	})
	files, err := filepath.Glob(filepath.Join(home, "logs", "*", "*", "trainer", "*", "combined.log"))
	if err != nil || len(files) != n {
		b.Fatalf("%d of %d combined.log files (%v)", len(files), n, err)
	}
	prof := ""
	if *lnavProfile != "" {
		prof = "WICK_CPUPROFILE=" + *lnavProfile + "." + strconv.Itoa(n) + " "
	}
	w := testkit.StartTmux(b, 200, 60, env+prof+wickBin+" ui --logs "+handle)
	// The files by a glob the pane's shell expands: 256 paths are over tmux's
	// longest command.
	glob := filepath.Join(home, "logs", "*", "*", "trainer", "*", "combined.log")
	l := testkit.StartTmux(b, 200, 60, env+"lnav "+glob)
	t := testkit.StartTmux(b, 200, 60, env+"tail -F "+glob)
	pids := []string{w.PID(), l.PID(), t.PID()}
	if base != "" {
		o := testkit.StartTmux(b, 200, 60, env+base+" ui --logs "+handle)
		pids = append(pids, o.PID())
	}
	var ended time.Time
	deadline := time.Now().Add(testkit.Scale(lnavRun + 5*time.Minute))
	hwm := make([]int64, len(pids))
	for ended.IsZero() || time.Since(ended) < lnavAfter {
		for i, p := range pids {
			hwm[i] = max(hwm[i], procKB(p, "VmHWM"))
		}
		if ended.IsZero() && strings.Contains(w.Screen(), "end of logs") {
			ended = time.Now()
		}
		if w.Dead() || l.Dead() || time.Now().After(deadline) {
			b.Fatalf("a viewer ended, or the wall never reached the end of the logs:\n%s\n%s", w.Screen(), l.Screen())
		}
		time.Sleep(time.Second)
	}
	use := make([]procUse, 4)
	for i, p := range pids {
		use[i] = procUse{cpu: procCPU(p), rss: hwm[i] << 10}
	}
	if prof != "" {
		// The profile is written when the wall quits, not when tmux is killed.
		w.Keys("q")
		w.WaitExit(time.Minute)
	}
	return use[0], use[1], use[2], use[3]
}
