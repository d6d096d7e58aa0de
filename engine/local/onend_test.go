package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestOnEndRunsWhenTheAppEnds: the on_end run option is run by the supervisor once the
// app's final state is written, with no one watching, the app in WICK_* variables;
// its output is in on_end.log. A failing command changes nothing of the app.
func TestOnEndRunsWhenTheAppEnds(t *testing.T) {
	s := testScheduler(t, false)
	out := filepath.Join(t.TempDir(), "ended.txt")
	cfg := spec.Cfg{OptOnEnd: `env | grep ^WICK_ | sort > ` + out + `; echo said it; exit 7`}
	id := start(t, s, appOf("fails", role("w", "sh", "-c", "echo boom >&2; exit 3")), cfg)
	if st := waitApp(t, s, id); st.State != spec.Failed {
		t.Fatalf("state %s", st.State)
	}
	var env string
	testkit.Wait(t, 30*time.Second, "the on_end command's file", func() (bool, string) {
		b, err := os.ReadFile(out)
		env = string(b)
		return err == nil && strings.Contains(env, "WICK_STATE="), env
	})
	for _, want := range []string{"WICK_APP_ID=" + id + "\n", "WICK_STATE=FAILED\n", "WICK_ERROR=w/0: exit code 3\n",
		"WICK_HANDLE=local_cwd://test/" + id + "\n", "WICK_SESSION=test\n", "WICK_LOG_DIR=" + filepath.Join(s.defaultLogDir(), "test", id) + "\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("the command's environment lacks %q:\n%s", want, env)
		}
	}
	dir, err := s.appDir(id)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Wait(t, 30*time.Second, "on_end.log", func() (bool, string) {
		b, err := os.ReadFile(filepath.Join(dir, onEndLog))
		return err == nil && string(b) == "said it\n", string(b)
	})
	if st := waitApp(t, s, id); st.State != spec.Failed || !strings.Contains(st.StructuredError, "exit code 3") {
		t.Errorf("after on_end failed: %s %s", st.State, st.StructuredError)
	}
}

// TestOnEndBadValue: an on_end with a NUL, or over 4 KB, is refused at the dry run.
func TestOnEndBadValue(t *testing.T) {
	s := testScheduler(t, false)
	for _, v := range []string{"echo \x00", strings.Repeat("x", maxOnEnd+1)} {
		app := appOf("x", role("w", "true"))
		resolved, err := s.RunOpts().Resolve(spec.Cfg{OptOnEnd: v})
		if err == nil {
			_, err = s.DryRun(t.Context(), sched.Submission{AppID: spec.MakeAppID(app.Name), Session: "test", App: app, Cfg: resolved})
		}
		if err == nil || !strings.Contains(err.Error(), "on_end") {
			t.Errorf("on_end of %d bytes: %v", len(v), err)
		}
	}
}
