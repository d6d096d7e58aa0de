package cli

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// downSlurmConf writes a copy of the cluster's slurm.conf whose controller port
// nobody listens on: to Slurm's commands, slurmctld is down (they retry for about
// 18 s, then fail), while the job and its files stay as they are.
func downSlurmConf(t *testing.T) string {
	t.Helper()
	src := os.Getenv("SLURM_CONF")
	if src == "" {
		src = "/etc/slurm/slurm.conf"
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "SlurmctldPort=") {
			lines[i] = "SlurmctldPort=6999"
		}
	}
	path := filepath.Join(t.TempDir(), "slurm.conf")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSlurmControllerDown: with slurmctld unreachable, the logs of a job come from its
// files (-n 2 and -f), status and list show the last known state marked as such, and
// cancel says it cannot reach the controller. cancel --now is refused on slurm, which
// always sends SIGTERM first, and stops nothing; of an ended job it says its state.
func TestSlurmControllerDown(t *testing.T) {
	needSlurm(t)
	h := newHarness(t)
	r := h.exec("run", "-s", "slurm", "--detach", "utils.sh", "--", "sh", "-c", "for i in 1 2 3 4 5; do echo line $i; done; sleep 600")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	hd := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { h.exec("cancel", hd) })
	for deadline := time.Now().Add(testkit.Scale(90 * time.Second)); ; time.Sleep(200 * time.Millisecond) {
		if st := h.status(hd); st.State == spec.Running && strings.Contains(h.exec("log", hd).stdout, "line 5") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never ran: %+v", hd, h.status(hd))
		}
	}

	if r := h.exec("cancel", "--now", hd); r.code == 0 || !strings.Contains(r.stderr, "slurm cannot kill an app at once") {
		t.Errorf("cancel --now on slurm: %d %q, want a refusal", r.code, r.stderr)
	}

	t.Run("down", func(t *testing.T) {
		t.Setenv("SLURM_CONF", downSlurmConf(t))
		if r := h.exec("log", "-n", "2", hd); r.code != 0 || r.stdout != "sh/0 line 4\nsh/0 line 5\n" {
			t.Errorf("log -n 2: %d %q %q", r.code, r.stdout, r.stderr)
		}

		ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
		defer cancel()
		cmd := h.wickCmd(ctx, "log", "-f", hd)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		var got []string
		for len(got) < 5 && sc.Scan() {
			got = append(got, sc.Text())
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if len(got) < 5 || got[4] != "sh/0 line 5" {
			t.Errorf("log -f: %q", got)
		}

		r := h.exec("status", hd)
		if r.code != 0 || !strings.Contains(r.stdout, "RUNNING (last known)") || !strings.Contains(r.stdout, "Slurm controller unreachable: last known state RUNNING") {
			t.Errorf("status: %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		r = h.exec("list", "-s", "slurm")
		if !strings.Contains(r.stdout, hd) || !strings.Contains(r.stdout, "RUNNING (last known)") ||
			!strings.Contains(r.stderr, "does not answer") || !strings.Contains(r.stderr, "the states shown are the last known") {
			t.Errorf("list -s slurm: %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if r := h.exec("cancel", hd); r.code == 0 || !strings.Contains(r.stderr, "does not answer") {
			t.Errorf("cancel: %d %q", r.code, r.stderr)
		}
	})
	// The controller back: nothing was stopped by any of it.
	if st := h.status(hd); st.State != spec.Running {
		t.Errorf("after: %s", st.State)
	}
	// Once the job has ended, --now has nothing to refuse: it says the job's state
	// and exits 0, as a cancel of a finished app does; a job Slurm never had is
	// "no such app". Both were "slurm cannot kill an app at once".
	if r := h.exec("cancel", hd); r.code != 0 || !strings.Contains(r.stderr, "CANCELLED") {
		t.Fatalf("cancel: %d %q", r.code, r.stderr)
	}
	if r := h.exec("cancel", "--now", hd); r.code != 0 || r.stderr != hd+" CANCELLED\n" {
		t.Errorf("cancel --now of an ended job: %d %q", r.code, r.stderr)
	}
	if r := h.exec("cancel", "--now", "slurm://wick/2000000000"); r.code != ExitUsage || r.stderr != "wick: no such app: slurm://wick/2000000000\n" {
		t.Errorf("cancel --now of no job: %d %q", r.code, r.stderr)
	}
}

// TestSlurmMultiLineComment: a comment of several lines in .torchxconfig (an INI
// continuation line) is refused with one line naming the option, before anything is
// submitted: written into the script it would end the comment line and run what
// follows.
func TestSlurmMultiLineComment(t *testing.T) {
	h := newHarness(t)
	conf := "[slurm]\ncomment = nightly sweep\n    touch " + filepath.Join(h.work, "pwned") + "\n"
	if err := os.WriteFile(filepath.Join(h.work, ".torchxconfig"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	r := h.exec("run", "-s", "slurm", "--dryrun", "utils.echo")
	if r.code != 2 || !strings.Contains(r.stderr, `comment="nightly sweep\ntouch `) || !strings.Contains(r.stderr, "no control characters") ||
		strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
		t.Errorf("exit %d, stderr %q; want 2 and one line naming comment", r.code, r.stderr)
	}
}

// TestSlurmLogOfAPendingJob: wick log of a job Slurm holds back says so and why on
// stderr, where it printed nothing (and -f followed in silence a job that may never
// start). Three replicas are three components of one heterogeneous job, which the
// test cluster's two nodes cannot hold: it stays PENDING (Resources).
func TestSlurmLogOfAPendingJob(t *testing.T) {
	needSlurm(t)
	h := newHarness(t)
	r := h.exec("run", "-s", "slurm", "--detach", "-cfg", "time=1", "demo.train", "--replicas", "3", "--duration", "5s", "--progress=false")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	hd := strings.TrimSpace(r.stdout)
	t.Cleanup(func() { h.exec("cancel", hd) })
	var st spec.AppStatus
	testkit.Wait(t, 30*time.Second, "the job pending with a reason", func() (bool, string) {
		st = h.status(hd)
		return st.State == spec.Pending && st.Msg != "", st.State.String() + " " + st.Msg
	})
	why := strings.TrimPrefix(st.Msg, "pending: ")
	if r := h.exec("log", hd); r.code != 0 || r.stdout != "" || r.stderr != "wick: "+hd+" is PENDING ("+why+"): no logs yet\n" {
		t.Errorf("log: %d %q %q", r.code, r.stdout, r.stderr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	cmd := h.wickCmd(ctx, "log", "-f", hd)
	errp, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(errp).ReadString('\n')
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if want := "wick: " + hd + " is PENDING (" + why + "): following its logs once it starts\n"; line != want {
		t.Errorf("log -f: %q, want %q", line, want)
	}
}
