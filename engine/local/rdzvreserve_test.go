package local

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRendezvousPortReservedUntilTheAppEnds: a multi-node torchrun role on the default
// port gets a port that stays reserved while the app runs, before any node binds it
// (torch takes seconds to start): planned again from the same starting point, the
// next app gets another one; once the app ended, its port is free again.
func TestRendezvousPortReservedUntilTheAppEnds(t *testing.T) {
	s := testScheduler(t, false)
	bin := t.TempDir()
	torchrun := filepath.Join(bin, "torchrun") // never binds: the reservation alone holds the port
	if err := os.WriteFile(torchrun, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := role("trainer", torchrun, "--nnodes=2", "--nproc_per_node=1", "--rdzv_backend=c10d", "--rdzv_endpoint=localhost:29500", "train.py")
	r.NumReplicas, r.PortMap = 2, map[string]int{"c10d": 29500}
	app := appOf("ddp", r)
	id := start(t, s, app, nil)
	t.Cleanup(func() { _ = s.Cancel(t.Context(), id) })
	req := dryRunOf(t, s, id)
	port := req.Roles[0].RdzvPort
	if port == 0 {
		t.Fatal("no rendezvous port chosen")
	}
	if owner, held := s.portHolder(port); !held || owner != id {
		t.Fatalf("port %d: held %v by %q", port, held, owner)
	}
	// The same starting point as the app's (its id): the port is free to bind, but
	// reserved.
	if again := s.rendezvousPort(id, r); again == port || again == 0 {
		t.Errorf("planned again on %d: want another port than %d", again, port)
	}
	if err := s.Cancel(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	waitApp(t, s, id)
	if _, held := s.portHolder(port); held {
		t.Errorf("port %d still reserved after the app ended", port)
	}
	if again := s.rendezvousPort(id, r); again != port {
		t.Errorf("after the end: port %d, want %d again", again, port)
	}
}

// dryRunOf reads the request app id was launched with.
func dryRunOf(t *testing.T, s *Scheduler, id string) *Request {
	t.Helper()
	var l launch
	if err := readJSON(filepath.Join(s.appsDir(), id), launchFile, &l); err != nil {
		t.Fatal(err)
	}
	return l.Request
}
