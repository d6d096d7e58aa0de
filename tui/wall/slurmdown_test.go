package wall_test

import (
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

// TestE2EUISlurmControllerDown: with slurmctld unreachable, `wick ui` still lists a
// slurm app of this WICK_HOME, at its last known state, with the controller's trouble
// said; its wall shows the lines the replica keeps writing, from the files.
func TestE2EUISlurmControllerDown(t *testing.T) {
	t.Parallel()
	s := newSlurmUI(t)
	handle := s.run("run", "-s", "slurm", "--detach", "utils.sh", "--", "sh", "-c", "i=0; while :; do i=$((i+1)); echo tick $i; sleep 0.5; done")
	// Seen running once: that is the state last known.
	for deadline := time.Now().Add(testkit.Scale(90 * time.Second)); ; time.Sleep(200 * time.Millisecond) {
		st := exec.Command(wickBin, "status", handle)
		st.Env = s.environ
		out, _ := st.Output()
		if strings.Contains(string(out), "RUNNING") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never ran:\n%s", handle, out)
		}
	}
	// A slurm.conf whose controller port nobody listens on: slurmctld is down to the UI.
	conf, err := os.ReadFile(os.Getenv("SLURM_CONF")) // the test cluster's (testkit.NeedSlurm)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(conf), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "SlurmctldPort=") {
			lines[i] = "SlurmctldPort=6999"
		}
	}
	down := filepath.Join(t.TempDir(), "slurm.conf")
	if err := os.WriteFile(down, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	s.uiEnv = "SLURM_CONF=" + down + " "
	s.open("")
	scr := s.waitFor("Apps", handle, "RUNNING (last known)", "does not answer", "the states shown are the last known")
	if strings.Contains(scr, "No app of this WICK_HOME yet") {
		t.Errorf("the list claims no app:\n%s", scr)
	}
	// Its logs: the lines keep coming from the files.
	s.tm.Keys("/")
	s.tm.Text(handle)
	s.tm.Keys("Enter")
	s.tm.Keys("l")
	scr = s.waitFor("tick 2")
	last := 0
	for _, m := range regexp.MustCompile(`tick (\d+)`).FindAllStringSubmatch(scr, -1) {
		if n, _ := strconv.Atoi(m[1]); n > last {
			last = n
		}
	}
	s.waitFor("tick " + strconv.Itoa(last+6))
}
