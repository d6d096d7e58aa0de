package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// watchRuns repeats TestDockerTwoWorkersRootCause's runs, for the figure of how often
// the raising rank is named:
//
//	go test ./engine/docker -run TestDockerTwoWorkersRootCause -v -args -watch.runs=30
var watchRuns = flag.Int("watch.runs", 3, "runs of TestDockerTwoWorkersRootCause")

// TestDockerTwoWorkersRootCause: two workers of one torchrun node (one container) fail
// within the same second, without torch: the helper image's fake torchrun (see
// testdata/docker/helper/torchrun.go) with the sampler's tools (sh, bash, cat, tr,
// sed, date, sleep, mv: this machine's, with their libraries). Worker FAIL_RANK raises and
// finalizes for seconds, its peer fails in gloo after it and exits first, and the
// agent's summary lists the peer alone: the summary names the peer, and the log's
// unprefixed tracebacks say no rank. The sampler in the container saw the raising
// worker begin to end first: the cause is its rank. A run whose samples did not tell
// the two apart (a loaded machine's sampler may see both at one sample, or the
// Engine stamp a traceback late) says the tie, "rank 0 or 1: ..."; the peer's rank is
// never said. Here the raising worker's threads go 0.8 s before the peer's, and the
// sampler looks every 0.1 s: most runs name the rank; one of three must. Was "rank
// P: RuntimeError: loss diverged on rank R" (the peer's rank, as the summary has it).
func TestDockerTwoWorkersRootCause(t *testing.T) {
	needEngine(t)
	image := shellImage(t)
	s := newScheduler(t)
	named, ties := 0, 0
	for run := range *watchRuns {
		rank := []int{1, 0}[run%2]
		want := fmt.Sprintf("rank %d: RuntimeError: loss diverged on rank %d at step 3", rank, rank)
		tie := fmt.Sprintf("rank 0 or 1: RuntimeError: loss diverged on rank %d at step 3", rank)
		r := spec.NewRole("ddp", image, "/bin/torchrun", "--nproc_per_node", "2", "--fail_rank", strconv.Itoa(rank))
		id := launch(t, s, &spec.AppDef{Name: "twoworkers", Roles: []spec.Role{r}}, nil)
		d := waitTerminal(t, s, id)
		st := d.Status
		got := st.Msg
		switch {
		case st.State != spec.Failed:
			t.Errorf("run %d: app %s %q, want FAILED", run, st.State, got)
		case got == want:
			named++
		case got == tie:
			ties++
			t.Logf("run %d: rank %d raised: the samples did not tell the workers apart: %q", run, rank, got)
		default:
			t.Errorf("run %d: the app's error is %q, want %q (or the tie)", run, got, want)
			logWatch(t, s, d)
		}
		if e := spec.ErrorMessage(st.StructuredError); e != got {
			t.Errorf("run %d: structured error %q, message %q", run, e, got)
		}
	}
	t.Logf("figure: the raising rank named in %d of %d runs, %d ties (load %.1f)", named, *watchRuns, ties, testkit.Load())
	if named == 0 {
		t.Error("no run named the raising rank")
	}
}

// logWatch logs what the node's sampler wrote and its stderr, with times.
func logWatch(t *testing.T, s *Scheduler, d *sched.Description) {
	t.Helper()
	c := d.Status.Roles[0].Replicas[0].ContainerID
	b, _, err := copyOut(context.Background(), engineOf(t, s), c, watchFile+".watch", 1<<20)
	t.Logf("watch file (%v):\n%s", err, b)
	for _, l := range readLogs(t, s, d.Status.AppID, d.Status.Roles[0].Role, 0, sched.LogOptions{}) {
		t.Logf("%d %s %s", l.Time.UnixMilli(), l.Stream, l.Text)
	}
}

// A healthy node's watch is a line per worker and its end, in the container's error
// volume, and the sampler ends with the container: its process is one of the
// container's, started by its command's wrapper, not by an exec.
func TestDockerWatchEndsWithContainer(t *testing.T) {
	needEngine(t)
	watchEndsWithContainer(t, shellImage(t), newScheduler(t))
}

// TestDockerWorkersFailingAtOnceNamed: the two workers of a node fail in their first
// seconds (the raising one raises 0.5 s after it started, its peer fails of it and
// both are gone by 2 s), and the node's sampler, started by the container's command
// before the agent, saw them: the cause is the raising rank. An exec that started the
// sampler after the container started (how it once started) is held 3 s here, as a
// loaded machine's was (load 46: seconds): such a sampler found the container ended
// (no watch file), and every run named the peer, the one failure torchrun's summary
// lists (0 of 3 runs named the raising rank; one whose sampler came while the raising
// worker lingered would have found the peer gone: the tie). As in
// TestDockerTwoWorkersRootCause, a run
// whose samples did not tell the two apart says the tie, never the peer's rank; one
// of three must name the rank.
func TestDockerWorkersFailingAtOnceNamed(t *testing.T) {
	needEngine(t)
	image := shellImage(t)
	f := newFaultyEngine(t)
	f.holdExec = 3 * time.Second
	s := f.scheduler(t)
	named, ties := 0, 0
	for run := range *watchRuns {
		rank := []int{1, 0}[run%2]
		want := fmt.Sprintf("rank %d: RuntimeError: loss diverged on rank %d at step 3", rank, rank)
		tie := fmt.Sprintf("rank 0 or 1: RuntimeError: loss diverged on rank %d at step 3", rank)
		r := spec.NewRole("ddp", image, "/bin/torchrun", "--nproc_per_node", "2", "--fail_rank", strconv.Itoa(rank), "--fail_after", "500")
		id := launch(t, s, &spec.AppDef{Name: "atonce", Roles: []spec.Role{r}}, nil)
		d := waitTerminal(t, s, id)
		got := d.Status.Msg
		switch {
		case d.Status.State != spec.Failed:
			t.Errorf("run %d: app %s %q, want FAILED", run, d.Status.State, got)
		case got == want:
			named++
		case got == tie:
			ties++
			t.Logf("run %d: rank %d raised: the samples did not tell the workers apart: %q", run, rank, got)
			logWatch(t, s, d)
		default:
			t.Errorf("run %d: the app's error is %q, want %q (or the tie)", run, got, want)
			logWatch(t, s, d)
		}
	}
	t.Logf("figure: the raising rank named in %d of %d runs, %d ties (load %.1f)", named, *watchRuns, ties, testkit.Load())
	if named == 0 {
		t.Error("no run named the raising rank")
	}
}

// A torchrun node in an image without /bin/sh (the helper image: /bin/helper alone)
// runs all the same, its command alone, unwatched: the wrapped container's start
// failed to find the shell, and the container was made again.
func TestDockerWatchWithoutShell(t *testing.T) {
	needEngine(t)
	s := newScheduler(t)
	app := &spec.AppDef{Name: "noshell", Roles: []spec.Role{role("ddp", 1, "echo", "torchrun", "--nproc_per_node", "2")}}
	info := plan(t, s, app, nil, "")
	if c := info.Request.(*Request).Containers[0]; c.Command[0] != "/bin/sh" {
		t.Fatalf("the dry run's command %q is not wrapped", c.Command)
	}
	id := launch(t, s, app, nil)
	d := waitTerminal(t, s, id)
	if d.Status.State != spec.Succeeded {
		t.Fatalf("app %s %q, want SUCCEEDED", d.Status.State, d.Status.Msg)
	}
	if got := texts(readLogs(t, s, id, "ddp", 0, sched.LogOptions{})); !slices.Equal(got, []string{"torchrun --nproc_per_node 2"}) {
		t.Errorf("log %q", got)
	}
	res, err := engineOf(t, s).ContainerInspect(context.Background(), d.Status.Roles[0].Replicas[0].ContainerID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Container; c.Path != "/bin/helper" || !slices.Equal(c.Args, []string{"echo", "torchrun", "--nproc_per_node", "2"}) {
		t.Errorf("the container runs %q %q, want its command alone", c.Path, c.Args)
	}
}

// A wrapped node's command is the process the container's init runs (its parent is
// pid 1), and a cancel stops it as it would unwrapped: its TERM trap runs (it checkpoints
// and exits 0) within the grace period.
func TestDockerWrappedNodeStopsGracefully(t *testing.T) {
	needEngine(t)
	s := newScheduler(t)
	r := spec.NewRole("ddp", shellImage(t), "/bin/sh", "-c", `: torchrun --nproc_per_node 2
read -r p _ _ pp _ </proc/self/stat; echo "pid $p parent $pp"
trap 'echo TERM trap; exit 0' TERM; echo waiting for SIGTERM; while :; do sleep 0.1; done`)
	id := launch(t, s, &spec.AppDef{Name: "wrapterm", Roles: []spec.Role{r}}, spec.Cfg{OptStopTimeout: 600})
	deadline := time.Now().Add(testkit.Scale(60 * time.Second))
	var logs string
	for !strings.Contains(logs, "waiting for SIGTERM") {
		if time.Now().After(deadline) {
			t.Fatalf("the node never set its trap:\n%s", logs)
		}
		time.Sleep(50 * time.Millisecond)
		logs = strings.Join(texts(readLogs(t, s, id, "ddp", 0, sched.LogOptions{})), "\n")
	}
	if !strings.Contains(logs, " parent 1\n") {
		t.Errorf("the node's command is not the init's child:\n%s", logs)
	}
	// A cancel that did not reach the trap would wait out the 600 s grace: the
	// deadline of waitTerminal (60 s) fails it.
	if err := s.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	d := waitTerminal(t, s, id)
	rep := d.Status.Roles[0].Replicas[0]
	if d.Status.State != spec.Cancelled || rep.ExitCode == nil || *rep.ExitCode != 0 {
		t.Errorf("app %s, replica exit %v, want CANCELLED, 0 (its trap's)", d.Status.State, rep.ExitCode)
	}
	if logs := strings.Join(texts(readLogs(t, s, id, "ddp", 0, sched.LogOptions{})), "\n"); !strings.Contains(logs, "TERM trap") {
		t.Errorf("the trap did not run:\n%s", logs)
	}
}

func watchEndsWithContainer(t *testing.T, image string, s *Scheduler) {
	// Workers that succeed once the sampler has seen them (their line in the watch
	// file; a worker's pid is what its shell reads of /proc/self/stat: the command's
	// "$$" would say "$"), 30 s at most, under an agent that is a shell (the sampler
	// finds any process whose children have GROUP_RANK), which outlives them by a
	// second. Workers that slept a fixed 2 s ended unseen where the sampler started
	// later than that.
	worker := `read -r p _ </proc/self/stat; n=0
until case "$(cat ` + watchFile + `.watch 2>/dev/null)" in *" $p $RANK 1"*) true;; *) false;; esac; do
n=$((n+1)); [ $n -lt 300 ] || exit 1; sleep 0.1; done`
	r := spec.NewRole("ddp", image, "/bin/sh", "-c",
		`: torchrun; export GROUP_RANK=0; RANK=0 sh -c "$1" & a=$!; RANK=1 sh -c "$1" & b=$!; wait $a && wait $b || exit 1; sleep 1`,
		"agent", worker)
	id := launch(t, s, &spec.AppDef{Name: "healthy", Roles: []spec.Role{r}}, nil)
	d := waitTerminal(t, s, id)
	if d.Status.State != spec.Succeeded {
		logWatch(t, s, d)
		t.Fatalf("app %s %q, want SUCCEEDED", d.Status.State, d.Status.Msg)
	}
	cli := engineOf(t, s)
	c := d.Status.Roles[0].Replicas[0].ContainerID
	b, _, err := copyOut(context.Background(), cli, c, watchFile+".watch", 1<<20)
	if err != nil {
		t.Fatalf("no watch file: %v", err)
	}
	// Each worker: its thread count (1), then, unless the container ended first, gone.
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	started := regexp.MustCompile(`^\d{13} \d+ [01] 1$`)
	n := 0
	for _, l := range lines {
		if started.MatchString(l) {
			n++
		}
	}
	if n != 2 || len(lines) > 4 {
		t.Errorf("watch file, want a line per worker and its end:\n%s", b)
	}
	res, err := cli.ContainerInspect(context.Background(), c, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Container.ExecIDs) > 0 {
		t.Errorf("execs ran in the container: %q", res.Container.ExecIDs)
	}
}

var shellImageOnce struct {
	sync.Once
	ref string
	err error
}

// shellImage is the helper image with this machine's shell and the tools the sampler
// runs (and their libraries), and /bin/torchrun, the helper's fake torchrun.
func shellImage(t *testing.T) string {
	t.Helper()
	tools := []string{"sh", "bash", "cat", "tr", "sed", "date", "sleep", "mv"}
	for _, tool := range append(tools, "ldd") {
		if _, err := exec.LookPath(tool); err != nil {
			testkit.Missing(t, tool+" is not installed: the watch test puts this machine's in its image")
		}
	}
	shellImageOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(2*time.Minute))
		defer cancel()
		shellImageOnce.ref, shellImageOnce.err = buildShellImage(ctx, env.cli, tools, env.image+"-sh")
	})
	if shellImageOnce.err != nil {
		t.Fatalf("building the shell image: %v", shellImageOnce.err)
	}
	return shellImageOnce.ref
}

// libraryPath matches the libraries of ldd's output: "libc.so.6 => /lib/.../libc.so.6
// (0x...)" and "/lib64/ld-linux-x86-64.so.2 (0x...)".
var libraryPath = regexp.MustCompile(`(?m)(?:=> |^\s+)(/\S+) \(0x`)

// buildShellImage imports an image of the helper (TestMain built it in the state
// directory), linked as /bin/torchrun, and of this machine's tools with their
// libraries, each at its own path.
func buildShellImage(ctx context.Context, cli *client.Client, tools []string, ref string) (string, error) {
	files := map[string]string{"bin/helper": filepath.Join(env.stateDir, "helper")}
	for _, tool := range tools {
		p, err := exec.LookPath(tool)
		if err != nil {
			return "", err
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return "", err
		}
		files["bin/"+tool] = real
		out, err := exec.CommandContext(ctx, "ldd", real).Output()
		if err != nil {
			return "", fmt.Errorf("ldd %s: %v", real, err)
		}
		for _, m := range libraryPath.FindAllSubmatch(out, -1) {
			lib := string(m[1])
			files[strings.TrimPrefix(lib, "/")] = lib
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	dirs := map[string]bool{}
	for _, d := range []string{"tmp", "app", "etc", "dev", "proc", "sys", "run"} {
		dirs[d] = true
	}
	for name := range files {
		for d := filepath.Dir(name); d != "."; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		mode := int64(0o755)
		if d == "tmp" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Name: d + "/", Mode: mode, Typeflag: tar.TypeDir, ModTime: now}); err != nil {
			return "", err
		}
	}
	for name, src := range files {
		body, err := os.ReadFile(src)
		if err != nil {
			return "", err
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg, ModTime: now}); err != nil {
			return "", err
		}
		if _, err := tw.Write(body); err != nil {
			return "", err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: "bin/torchrun", Linkname: "helper", Typeflag: tar.TypeSymlink, Mode: 0o777, ModTime: now}); err != nil {
		return "", err
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	return importImage(ctx, cli, &buf, ref)
}
