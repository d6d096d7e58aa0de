package local

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/spec"
)

// TestAttemptsKeepTheFirstLineOfTheirError: a replica that fails 20 times with a
// 40 KB torchelastic error file (a long traceback) keeps the whole file once, as its
// last run's error; each earlier attempt keeps its message's first line.
func TestAttemptsKeepTheFirstLineOfTheirError(t *testing.T) {
	s := testScheduler(t, false)
	// The error file torchelastic writes: {"message": {"message": MSG, "extraInfo":
	// {"py_callstack": TRACEBACK}}}.
	script := `i=$(cat n 2>/dev/null || echo 0); echo $((i+1)) > n
tb=$(head -c 40000 /dev/zero | tr '\0' x)
printf '{"message": {"message": "RuntimeError: step %s diverged\\nsecond line", "extraInfo": {"py_callstack": "%s"}}}' "$i" "$tb" > "$TORCHELASTIC_ERROR_FILE"
exit 3`
	r := role("w", "sh", "-c", script)
	r.MaxRetries = 19
	r.RetryPolicy = spec.RetryReplica
	t.Chdir(t.TempDir())
	id := start(t, s, appOf("crashy", r), nil)
	st := waitApp(t, s, id)
	rep := replicaOf(t, st, "w", 0)
	if st.State != spec.Failed || len(rep.Attempts) != 19 {
		t.Fatalf("%s, %d attempts", st.State, len(rep.Attempts))
	}
	for i, a := range rep.Attempts {
		if want := fmt.Sprintf("RuntimeError: step %d diverged", i); a.Error != want {
			t.Errorf("attempt %d: error %.80q, want %q", i, a.Error, want)
		}
	}
	if !strings.Contains(rep.StructuredError, "step 19 diverged") || len(rep.StructuredError) < 40000 {
		t.Errorf("the last run's error: %d bytes", len(rep.StructuredError))
	}
	dir, _ := s.appDir(id)
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) {
		t.Fatal("state.json is not JSON")
	}
	// The last run's error (the replica's and the app's) plus a line per attempt.
	if len(b) > 3*40000+19*200 {
		t.Errorf("state.json is %d bytes", len(b))
	}
}

// TestRootCauseCutOffPerRole: role "flaky" fails once (a worker's error file in its
// PET_LOG_DIR), is restarted alone (ROLE) and recovers; later role "main" fails. The
// app's error is main's, and flaky's healthy replica is stopped (CANCELLED), not
// blamed for its earlier, recovered attempt.
func TestRootCauseCutOffPerRole(t *testing.T) {
	s := testScheduler(t, false)
	t.Chdir(t.TempDir())
	flaky := role("flaky", "sh", "-c", `if [ ! -e tried ]; then touch tried; d="$PET_LOG_DIR/run_a/attempt_0/0"; mkdir -p "$d"
echo '{"message": {"message": "RuntimeError: flaky first attempt", "extraInfo": {"timestamp": "1"}}}' > "$d/error.json"; exit 1; fi
touch recovered; while :; do sleep 0.05; done`)
	flaky.MaxRetries = 1
	flaky.RetryPolicy = spec.RetryRole
	main := role("main", "sh", "-c", `while [ ! -e recovered ]; do sleep 0.01; done; sleep 0.1
echo '{"message": {"message": "ValueError: main broke", "extraInfo": {"timestamp": "2"}}}' > "$TORCHELASTIC_ERROR_FILE"; exit 2`)
	id := start(t, s, appOf("two", flaky, main), nil)
	st := waitApp(t, s, id)
	if st.State != spec.Failed || st.Msg != "main/0 failed: ValueError: main broke" {
		t.Errorf("app %s %q", st.State, st.Msg)
	}
	if r := replicaOf(t, st, "flaky", 0); r.State != spec.Cancelled || r.Restarts != 1 {
		t.Errorf("flaky/0 (recovered, then stopped): %s, %d restarts, error %q", r.State, r.Restarts, r.StructuredError)
	}
}
