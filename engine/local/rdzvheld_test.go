package local

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// needTorchrun skips (fails, in CI) a test that needs Debian's torch.
func needTorchrun(t *testing.T) string {
	t.Helper()
	const torchrun = "/usr/bin/torchrun"
	if _, err := os.Stat(torchrun); err != nil || exec.Command("/usr/bin/python3", "-c", "import torch").Run() != nil {
		testkit.Missing(t, "needs Debian's python3-torch: /usr/bin/torchrun and torch for /usr/bin/python3")
	}
	if testing.Short() {
		t.Skip("a real torchrun job takes seconds")
	}
	return torchrun
}

// gatedNodes is a 2-node torchrun role (one worker each, testdata/torch/fail_rank.py)
// on rendezvous port port, whose nodes each touch dir/started.N once running and
// start torchrun only once dir/go.N exists: the test decides what happens between
// wick's start check and torch's rendezvous.
func gatedNodes(t *testing.T, torchrun, dir string, port int) spec.Role {
	t.Helper()
	script, err := filepath.Abs("../../testdata/torch/fail_rank.py")
	if err != nil {
		t.Fatal(err)
	}
	cmd := "touch " + dir + "/started.${replica_id}; " +
		"while [ ! -e " + dir + "/go.${replica_id} ]; do sleep 0.05; done; " +
		"exec " + torchrun + " --nnodes 2 --nproc_per_node 1 --rdzv_backend c10d --rdzv_endpoint localhost:" + strconv.Itoa(port) +
		" --rdzv_id held --max_restarts 0 --tee 1 " + script + " --steps 5"
	r := role("trainer", "bash", "-c", cmd)
	r.NumReplicas = 2
	// As TorchX's dist.ddp runs each node, with --tee 1 and PET_REDIRECTS=1: Debian's
	// torch 1.13 crashes on --tee 3, and without redirects on Python 3.11.
	r.Env = map[string]string{"PET_REDIRECTS": "1", "LOGLEVEL": "WARNING"}
	return r
}

// holdPort listens on port as another program would, until the test ends: answer is
// what it does with each connection (closes it, or keeps it and never answers).
func holdPort(t *testing.T, port int, answer func(net.Conn)) {
	t.Helper()
	l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		held []net.Conn
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
			answer(c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range held {
			c.Close()
		}
	})
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// waitFiles waits until every path exists.
func waitFiles(t *testing.T, what string, paths ...string) {
	t.Helper()
	testkit.Wait(t, time.Minute, what, func() (bool, string) {
		for _, p := range paths {
			if _, err := os.Stat(p); err != nil {
				return false, p + " missing"
			}
		}
		return true, ""
	})
}

// On real torch: a rendezvous port that another program takes after wick's start
// check, before the nodes bind it. Every node fails to bind it (torch says so on its
// stderr) and connects to that program as to its store. One that accepts and never
// answers would keep the job waiting in TCPStore (torch 1.13: as long as its
// timeouts, minutes); the app fails as soon as a node has said it could not bind
// while that program held the port, with the same cause as when the port was held at
// the check, and the node's log shows torch's line.
func TestRendezvousPortTakenAfterTheCheck(t *testing.T) {
	torchrun := needTorchrun(t)
	t.Parallel()
	for _, c := range []struct {
		name   string
		answer func(net.Conn)
	}{
		{"never answers", func(net.Conn) {}},
		{"closes", func(c net.Conn) { c.Close() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := testScheduler(t, false)
			dir := t.TempDir()
			port := testkit.FreePort(t)
			id := start(t, s, appOf("ddp", gatedNodes(t, torchrun, dir, port)), spec.Cfg{OptStopTimeout: 10.0})
			// Both nodes run: the start check has passed, with the port free.
			waitFiles(t, "both nodes started", dir+"/started.0", dir+"/started.1")
			holdPort(t, port, c.answer)
			touch(t, dir+"/go.0")
			touch(t, dir+"/go.1")
			// Well under torch's own timeouts (60 s for the store's first reply, more
			// for a connection that never answers), scaled for a busy machine.
			ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(45*time.Second))
			defer cancel()
			st, err := s.Wait(ctx, id)
			if err != nil {
				d, _ := s.Describe(context.Background(), id)
				t.Fatalf("the app did not end: %v (state %s %q)", err, d.Status.State, d.Status.Msg)
			}
			want := "rendezvous port " + strconv.Itoa(port) + " is in use"
			if st.State != spec.Failed || st.Msg != want || spec.ErrorMessage(st.StructuredError) != want {
				t.Errorf("app %s %q %q, want FAILED: %s", st.State, st.Msg, spec.ErrorMessage(st.StructuredError), want)
			}
			// The first node to say so is enough: the other may be stopped before
			// its torch has got as far.
			var logs string
			for k := range 2 {
				logs += lineTexts(logLines(t, s, id, "trainer", k, sched.LogOptions{Streams: sched.Stderr}))
			}
			if !strings.Contains(logs, "failed to bind to [::]:"+strconv.Itoa(port)+" (errno: 98") {
				t.Errorf("no node's stderr holds torch's bind failure:\n%s", logs)
			}
		})
	}
}

// On real torch: a slow but healthy rendezvous is left alone. Node 0 hosts the store
// and waits; node 1 comes seconds later, fails to bind the port (node 0 holds it, as
// on any machine that runs two nodes) and joins as a client. The job trains to the end.
func TestSlowRendezvousIsLeftAlone(t *testing.T) {
	torchrun := needTorchrun(t)
	t.Parallel()
	s := testScheduler(t, false)
	dir := t.TempDir()
	port := testkit.FreePort(t)
	id := start(t, s, appOf("ddp", gatedNodes(t, torchrun, dir, port)), spec.Cfg{OptStopTimeout: 10.0})
	waitFiles(t, "both nodes started", dir+"/started.0", dir+"/started.1")
	touch(t, dir+"/go.0")
	// Node 0 hosts the store: it accepts connections on the port.
	testkit.Wait(t, time.Minute, "node 0 hosts the store", func() (bool, string) {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, ""
	})
	// The rendezvous waits on node 1, which only now starts torch (seconds more).
	touch(t, dir+"/go.1")
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(2*time.Minute))
	defer cancel()
	st, err := s.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	node1 := lineTexts(logLines(t, s, id, "trainer", 1, sched.LogOptions{Streams: sched.Stderr}))
	if st.State != spec.Succeeded {
		t.Fatalf("app %s %q, want SUCCEEDED\nnode 1:\n%s", st.State, st.Msg, node1)
	}
	if !strings.Contains(node1, "failed to bind to") {
		t.Errorf("node 1 did not try to host the store (the case this test is about):\n%s", node1)
	}
	if out := lineTexts(logLines(t, s, id, "trainer", 0, sched.LogOptions{Streams: sched.Stdout})); !strings.Contains(out, "step 4") {
		t.Errorf("node 0 did not train to the end:\n%s", out)
	}
}

// Who listens on a port, as the supervisor tells it when a node could not bind it:
// nobody, a process of the app (here the test itself, as a replica's leader), or
// another program (on two looks).
func TestPortHolder(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	r := &replica{}
	sv := &supervisor{all: []*replica{r}}
	if got := sv.portHolder(port); got != holderForeign {
		t.Errorf("a listener outside the app: %d, want holderForeign", got)
	}
	r.leader.Store(int32(os.Getpid()))
	if got := sv.portHolder(port); got != holderApp {
		t.Errorf("the app's own listener: %d, want holderApp", got)
	}
	l.Close()
	if got := sv.portHolder(port); got != holderNone {
		t.Errorf("no listener: %d, want holderNone", got)
	}
}
