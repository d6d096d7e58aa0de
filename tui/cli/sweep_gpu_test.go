package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
	"github.com/wick-dev/wick/internal/testkit"
)

// fakeSMI writes an nvidia-smi that answers as NVIDIA documents it (see
// engine/gpus/testdata) for a machine of n GPUs, and returns its directory.
func fakeSMI(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	var query, list strings.Builder
	for i := range n {
		uuid := fmt.Sprintf("GPU-48aeb943-9458-4282-da24-e5f49e0db4%02d", i)
		fmt.Fprintf(&query, "%d, %s\n", i, uuid)
		fmt.Fprintf(&list, "GPU %d: NVIDIA A100 40GB PCIe (UUID: %s)\n", i, uuid)
	}
	script := "#!/bin/sh\ncase \"$1\" in\n--query-gpu=*) printf '%s' '" + query.String() + "' ;;\n-L) printf '%s' '" + list.String() + "' ;;\n*) exit 9 ;;\nesac\n"
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// replicaRun is what one replica of a sweep's app wrote: its devices and when it ran.
type replicaRun struct {
	who        string
	devs       []string
	start, end int64
}

// TestSweepGivesEveryReplicaItsOwnGPUs runs a sweep of three apps of two replicas
// (one GPU each) on a machine of four GPUs (nvidia-smi answering as NVIDIA documents
// it), with auto_set_cuda_visible_devices off and on, and under a user's
// CUDA_VISIBLE_DEVICES of UUIDs: every replica saw one device of the pool, and no
// two replicas that ran at the same time saw the same one.
func TestSweepGivesEveryReplicaItsOwnGPUs(t *testing.T) {
	t.Parallel()
	smi := fakeSMI(t, 4)
	uuids := []string{"GPU-48aeb943-9458-4282-da24-e5f49e0db44b", "MIG-fb42055e-9e53-5764-9278-438605a3014c",
		"MIG-3d4db13e-c42d-5555-98f4-8b50389791bc", "MIG-de819d17-9382-56a2-b9ca-aec36c88014f"}
	for _, c := range []struct {
		name    string
		cfg     []string
		visible string
		pool    []string
	}{
		{"auto off", nil, "", []string{"0", "1", "2", "3"}},
		{"auto on", []string{"-cfg", "auto_set_cuda_visible_devices=true"}, "", []string{"0", "1", "2", "3"}},
		{"user's UUIDs", nil, strings.Join(uuids, ","), uuids},
		{"user's indexes", []string{"-cfg", "auto_set_cuda_visible_devices=true"}, "3,1", []string{"3", "1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			h.cmdEnv = append(h.cmdEnv, "PATH="+smi+":"+os.Getenv("PATH"))
			if c.visible != "" {
				h.cmdEnv = append(h.cmdEnv, "CUDA_VISIBLE_DEVICES="+c.visible)
			}
			out := filepath.Join(h.work, "runs")
			if err := os.Mkdir(out, 0o755); err != nil {
				t.Fatal(err)
			}
			script := filepath.Join(h.work, "show.sh")
			os.WriteFile(script, []byte(`#!/bin/sh
s=$(date +%s%N)
sleep 0.4
echo "$WICK_APP_ID/$WICK_REPLICA_ID ${CUDA_VISIBLE_DEVICES-unset} $s $(date +%s%N)" > "`+out+`/$WICK_APP_ID-$WICK_REPLICA_ID"
`), 0o755)
			args := append([]string{"run"}, c.cfg...)
			args = append(args, "--sweep", "x=a,b,c", "utils.sh", "--gpu", "1", "--num_replicas", "2", "--", script)
			if r := h.exec(args...); r.code != 0 {
				t.Fatalf("wick %q: exit %d: %s", args, r.code, r.stderr)
			}
			var runs []replicaRun
			testkit.Wait(t, 20*time.Second, "six replicas ran", func() (bool, string) {
				ents, _ := os.ReadDir(out)
				return len(ents) == 6, fmt.Sprint(len(ents))
			})
			ents, _ := os.ReadDir(out)
			for _, e := range ents {
				b, err := os.ReadFile(filepath.Join(out, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				f := strings.Fields(string(b))
				if len(f) != 4 {
					t.Fatalf("%s: %q", e.Name(), b)
				}
				start, _ := strconv.ParseInt(f[2], 10, 64)
				end, _ := strconv.ParseInt(f[3], 10, 64)
				runs = append(runs, replicaRun{who: f[0], devs: strings.Split(f[1], ","), start: start, end: end})
			}
			for i, a := range runs {
				if len(a.devs) != 1 || !slices.Contains(c.pool, a.devs[0]) {
					t.Errorf("%s saw %q: want one device of %q", a.who, a.devs, c.pool)
				}
				for _, b := range runs[i+1:] {
					if a.start < b.end && b.start < a.end && slices.Equal(a.devs, b.devs) {
						t.Errorf("%s and %s ran at once on %q", a.who, b.who, a.devs)
					}
				}
			}
		})
	}
}

// TestSweepSlurmSubmitLimit runs a sweep on the real Slurm behind an sbatch that
// refuses, as Slurm does past a QOS's MaxSubmitJobsPerUser of 1, while a job it
// submitted is still in the queue: sbatch's two lines are the reason
// (job_state_reason_string, src/common/slurm_protocol_defs.c) and
// ESLURM_ACCOUNTING_POLICY's message (src/common/slurm_errno.c). (This cluster has no
// accounting database, which a real QOS limit needs.) Every app runs in the end; the
// queue's log says why they waited.
func TestSweepSlurmSubmitLimit(t *testing.T) {
	needSlurm(t)
	h := newHarness(t)
	bin := t.TempDir()
	state := filepath.Join(bin, "submitted")
	real, err := exec.LookPath("sbatch")
	if err != nil {
		t.Fatal(err)
	}
	wrapper := `#!/bin/sh
ids=$(paste -sd, "` + state + `" 2>/dev/null)
if [ -n "$ids" ] && [ "$(squeue -h -j "$ids" 2>/dev/null | wc -l)" -ge 1 ]; then
	echo "sbatch: error: QOSMaxSubmitJobPerUserLimit" >&2
	echo "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)" >&2
	exit 1
fi
out=$(` + real + ` "$@") || exit $?
echo "$out"
echo "${out%%;*}" >> "` + state + `"
`
	if err := os.WriteFile(filepath.Join(bin, "sbatch"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	h.cmdEnv = append(h.cmdEnv, "PATH="+bin+":"+os.Getenv("PATH"))
	r := h.exec("run", "-s", "slurm", "--sweep", "msg=a,b,c", "utils.echo")
	if r.code != 0 || !strings.Contains(r.stderr, "3 SUCCEEDED") {
		t.Fatalf("the sweep: %d %s", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	dir, err := sweep.NewStore(h.home).Dir(id)
	if err != nil {
		t.Fatal(err)
	}
	log, _ := os.ReadFile(filepath.Join(dir, sweep.QueueLog))
	if !strings.Contains(string(log), "refused by its scheduler (Slurm QOSMaxSubmitJobPerUserLimit)") {
		t.Errorf("the queue's log does not say why apps waited:\n%s", log)
	}
	h.exec("delete", id)
}

// TestSweepResumeKeepsTheLaunchEnvironment: the queue is killed while the first app
// runs and resumed from a shell with another environment: every app got the
// launching command's environment, and the resume says what it did not use.
func TestSweepResumeKeepsTheLaunchEnvironment(t *testing.T) {
	h := newHarness(t)
	out := filepath.Join(h.work, "runs")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(h.work, "show.sh")
	os.WriteFile(script, []byte("#!/bin/sh\nwhile [ ! -e \""+out+"/go\" ]; do sleep 0.1; done\necho \"$WICK_SWEEP_TEST_VAR $CUDA_VISIBLE_DEVICES\" > \""+out+"/$WICK_APP_ID\"\n"), 0o755)
	h.cmdEnv = []string{"WICK_SWEEP_TEST_VAR=launch", "CUDA_VISIBLE_DEVICES="}
	r := h.exec("run", "--detach", "--max-parallel", "1", "--sweep", "x=a,b,c", "utils.sh", "--", script)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	store := sweep.NewStore(h.home)
	testkit.Wait(t, 20*time.Second, "first app running", func() (bool, string) {
		s := states(sweepRows(t, h, id))
		return s == "RUNNING QUEUED QUEUED", s
	})
	sw, err := store.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(sw.Queue.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.Wait(t, 20*time.Second, "the queue dead", func() (bool, string) {
		sw, _ := store.Load(id)
		return !sw.QueueRunning(), ""
	})
	h.cmdEnv = []string{"WICK_SWEEP_TEST_VAR=resume", "CUDA_VISIBLE_DEVICES=3"}
	r = h.exec("sweep", "resume", id)
	if r.code != 0 || !strings.Contains(r.stderr, "differs in CUDA_VISIBLE_DEVICES, WICK_SWEEP_TEST_VAR (not used)") {
		t.Fatalf("resume: %d %s", r.code, r.stderr)
	}
	if err := os.WriteFile(filepath.Join(out, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	testkit.Wait(t, 30*time.Second, "three apps ran", func() (bool, string) {
		ents, _ := os.ReadDir(out)
		return len(ents) == 4, fmt.Sprint(len(ents))
	})
	ents, _ := os.ReadDir(out)
	for _, e := range ents {
		if e.Name() == "go" {
			continue
		}
		b, _ := os.ReadFile(filepath.Join(out, e.Name()))
		if got := strings.TrimSpace(string(b)); got != "launch" {
			t.Errorf("%s saw %q, want the launching environment's (launch, no GPU)", e.Name(), got)
		}
	}
	// The apps' supervisors and the queue write their ends into the home after the
	// apps' own files: the test's directory goes only once they are done.
	testkit.Wait(t, 30*time.Second, "the sweep done and its queue ended", func() (bool, string) {
		s := states(sweepRows(t, h, id))
		sw, err := store.Load(id)
		return s == "SUCCEEDED SUCCEEDED SUCCEEDED" && err == nil && !sw.QueueRunning(), s
	})
}

// TestPlainRunAndSweepShareNoGPU runs, on a machine of two GPUs (nvidia-smi answering
// as NVIDIA documents it), a plain `wick run` with auto_set_cuda_visible_devices that
// holds a GPU, then a sweep of two apps of one GPU each: the sweep's first app runs
// on the GPU the plain run does not hold, its second waits (the queue's log says for
// which GPU and which app) until the plain run has ended. No two replicas that ran at
// the same time saw the same device.
func TestPlainRunAndSweepShareNoGPU(t *testing.T) {
	h := newHarness(t)
	h.cmdEnv = append(h.cmdEnv, "PATH="+fakeSMI(t, 2)+":"+os.Getenv("PATH"))
	out, gate := filepath.Join(h.work, "runs"), filepath.Join(h.work, "gate")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(h.work, "hold.sh")
	os.WriteFile(script, []byte(`#!/bin/sh
s=$(date +%s%N)
while [ ! -e "`+gate+`" ]; do sleep 0.05; done
echo "$WICK_APP_ID/$WICK_REPLICA_ID ${CUDA_VISIBLE_DEVICES-unset} $s $(date +%s%N)" > "`+out+`/$WICK_APP_ID-$WICK_REPLICA_ID"
`), 0o755)
	plain := h.exec("run", "--detach", "-cfg", "auto_set_cuda_visible_devices=true", "utils.sh", "--gpu", "1", "--", script)
	if plain.code != 0 {
		t.Fatalf("plain run: exit %d: %s", plain.code, plain.stderr)
	}
	plainH := strings.TrimSpace(plain.stdout)
	h.waitState(plainH, spec.Running)
	r := h.exec("run", "--detach", "--sweep", "x=a,b", "utils.sh", "--gpu", "1", "--", script)
	if r.code != 0 {
		t.Fatalf("sweep: exit %d: %s", r.code, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	dir, err := sweep.NewStore(h.home).Dir(id)
	if err != nil {
		t.Fatal(err)
	}
	plainID := plainH[strings.LastIndex(plainH, "/")+1:]
	testkit.Wait(t, 20*time.Second, "the queue says the second app waits for GPU 0", func() (bool, string) {
		log, _ := os.ReadFile(filepath.Join(dir, sweep.QueueLog))
		return strings.Contains(string(log), "waiting for GPUs: devices in use: GPU 0 (app "+plainID+")"), string(log)
	})
	// Having said so, the queue tries the pool's other GPU: one app starts there (a
	// moment after the line above), the other stays queued while GPU 0 is held.
	testkit.Wait(t, 20*time.Second, "while the plain run holds GPU 0, one app of the sweep started and one queued", func() (bool, string) {
		list := h.exec("list", "--sweep", id)
		var states []string
		for _, l := range strings.Split(list.stdout, "\n") {
			if f := strings.Fields(l); len(f) > 3 && strings.HasPrefix(f[0], "local_cwd://") {
				states = append(states, f[2])
			}
		}
		started := slices.IndexFunc(states, func(s string) bool { return s == "SUBMITTED" || s == "PENDING" || s == "RUNNING" })
		return len(states) == 2 && started >= 0 && states[1-started] == "QUEUED", fmt.Sprintf("%q\n%s", states, list.stdout)
	})
	os.WriteFile(gate, nil, 0o600)
	testkit.Wait(t, 30*time.Second, "three replicas ran", func() (bool, string) {
		ents, _ := os.ReadDir(out)
		return len(ents) == 3, fmt.Sprint(len(ents))
	})
	var runs []replicaRun
	ents, _ := os.ReadDir(out)
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(out, e.Name()))
		f := strings.Fields(string(b))
		if len(f) != 4 {
			t.Fatalf("%s: %q", e.Name(), b)
		}
		start, _ := strconv.ParseInt(f[2], 10, 64)
		end, _ := strconv.ParseInt(f[3], 10, 64)
		runs = append(runs, replicaRun{who: f[0], devs: strings.Split(f[1], ","), start: start, end: end})
	}
	for i, a := range runs {
		if len(a.devs) != 1 || (a.devs[0] != "0" && a.devs[0] != "1") {
			t.Errorf("%s saw %q: want one GPU of 0,1", a.who, a.devs)
		}
		if strings.HasPrefix(a.who, plainID) && a.devs[0] != "0" {
			t.Errorf("the plain run saw %q, want 0 (the first free GPU)", a.devs)
		}
		for _, b := range runs[i+1:] {
			if a.start < b.end && b.start < a.end && slices.Equal(a.devs, b.devs) {
				t.Errorf("%s and %s ran at once on %q", a.who, b.who, a.devs)
			}
		}
	}
}
