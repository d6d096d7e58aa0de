package wall_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/internal/testkit"
)

// TestE2EWallDemoTrain runs `wick ui --logs` in tmux on a 4-replica demo.train
// launched from another command, searches, zooms, pauses and resumes, and compares
// what the zoomed pane holds with the replica's stdout.log.
func TestE2EWallDemoTrain(t *testing.T) {
	t.Parallel()
	testkit.NeedTmux(t)
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "state")
	environ := append(os.Environ(), "WICK_HOME="+home, "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	run := exec.Command(wickBin, "run", "--detach", "demo.train", "--replicas", "4", "--duration", "8s", "--rate", "50")
	run.Env, run.Dir = environ, dir
	out, err := run.Output()
	if err != nil {
		t.Fatalf("wick run: %v\n%s", err, out)
	}
	handle := strings.TrimSpace(string(out))
	if i := strings.LastIndexByte(handle, '\n'); i >= 0 {
		handle = handle[i+1:]
	}
	appID := handle[strings.LastIndexByte(handle, '/')+1:]
	t.Cleanup(func() {
		c := exec.Command(wickBin, "cancel", handle)
		c.Env = environ
		_ = c.Run()
	})

	cmdline := "cd " + dir + " && exec env WICK_HOME=" + home + " HOME=" + dir + " TERM=xterm-256color " + wickBin + " ui --logs " + handle
	tm := testkit.StartTmux(t, 160, 48, cmdline)
	tmux := tm.Run
	waitFor := func(want ...string) string {
		t.Helper()
		return tm.WaitFor(30*time.Second, want...)
	}
	waitFor("trainer/0", "trainer/3", "following", "[rank 3]")
	// demo.train's progress bar, live as each pane's last line, marked in progress.
	waitFor("⋯Epoch ")
	tmux("send-keys", "-t", "w", "/")
	tmux("send-keys", "-t", "w", "-l", "loss")
	waitFor("matches")
	tmux("send-keys", "-t", "w", "Enter")
	tmux("send-keys", "-t", "w", "z")
	scr := waitFor("zoomed on trainer/", "/loss")
	k := regexp.MustCompile(`zoomed on trainer/(\d)`).FindStringSubmatch(scr)[1]
	// Enter jumped to a match, which pauses the pane; f follows again, f pauses.
	tmux("send-keys", "-t", "w", "G")
	waitFor("following")
	tmux("send-keys", "-t", "w", "f")
	waitFor("paused: trainer/" + k + " (F follows all)")
	tmux("send-keys", "-t", "w", "f")
	waitFor("following")
	// At the end, the pane's stdout lines are the last lines of stdout.log.
	waitFor("end of logs", "Summary")
	tmux("send-keys", "-t", "w", "i", "s")
	scr = waitFor("stdout")
	var shown []string
	for _, l := range strings.Split(scr, "\n")[3:] {
		if strings.HasPrefix(l, " [rank ") {
			shown = append(shown, strings.TrimRight(l[1:], " "))
		}
	}
	data, err := os.ReadFile(filepath.Join(home, "logs", "wick", appID, "trainer", k, "stdout.log"))
	if err != nil {
		t.Fatal(err)
	}
	file := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(shown) < 20 || len(file) < len(shown) {
		t.Fatalf("pane shows %d lines, file has %d:\n%s", len(shown), len(file), scr)
	}
	tail := file[len(file)-len(shown):]
	for i := range shown {
		if shown[i] != strings.TrimRight(tail[i], " ") {
			t.Fatalf("pane line %d = %q, stdout.log has %q", i, shown[i], tail[i])
		}
	}
	t.Logf("trainer/%s: %d pane lines match the end of stdout.log (%d lines)", k, len(shown), len(file))
}

// TestE2EWallEveryLine runs `wick ui --logs --ring 4096` in tmux on an app of 30k
// lines: the pane says how many older lines are on disk, the search counts the
// matches there too and n shows one, g shows line 1.
func TestE2EWallEveryLine(t *testing.T) {
	testkit.NeedTmux(t)
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "state")
	environ := append(os.Environ(), "WICK_HOME="+home, "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	run := exec.Command(wickBin, "run", "--detach", "utils.sh", "seq", "-f", "n %g", "1", "30000")
	run.Env, run.Dir = environ, dir
	out, err := run.Output()
	if err != nil {
		t.Fatalf("wick run: %v\n%s", err, out)
	}
	fields := strings.Fields(string(out))
	handle := fields[len(fields)-1]
	cmdline := "cd " + dir + " && exec env WICK_HOME=" + home + " HOME=" + dir + " TERM=xterm-256color " + wickBin + " ui --ring 4096 --logs " + handle
	tm := testkit.StartTmux(t, 120, 30, cmdline)
	tmux := tm.Run
	waitFor := func(want *regexp.Regexp) string {
		t.Helper()
		return tm.WaitMatch(30*time.Second, want)
	}
	waitFor(regexp.MustCompile(`end of logs`))
	waitFor(regexp.MustCompile(`▸ [^\n]*k older lines on disk`))
	tmux("send-keys", "-t", "w", "i")
	tmux("send-keys", "-t", "w", "/")
	tmux("send-keys", "-t", "w", "-l", "n 1234")
	waitFor(regexp.MustCompile(`11 matches`))
	tmux("send-keys", "-t", "w", "Enter")
	// Enter shows the latest match, n wraps to the first: both far before the ring.
	waitFor(regexp.MustCompile(`(?m)^ n 12349 *$`))
	tmux("send-keys", "-t", "w", "n")
	waitFor(regexp.MustCompile(`(?m)^ n 1234 *$`))
	tmux("send-keys", "-t", "w", "g")
	scr := waitFor(regexp.MustCompile(`(?m)^ n 1 *$`))
	if !strings.Contains(scr, " n 2") {
		t.Fatalf("g did not show the first lines:\n%s", scr)
	}
	tmux("send-keys", "-t", "w", "G")
	waitFor(regexp.MustCompile(`(?m)^ n 30000 *$`))
}
