package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/spec"
)

// TestManyReplicasKeepTheirReaper: an app of 128 replicas starts them all before its
// supervisor's loop would start the reaper, and their messages (two pipes and a
// process group each) fill the socket to it. The reaper is then started at once: the
// app runs to its end with no word of the reaper in supervisor.log. Before, the send
// waited out its one-second deadline and gave the reaper up ("reaper: resource
// temporarily unavailable"), and a SIGKILL of that supervisor would have left its
// replicas' children running.
func TestManyReplicasKeepTheirReaper(t *testing.T) {
	s := testScheduler(t, false)
	r := role("t", "true")
	r.NumReplicas = 128
	id := start(t, s, appOf("many", r), nil)
	if st := waitApp(t, s, id); st.State != spec.Succeeded {
		t.Fatalf("%s: %s", st.State, st.Msg)
	}
	log, err := os.ReadFile(filepath.Join(s.appsDir(), id, supervisorLog))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if strings.Contains(string(log), "reaper") {
		t.Fatalf("supervisor.log of an app of 128 replicas:\n%s", log)
	}
}
