package wall_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/internal/testkit"
)

// The soak of the wall in a real terminal: demo.train at 1,024 replicas x 20 lines/s
// for 30 s, launched by `wick run --detach`, watched by `wick ui --logs` in tmux
// (200x60) as a user would. The flags shrink it for a quick look.
var (
	tmuxReplicas = flag.Int("soaktmux.replicas", 1024, "BenchmarkSoakTmux1024: replicas of demo.train")
	tmuxDuration = flag.Duration("soaktmux.duration", 30*time.Second, "BenchmarkSoakTmux1024: how long demo.train runs")
	tmuxCat      = flag.Bool("soaktmux.cat", true, "BenchmarkSoakTmux1024: measure cat of the same files into the pane too (false: the wall alone, for a long run whose files take minutes to cat)")
	tmuxBacklog  = flag.Duration("soaktmux.backlog", 0, "BenchmarkSoakTmux1024: how long the app runs before the wall opens (a backlog of its lines to catch up, as when a launch starves the machine)")
	tmuxHeap     = flag.String("soaktmux.heap", "", "BenchmarkSoakTmux1024: where to keep the wall's heap profile at its peak live heap (WICK_MEMPROFILE)")
)

const (
	// tmuxRate is demo.train's lines per second per replica in BenchmarkSoakTmux1024.
	tmuxRate = 20
	// tmuxAfter is how long the wall is watched after "end of logs": what it does
	// once the app has ended counts too.
	tmuxAfter = 15 * time.Second
)

// BenchmarkSoakTmux1024 is the wall at 1,024 replicas in a real terminal: from its
// start to 15 s after "end of logs" it reports the wall process's CPU (its average, and its
// busiest second, sampled every second from /proc/PID/stat) and peak RSS, and tmux's
// CPU drawing it; then it searches every line ("[rank ", which every line of
// demo.train without bars and warnings has) and fails unless the count of matches is
// the count of lines in the replicas' files: every line is held. The baseline, in
// the same run: `cat` of the same files into the same tmux pane, its CPU and tmux's.
//
// It takes a minute or more, so it runs only when -bench names it (make bench does:
// go test -run '^$' -bench Soak -benchtime 1x ./tui/wall).
func BenchmarkSoakTmux1024(b *testing.B) {
	if f := flag.Lookup("test.bench"); f == nil || !strings.Contains(f.Value.String(), "Soak") {
		b.Skip("the soak takes over a minute: select it by name (-bench SoakTmux -benchtime 1x; make bench runs it)")
	}
	testkit.NeedTmux(b)
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	var res tmuxSoak
	for b.Loop() {
		res = runTmuxSoak(b)
	}
	b.ReportMetric(float64(res.lines), "lines-in-files")
	b.ReportMetric(float64(res.found), "lines-held")
	b.ReportMetric(res.wall.cpu.Seconds(), "wall-cpu-s")
	b.ReportMetric(res.wall.cpu.Seconds()/res.elapsed.Seconds(), "wall-cores")
	b.ReportMetric(res.wall.peak, "wall-cores-peak-1s")
	b.ReportMetric(float64(res.wall.rss)/(1<<20), "wall-peak-RSS-MB")
	b.ReportMetric(float64(res.heap.live)/(1<<20), "wall-peak-live-heap-MB")
	b.ReportMetric(res.heap.gcShare, "wall-gc-cpu-fraction")
	b.ReportMetric(res.tmuxCPU.Seconds(), "tmux-cpu-s")
	b.ReportMetric(res.elapsed.Seconds(), "wall-s")
	b.ReportMetric(res.catCPU.Seconds(), "cat-cpu-s")
	b.ReportMetric(res.catTmuxCPU.Seconds(), "cat-tmux-cpu-s")
	b.ReportMetric(res.load, "load")
	if len(res.rss) > 0 {
		b.ReportMetric(float64(res.rss[len(res.rss)-1].kb)/1024, "wall-end-RSS-MB")
	}
	b.Logf("the wall's RSS over the run (each minute from its start, then at the end): %s", rssCurve(res.rss))
	b.Logf("%d replicas x %d lines/s x %s: %d lines; the wall took %.2f s of CPU over %.1f s (busiest second %.2f cores, peak RSS %.0f MB, peak live heap %.0f MB, GC %.0f%% of its CPU), tmux %.2f s; cat of the same files into the pane: %.2f s of CPU, tmux %.2f s; load %.1f-%.1f",
		*tmuxReplicas, tmuxRate, *tmuxDuration, res.lines, res.wall.cpu.Seconds(), res.elapsed.Seconds(), res.wall.peak,
		float64(res.wall.rss)/(1<<20), float64(res.heap.live)/(1<<20), 100*res.heap.gcShare, res.tmuxCPU.Seconds(), res.catCPU.Seconds(), res.catTmuxCPU.Seconds(), res.load0, res.load)
}

// tmuxSoak is what one soak in tmux measured.
type tmuxSoak struct {
	lines, found int64
	wall         procUse
	elapsed      time.Duration // from the wall's start to tmuxAfter past "end of logs"
	tmuxCPU      time.Duration
	catCPU       time.Duration
	catTmuxCPU   time.Duration
	load0, load  float64 // the load when it began, and the highest seen
	heap         heapUse
	// rss is the wall's resident size, sampled each second (VmRSS).
	rss []rssAt
}

// rssAt is a process's resident size at a moment.
type rssAt struct {
	at time.Duration // since the wall's start
	kb int64
}

// rssCurve is the wall's resident size at its first sample, at each whole minute
// after its start and at its last sample, in MB: what "flat over a 10-minute run"
// is judged by.
func rssCurve(samples []rssAt) string {
	var parts []string
	next := time.Duration(0)
	for i, s := range samples {
		if i == 0 || s.at >= next || i == len(samples)-1 {
			parts = append(parts, fmt.Sprintf("%s %.0f MB", s.at.Truncate(time.Second), float64(s.kb)/1024))
			next = (s.at/time.Minute + 1) * time.Minute
		}
	}
	return strings.Join(parts, ", ")
}

// heapUse is what the wall's WICK_MEMPROFILE summary says.
type heapUse struct {
	live    int64   // the peak live heap, bytes
	gcShare float64 // the garbage collector's share of the wall's CPU
}

// procUse is a process's CPU and memory as sampled each second.
type procUse struct {
	cpu  time.Duration
	peak float64 // cores over the busiest second
	rss  int64   // bytes, the highest resident size (VmHWM)
}

func runTmuxSoak(b *testing.B) tmuxSoak {
	b.Helper()
	res := tmuxSoak{load0: testkit.Load()}
	dir := b.TempDir()
	home := filepath.Join(dir, "state")
	environ := append(os.Environ(), "WICK_HOME="+home, "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	run := exec.Command(wickBin, "run", "--detach", "demo.train", "--replicas", strconv.Itoa(*tmuxReplicas),
		"--rate", strconv.Itoa(tmuxRate), "--duration", tmuxDuration.String(), "--progress=false", "--warnings=false")
	run.Env, run.Dir = environ, dir
	out, err := run.Output()
	if err != nil {
		b.Fatalf("wick run: %v\n%s", err, out)
	}
	fields := strings.Fields(string(out))
	if len(fields) == 0 {
		b.Fatal("wick run printed no handle")
	}
	handle := fields[len(fields)-1]
	b.Cleanup(func() {
		c := exec.Command(wickBin, "cancel", handle)
		c.Env = environ
		_ = c.Run()
	})

	if *tmuxBacklog > 0 {
		b.Logf("the wall opens %s into the app", *tmuxBacklog)
		time.Sleep(*tmuxBacklog)
	}

	heapProf := filepath.Join(dir, "heap.pprof")
	if *tmuxHeap != "" {
		heapProf = *tmuxHeap
	}
	cmdline := "cd " + dir + " && exec env WICK_HOME=" + home + " HOME=" + dir + " XDG_CONFIG_HOME=" + filepath.Join(dir, "config") +
		" WICK_MEMPROFILE=" + heapProf + " TERM=xterm-256color " + wickBin + " ui --logs " + handle
	tm := testkit.StartTmux(b, 200, 60, cmdline)
	pid, server := tm.PID(), strings.TrimSpace(tm.Run("display-message", "-p", "#{pid}"))
	start := time.Now()
	server0 := procCPU(server)
	var samples []cpuAt
	deadline := start.Add(testkit.Scale(*tmuxDuration + 5*time.Minute))
	var ended time.Time
	for ended.IsZero() || time.Since(ended) < tmuxAfter {
		samples = append(samples, cpuAt{at: time.Now(), cpu: procCPU(pid)})
		res.rss = append(res.rss, rssAt{at: time.Since(start), kb: procKB(pid, "VmRSS")})
		res.load = max(res.load, testkit.Load())
		if ended.IsZero() && strings.Contains(tm.Screen(), "end of logs") {
			ended = time.Now()
		}
		if tm.Dead() || time.Now().After(deadline) {
			b.Fatalf("the wall never reached the end of the logs:\n%s", tm.Screen())
		}
		time.Sleep(time.Second)
	}
	res.elapsed = time.Since(start)
	res.tmuxCPU = procCPU(server) - server0
	res.wall = procUse{cpu: samples[len(samples)-1].cpu, peak: peakOf(samples), rss: procKB(pid, "VmHWM") << 10}

	// Every line is held: a search for what every line has counts them all.
	files, lines := tmuxFiles(b, home)
	res.lines = lines
	tm.Keys("/")
	tm.Text("[rank ")
	tm.Keys("Enter")
	counted := regexp.MustCompile(`/\[rank\s+(\d+) matches`)
	scr := tm.WaitScreen(2*time.Minute+*tmuxDuration/2, "the count of matches", func(s string) bool {
		return counted.MatchString(s) && !strings.Contains(s, "searching")
	})
	res.found, _ = strconv.ParseInt(counted.FindStringSubmatch(scr)[1], 10, 64)
	if res.found != res.lines {
		b.Fatalf("the wall holds %d lines; the replicas' files have %d:\n%s", res.found, res.lines, scr)
	}
	tm.Keys("q")
	tm.WaitExit(time.Minute)
	res.heap = readHeapUse(b, heapProf+".txt")

	if !*tmuxCat {
		return res
	}
	// The baseline: cat of the same files into the same pane, timed by the shell.
	script, times := filepath.Join(dir, "cat.sh"), filepath.Join(dir, "times")
	if err := os.WriteFile(script, []byte("cat "+strings.Join(files, " ")+"\ntimes > "+times+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	server0 = procCPU(server)
	tm.Run("respawn-pane", "-k", "-t", "w", "sh "+script)
	testkit.Wait(b, 2*time.Minute, "cat of the files ends", func() (bool, string) {
		data, err := os.ReadFile(times)
		return err == nil && bytes.Count(data, []byte{'\n'}) >= 2, ""
	})
	tm.WaitExit(time.Minute)
	res.catTmuxCPU = procCPU(server) - server0
	res.catCPU = childTimes(b, times)
	return res
}

// tmuxFiles lists the replicas' stdout.log files under home, in replica order, and
// counts their lines; a line without "[rank " (or a stderr line) fails b, as the
// search would not count it.
func tmuxFiles(b *testing.B, home string) (files []string, lines int64) {
	b.Helper()
	dirs, err := filepath.Glob(filepath.Join(home, "logs", "*", "*", "trainer", "*"))
	if err != nil || len(dirs) != *tmuxReplicas {
		b.Fatalf("the replicas' log directories: %d of %d (%v)", len(dirs), *tmuxReplicas, err)
	}
	for k := range *tmuxReplicas {
		d := filepath.Join(filepath.Dir(dirs[0]), strconv.Itoa(k))
		so := filepath.Join(d, "stdout.log")
		data, err := os.ReadFile(so)
		if err != nil {
			b.Fatal(err)
		}
		n := int64(bytes.Count(data, []byte{'\n'}))
		if m := int64(bytes.Count(data, []byte("[rank "))); m != n {
			b.Fatalf("%s: %d lines, %d of them with [rank ", so, n, m)
		}
		if fi, err := os.Stat(filepath.Join(d, "stderr.log")); err == nil && fi.Size() > 0 {
			b.Fatalf("%s: demo.train wrote on stderr", d)
		}
		files, lines = append(files, so), lines+n
	}
	return files, lines
}

// readHeapUse reads the summary WICK_MEMPROFILE writes beside its profile.
func readHeapUse(b *testing.B, path string) heapUse {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatalf("the wall's WICK_MEMPROFILE summary: %v", err)
	}
	var h heapUse
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "peak-live-heap-bytes "); ok {
			h.live, _ = strconv.ParseInt(v, 10, 64)
		} else if v, ok := strings.CutPrefix(l, "gc-cpu-fraction "); ok {
			h.gcShare, _ = strconv.ParseFloat(v, 64)
		}
	}
	return h
}

// procCPU is the CPU time process pid has used (user + system), 0 once it is gone.
func procCPU(pid string) time.Duration {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * clockTick
}

// procKB is a field of /proc/PID/status in kB, or 0.
func procKB(pid, field string) int64 {
	data, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// peakOf is the CPU of the busiest second among samples (between samples at least a
// second apart), in cores.
func peakOf(samples []cpuAt) float64 {
	peak, i := 0.0, 0
	for j, s := range samples {
		for i < j && s.at.Sub(samples[i+1].at) >= time.Second {
			i++
		}
		if d := s.at.Sub(samples[i].at); d >= time.Second {
			peak = max(peak, (s.cpu-samples[i].cpu).Seconds()/d.Seconds())
		}
	}
	return peak
}

// childTimes reads the children's user and system times from the output of the
// shell's `times` (its second line: "0m0.01s 0m0.05s").
func childTimes(b *testing.B, path string) time.Duration {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var total time.Duration
	for _, f := range strings.Fields(lines[len(lines)-1]) {
		var m int
		var s float64
		if _, err := fmt.Sscanf(f, "%dm%fs", &m, &s); err != nil {
			b.Fatalf("times: %q: %v", data, err)
		}
		total += time.Duration(m)*time.Minute + time.Duration(s*float64(time.Second))
	}
	return total
}
