package local

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
)

// A watch finds the torchrun workers below a replica's leader by the variables
// torchrun gives them, learns the node's group rank, and records when each exits, in
// the order they did.
func TestWorkerWatch(t *testing.T) {
	// The leader (as torchrun would) starts two workers with GROUP_RANK=1 and a
	// helper without; worker local rank 1 exits first, then local rank 0, 2.5 s
	// later: the watch samples, and a busy machine may keep it from sampling for a
	// while (CI once saw 0.6 s of real gap as 158 ms).
	leader := exec.Command("sh", "-c", `
GROUP_RANK=1 LOCAL_RANK=0 sh -c 'sleep 3' &
GROUP_RANK=1 LOCAL_RANK=1 sh -c 'sleep 0.5' &
sleep 3.5 &
wait`)
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	defer leader.Process.Kill()
	learned := make(chan int, 4)
	w := watchWorkers(leader.Process.Pid, func(g int) { learned <- g })
	defer w.stop()
	select {
	case g := <-learned:
		if g != 1 {
			t.Errorf("learned group rank %d, want 1", g)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no group rank learned")
	}
	if err := leader.Wait(); err != nil {
		t.Fatal(err)
	}
	w.stop()
	exits := w.Exits()
	if len(exits) != 2 {
		t.Fatalf("exits %v, want the 2 workers'", exits)
	}
	var times []time.Time
	for _, at := range exits {
		times = append(times, at)
	}
	d := times[1].Sub(times[0]).Abs()
	if d < time.Second {
		t.Errorf("the workers exited %v apart, want about 2.5s", d)
	}
	if w.GroupRank() != 1 {
		t.Errorf("group rank %d", w.GroupRank())
	}
}

// rdzvApp is dist.ddp's AppDef at -j 2x2 with rendezvous port port.
func rdzvApp(port int) spec.Role {
	r := spec.NewRole("train", "img", "bash", "-c", "torchrun --rdzv_backend c10d --rdzv_endpoint $${${rank0_env}:=localhost}:"+strconv.Itoa(port)+" --rdzv_id '${app_id}' --nnodes 2 --nproc_per_node 2 train.py")
	r.NumReplicas = 2
	r.PortMap = map[string]int{"c10d": port}
	return r
}

// Each multi-node app on the default port gets a free port of its own; a port the user
// chose is kept; one node uses torchelastic's own free port.
func TestRendezvousPort(t *testing.T) {
	s := testScheduler(t, false)
	a, b := s.rendezvousPort("train-a1", rdzvApp(29500)), s.rendezvousPort("train-b2", rdzvApp(29500))
	if a == 0 || b == 0 || a == b || a == 29500 || b == 29500 {
		t.Errorf("ports %d and %d, want two different ports, not 29500", a, b)
	}
	// A port that is taken is skipped.
	l, err := net.Listen("tcp", ":"+strconv.Itoa(a))
	if err == nil {
		defer l.Close()
		if p := s.rendezvousPort("train-a1", rdzvApp(29500)); p == a || p == 0 {
			t.Errorf("port %d again, though it is taken", p)
		}
	}
	if p := s.rendezvousPort("train-a1", rdzvApp(29512)); p != 0 {
		t.Errorf("a chosen port was replaced by %d", p)
	}
	one := rdzvApp(29500)
	one.NumReplicas = 1
	if p := s.rendezvousPort("train-a1", one); p != 0 {
		t.Errorf("one node got port %d", p)
	}
	argv := withRendezvousPort([]string{"bash", "-c", "torchrun --rdzv_endpoint ${TORCHX_RANK0_HOST:=localhost}:29500 --rdzv_id x t.py --port 29500"}, 31000)
	if want := "torchrun --rdzv_endpoint ${TORCHX_RANK0_HOST:=localhost}:31000 --rdzv_id x t.py --port 29500"; argv[2] != want {
		t.Errorf("argv %q, want %q", argv[2], want)
	}
}

// A multi-node c10d torchrun role whose rendezvous port another program holds (one
// that accepts and never answers: torch's store client would wait on it for ever)
// fails before any replica starts, and says why.
func TestRendezvousPortHeldFailsTheApp(t *testing.T) {
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	s := testScheduler(t, false)
	marker := filepath.Join(t.TempDir(), "ran")
	r := role("trainer", "bash", "-c", "touch "+marker+"; torchrun --rdzv_backend c10d --rdzv_endpoint localhost:"+port+" --nnodes 2 --nproc_per_node 1 train.py")
	r.NumReplicas = 2
	st := waitApp(t, s, start(t, s, appOf("ddp", r), nil))
	want := "rendezvous port " + port + " is in use"
	if st.State != spec.Failed || st.Msg != want || spec.ErrorMessage(st.StructuredError) != want {
		t.Errorf("app %s %q %q, want FAILED: %s", st.State, st.Msg, st.StructuredError, want)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a replica ran")
	}
}

// The endpoint's host decides whether its port is this machine's to check.
func TestRendezvousThisHost(t *testing.T) {
	for _, c := range []struct {
		host string
		env  map[string]string
		want bool
	}{
		{"localhost", nil, true},
		{"127.0.0.1", nil, true},
		{"[::1]", nil, true},
		{"${TORCHX_RANK0_HOST:=localhost}", nil, true},
		{"${TORCHX_RANK0_HOST:=localhost}", map[string]string{"TORCHX_RANK0_HOST": "trainer-7.example"}, false},
		{"gpu-node-3", nil, false},
	} {
		if got := thisHost(c.host, c.env); got != c.want {
			t.Errorf("thisHost(%q, %v) = %v, want %v", c.host, c.env, got, c.want)
		}
	}
}
