package ranks

import (
	"strings"
	"testing"
	"time"
)

// The two nodes of a real 2x1 run of examples/ddp/multinode.py with dist.ddp's
// default --tee 3 (torch 1.13 on Python 3.11, local_cwd): node 1 hosted the store,
// node 0 could not bind the port (as on any machine that runs two nodes), and both
// agents then crashed while starting their workers (AttributeError in
// torch/distributed/elastic/multiprocessing/api.py, to_map). No worker ran, yet the
// rendezvous was done: the port is not the cause.
func TestPortIsNotBlamedForACrashAfterTheRendezvous(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 3, 24, 7, 0, time.UTC)
	n0 := feedFile(t, "teecrash_node0.stderr", t0)
	n1 := feedFile(t, "teecrash_node1.stderr", t0)
	if len(n0.Unbound) == 0 || len(n1.Unbound) != 0 {
		t.Fatalf("unbound: node 0 %v, node 1 %v", n0.Unbound, n1.Unbound)
	}
	c, ok := RootCause([]NodeReport{
		{Replica: 0, NProc: 1, GroupRank: -1, Failures: n0},
		{Replica: 1, NProc: 1, GroupRank: -1, Failures: n1},
	})
	if ok && strings.Contains(c.String(), "in use") {
		t.Errorf("cause %q: the port is blamed for a crash after the rendezvous", c.String())
	}
}

// A node that could not bind the port while the scheduler saw a process of the job
// hold it (its peer hosting the store) does not make the port the cause, whatever
// stopped the other nodes.
func TestPortHostedByThejobIsNotTheCause(t *testing.T) {
	bind := "W20261125 21:08:12.805591   925 socket.cpp:426] [c10d] The server socket has failed to bind to [::]:29512 (errno: 98 - Address already in use).\n"
	t0 := time.Unix(0, 0)
	nodes := []NodeReport{
		{Replica: 0, GroupRank: -1, Failures: feedText(bind, t0)},
		{Replica: 1, GroupRank: -1, Failures: feedText("", t0)},
	}
	if c, ok := RootCause(nodes); !ok || c.String() != "rendezvous port 29512 is in use" {
		t.Fatalf("without the scheduler's word: cause %q", c.String())
	}
	nodes[0].Hosted = true
	if c, ok := RootCause(nodes); ok {
		t.Errorf("cause %q, want none", c.String())
	}
}
