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
