package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
)

// batchLogPort is what a Slurm job's batch log says of the rendezvous port its script
// picked.
var batchLogPort = regexp.MustCompile(`(?m)^wick: rendezvous port (\d+) \(free on `)

// TestSlurmDDPTwoJobsAtOnce: two 2-node dist.ddp jobs on TorchX's default rendezvous
// port, running at once with their head nodes on one host (the test cluster's nodes
// are both this machine), both train to the end: each batch script picked a port of
// its own. The second job trains longer than the first: on one port it would have
// joined the first job's c10d store and died when that job ended (its agents'
// RendezvousConnectionError, "rendezvous port 29500 is in use"), as it did before.
func TestSlurmDDPTwoJobsAtOnce(t *testing.T) {
	t.Parallel()
	needSlurm(t)
	h := multinodeHarness(t)
	slurmArgs := func(script ...string) []string {
		args := multinodeArgs("2x1", []string{"--cpu", "1"}, script...) // two jobs fit on the two nodes
		args[2] = "slurm"
		return args
	}
	dr := h.exec(append([]string{"run", "--dryrun"}, slurmArgs("1")[1:]...)...)
	if !strings.Contains(dr.stdout, "${TORCHX_RANK0_HOST:=localhost}:${WICK_RDZV_PORT} --rdzv_id") || !strings.Contains(dr.stdout, "the batch log says which") {
		t.Errorf("the dry run does not say the port is picked when the job starts:\n%s", dr.stdout)
	}
	// Slurm may run them one after the other when other jobs hold the nodes' cores:
	// then they say nothing of a shared port, and the pair runs again.
	for attempt := 1; ; attempt++ {
		var wg sync.WaitGroup
		res := make([]result, 2)
		epochs := []int{1, 3}
		for i, script := range [][]string{{"1", "--step_delay", "0.5"}, {"3", "--step_delay", "0.5"}} {
			wg.Go(func() { res[i] = execLong(h, slurmArgs(script...)...) })
		}
		wg.Wait()
		for i, r := range res {
			if r.code != 0 {
				t.Errorf("job %d: exit %d\n%s", i, r.code, r.stderr)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
		var st [2]spec.AppStatus
		ports := map[string]bool{}
		for i, r := range res {
			handle := handleOf(t, r)
			st[i] = h.status(handle)
			all := h.exec("log", handle)
			for rank := range 2 {
				if last := "[RANK" + strconv.Itoa(rank) + "] Epoch " + strconv.Itoa(epochs[i]-1) + " | loss"; !strings.Contains(all.stdout, last) {
					t.Errorf("job %d: rank %d did not train to the end (%q):\n%s", i, rank, last, all.stdout)
				}
			}
			b, err := os.ReadFile(filepath.Join(h.work, "slurm-"+handle[strings.LastIndexByte(handle, '/')+1:]+".out"))
			m := batchLogPort.FindSubmatch(b)
			if err != nil || m == nil {
				t.Fatalf("job %d: the batch log does not say the port: %v\n%s", i, err, b)
			}
			p, _ := strconv.Atoi(string(m[1]))
			if p < 29501 || p > 31500 || ports[string(m[1])] {
				t.Errorf("job %d: rendezvous port %d (the other job's: %v)", i, p, ports)
			}
			ports[string(m[1])] = true
		}
		// At once: each started (Slurm's times are whole seconds) at least 5 s before the
		// other ended, time for its torchrun to reach its store while the other's was up.
		a, b := st[0].Roles[0].Replicas[0], st[1].Roles[0].Replicas[0]
		if a.Started.Add(5*time.Second).Before(b.Ended) && b.Started.Add(5*time.Second).Before(a.Ended) {
			t.Logf("attempt %d: the jobs ran at once (%s-%s, %s-%s) on ports %v", attempt, a.Started.Format("15:04:05"), a.Ended.Format("15:04:05"), b.Started.Format("15:04:05"), b.Ended.Format("15:04:05"), ports)
			return
		}
		t.Logf("attempt %d: the jobs did not run at once (%s-%s, %s-%s)", attempt, a.Started.Format("15:04:05"), a.Ended.Format("15:04:05"), b.Started.Format("15:04:05"), b.Ended.Format("15:04:05"))
		if attempt == 3 {
			t.Fatalf("the two jobs never ran at once in %d attempts (the cluster's cores were taken): %+v %+v", attempt, a, b)
		}
	}
}
