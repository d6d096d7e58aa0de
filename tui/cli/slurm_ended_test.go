package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// slurmSpy puts scontrol and sacct wrappers first on the PATH of the harness's wick
// processes: each notes its arguments in the returned file, then runs the real
// command. It shows which Slurm commands a verb ran.
func slurmSpy(t *testing.T, h *harness) (calls func() string) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	for _, name := range []string{"scontrol", "sacct"} {
		real, err := exec.LookPath(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		script := "#!/bin/sh\necho \"" + name + " $*\" >> '" + log + "'\nexec '" + real + "' \"$@\"\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h.cmdEnv = append(h.cmdEnv, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() string {
		b, err := os.ReadFile(log)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return string(b)
	}
}

// forgetJob moves a job's record to a job id slurmctld has never held, as if it had
// purged the job (MinJobAge after its end, no accounting), and returns the handle
// under which wick now knows it.
func forgetJob(t testing.TB, home, handle, ghost string) string {
	t.Helper()
	m := regexp.MustCompile(`^slurm://([^/]+)/([0-9]+)$`).FindStringSubmatch(handle)
	if m == nil {
		t.Fatalf("not a slurm handle: %q", handle)
	}
	jobs := filepath.Join(home, "slurm", "jobs")
	b, err := os.ReadFile(filepath.Join(jobs, m[2]+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	rec["job_id"] = ghost
	if b, err = json.Marshal(rec); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(jobs, ghost+".json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(jobs, m[2]+".json")); err != nil {
		t.Fatal(err)
	}
	return "slurm://" + m[1] + "/" + ghost
}

// TestSlurmEndedJobIsNotAsked: while slurmctld holds an ended job, status asks it
// every time (a completed job can still be requeued); once slurmctld has purged it,
// the first status learns so (its end is the one last seen), and from then on
// status answers from wick's record without running any Slurm command: nothing can
// change a purged job's end.
func TestSlurmEndedJobIsNotAsked(t *testing.T) {
	t.Parallel()
	needSlurm(t)
	h := newHarness(t)
	calls := slurmSpy(t, h)
	r := h.exec("run", "-s", "slurm", "utils.sh", "--", "sh", "-c", "echo bad >&2; exit 3")
	if r.code == 0 {
		t.Fatalf("run of a failing job: exit 0\n%s%s", r.stdout, r.stderr)
	}
	hd := regexp.MustCompile(`slurm://\S+/[0-9]+`).FindString(r.stdout + r.stderr)
	if hd == "" {
		t.Fatalf("no handle in\n%s%s", r.stdout, r.stderr)
	}
	before := calls()
	if st := h.status(hd); st.State != spec.Failed {
		t.Fatalf("status of the failed job: %s %q", st.State, st.Msg)
	}
	if asked := strings.TrimPrefix(calls(), before); !strings.Contains(asked, "scontrol show job") {
		t.Errorf("status of a job slurmctld holds ran %q, want scontrol show job", asked)
	}

	ghost := forgetJob(t, h.home, hd, "990000101")
	before = calls()
	first := h.exec("status", ghost)
	if first.code != 0 || !strings.Contains(first.stdout, "FAILED") || !strings.Contains(first.stdout, "sh/0: exit code 3") {
		t.Fatalf("first status once purged: %d\n%s%s", first.code, first.stdout, first.stderr)
	}
	if asked := strings.TrimPrefix(calls(), before); !strings.Contains(asked, "scontrol show job -o 990000101") {
		t.Errorf("the first status once purged ran %q, want scontrol show job", asked)
	}
	before = calls()
	for range 2 {
		again := h.exec("status", ghost)
		if again.code != 0 || noAge(again.stdout) != noAge(first.stdout) {
			t.Errorf("status of the purged job again: %d\n%s%s\nwant\n%s", again.code, again.stdout, again.stderr, first.stdout)
		}
	}
	if st := h.status(ghost); st.State != spec.Failed || st.LastKnown {
		t.Errorf("status --json of the purged job: %s last known %v", st.State, st.LastKnown)
	}
	if asked := strings.TrimPrefix(calls(), before); asked != "" {
		t.Errorf("status of a purged job whose end is known ran Slurm commands:\n%s", asked)
	}
}

// TestSlurmUnreachableWording: a job that ended while nobody looked (last seen
// RUNNING, every replica's exit file there) reads as ended from the exit files when
// slurmctld does not answer, and says the controller is unreachable, never that
// Slurm no longer knows the job.
func TestSlurmUnreachableWording(t *testing.T) {
	t.Parallel()
	needSlurm(t)
	h := newHarness(t)
	dir := t.TempDir()
	gate := filepath.Join(dir, "go")
	r := h.exec("run", "-s", "slurm", "--detach", "utils.sh", "--", "sh", "-c",
		"while [ ! -e '"+gate+"' ]; do sleep 0.1; done; exit 5")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	hd := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { h.exec("cancel", hd) })
	deadline := time.Now().Add(testkit.Scale(90 * time.Second))
	for st := h.status(hd); st.State != spec.Running; st = h.status(hd) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never ran: %s %q", hd, st.State, st.Msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The replica's exit file, waited for without asking Slurm.
	exit := recordedExitFile(t, h, hd)
	for _, err := os.Stat(exit); err != nil; _, err = os.Stat(exit) {
		if time.Now().After(deadline) {
			t.Fatalf("no exit file %s: %v", exit, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	h.cmdEnv = append(h.cmdEnv, "SLURM_CONF="+downSlurmConf(t))
	r = h.exec("status", hd)
	if r.code != 0 || !strings.Contains(r.stdout, "FAILED") || !strings.Contains(r.stdout, "Slurm controller unreachable") ||
		strings.Contains(r.stdout, "no longer knows") {
		t.Errorf("status with slurmctld unreachable:\n%s%s", r.stdout, r.stderr)
	}
}

// recordedExitFile returns the exit file wick's record names for the job's first
// replica.
func recordedExitFile(t *testing.T, h *harness, handle string) string {
	t.Helper()
	id := handle[strings.LastIndex(handle, "/")+1:]
	b, err := os.ReadFile(filepath.Join(h.home, "slurm", "jobs", id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Replicas []struct {
			ExitFile string `json:"exit_file"`
		} `json:"replicas"`
	}
	if err := json.Unmarshal(b, &rec); err != nil || len(rec.Replicas) == 0 || rec.Replicas[0].ExitFile == "" {
		t.Fatalf("record of %s: %v %s", handle, err, b)
	}
	return rec.Replicas[0].ExitFile
}

// noAge drops the "(1.2s ago)" that status prints beside a time.
func noAge(s string) string { return regexp.MustCompile(`\([^()]* ago\)`).ReplaceAllString(s, "") }
