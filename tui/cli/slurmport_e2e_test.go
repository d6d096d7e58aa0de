package cli

import (
	"net"
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

// TestSlurmDDPPortInUse: a rendezvous port the user chose is kept on Slurm, and when
// another program holds it (here one that closes what connects) the job's error says
// so, read from the nodes' stderr once the job has failed, not the store errors that
// follow from it.
func TestSlurmDDPPortInUse(t *testing.T) {
	t.Parallel()
	needSlurm(t)
	h := multinodeHarness(t)
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	defer func() {
		l.Close()
		<-done
	}()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	args := multinodeArgs("2x1", []string{"--cpu", "1", "--rdzv_port", port}, "1")
	args[2] = "slurm"
	r := execLong(h, args...)
	want := "rendezvous port " + port + " is in use"
	if r.code == 0 || lastLine(r.stderr) != "wick: "+want {
		t.Errorf("exit %d, last line %q, want %q\n%s", r.code, lastLine(r.stderr), "wick: "+want, r.stderr)
	}
	handle := handleOf(t, r)
	if st := h.status(handle); st.State != spec.Failed || spec.ErrorMessage(st.StructuredError) != want {
		t.Errorf("status %s %q", st.State, st.StructuredError)
	}
	b, err := os.ReadFile(filepath.Join(h.work, "slurm-"+handle[strings.LastIndexByte(handle, '/')+1:]+".out"))
	if err != nil || batchLogPort.Match(b) {
		t.Errorf("the batch script picked a port for a job whose port was chosen: %v\n%s", err, b)
	}
}

// TestSlurmDDPPortHeldSilent: when the program holding the chosen rendezvous port
// accepts connections and never answers (torch's store client waits on it for ever:
// the job stayed RUNNING until cancelled), the batch script finds it listening on
// rank 0's node before srun and the job fails at once with the same cause, wherever
// wick shows it: the attached run's last line, status and describe.
func TestSlurmDDPPortHeldSilent(t *testing.T) {
	t.Parallel()
	needSlurm(t)
	h := multinodeHarness(t)
	l, err := net.Listen("tcp", ":0") // the test cluster's nodes are this machine
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, conn) // never answered, never closed until the end
			mu.Unlock()
		}
	}()
	defer func() {
		l.Close()
		<-done
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	args := multinodeArgs("2x1", []string{"--cpu", "1", "--rdzv_port", port}, "1")
	args[2] = "slurm"
	// execLong waits within its own deadline (testkit-scaled): a job left waiting on
	// the port fails the test there.
	r := execLong(h, args...)
	want := "rendezvous port " + port + " is in use"
	if r.code == 0 || lastLine(r.stderr) != "wick: "+want {
		t.Errorf("exit %d, last line %q, want %q\n%s", r.code, lastLine(r.stderr), "wick: "+want, r.stderr)
	}
	handle := handleOf(t, r)
	st := h.status(handle)
	if st.State != spec.Failed || st.Msg != want || spec.ErrorMessage(st.StructuredError) != want {
		t.Errorf("status %s %q %q", st.State, st.Msg, st.StructuredError)
	}
	for _, rep := range st.Roles[0].Replicas {
		if rep.State != spec.Cancelled || rep.StructuredError != "not started: "+want {
			t.Errorf("replica %d: %s %q, want CANCELLED, not started", rep.ID, rep.State, rep.StructuredError)
		}
	}
	d := h.exec("describe", handle)
	t.Logf("describe:\n%s", d.stdout)
	if d.code != 0 || !strings.Contains(d.stdout, want) {
		t.Errorf("describe: exit %d\n%s%s", d.code, d.stdout, d.stderr)
	}
	id := handle[strings.LastIndexByte(handle, '/')+1:]
	b, err := os.ReadFile(filepath.Join(h.work, "slurm-"+id+".out"))
	if err != nil || !strings.Contains(string(b), "wick: "+want+" on ") || strings.Contains(string(b), "srun exited") {
		t.Errorf("the batch log: %v\n%s", err, b)
	}
	for k := range 2 {
		if f := filepath.Join(h.work, "slurm-"+id+"-"+st.Roles[0].Role+"-"+strconv.Itoa(k)+".err"); fileExists(f) {
			t.Errorf("replica %d started: %s", k, f)
		}
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
