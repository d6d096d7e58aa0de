package local

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wick-dev/wick/engine/safefs"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/spec"
)

// Two dist.ddp apps on one machine, each with TorchX's default --rdzv_port 29500, would
// share one c10d store: the second app's nodes fail to bind the port, connect to the
// first app's store instead, train under their own rendezvous id until the first app
// ends, and then die of a store error. A local scheduler owns the machine, so at
// planning it gives each multi-node torchrun role that kept the default port a free one
// of its own. The AppDef stays TorchX's; the replicas' command lines in the request
// (what the dry run prints and the supervisor runs) carry the port.
//
// A port the user chose (anything but 29500) is kept: if it is taken, the root cause
// says so (ranks.PortInUse).

// rendezvousPort returns the port a role's replicas rendezvous on instead of the
// default, or 0 to keep their command lines: the role is not a multi-node torchrun
// role on the default port, or no port is free. A free port another live app of this
// machine has reserved (its nodes have not bound it yet: torch takes seconds to start)
// is not free: Schedule reserves the port until the app ends (reservePorts).
func (s *Scheduler) rendezvousPort(appID string, role spec.Role) int {
	if !ranks.KeepsDefaultRdzvPort(role) {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(appID))
	start := int(h.Sum32() % ranks.RdzvPortCount)
	for i := range ranks.RdzvPortCount {
		p := ranks.RdzvPortFirst + (start+i)%ranks.RdzvPortCount
		if _, held := s.portHolder(p); !held && portFree(p) {
			return p
		}
	}
	return 0
}

// portsDir holds a file per reserved rendezvous port, named after it, holding the id of
// the app that reserved it.
func (s *Scheduler) portsDir() string { return filepath.Join(s.cfg.StateDir, "local", "ports") }

// portHolder says which live app holds port p's reservation. An app that ended, or
// that is gone, holds nothing: its reservation is stale and taken over.
func (s *Scheduler) portHolder(p int) (string, bool) {
	b, err := os.ReadFile(filepath.Join(s.portsDir(), strconv.Itoa(p)))
	if err != nil || len(b) > 256 {
		return "", false
	}
	owner := strings.TrimSpace(string(b))
	if owner == "" || owner != filepath.Base(owner) || owner == ".." {
		return "", false
	}
	dir := filepath.Join(s.appsDir(), owner)
	st, err := readState(dir)
	// reconcile: an app whose supervisor was killed (kill -9) holds nothing either,
	// before its reaper has written so.
	if err != nil || reconcile(dir, st).State.Terminal() {
		return "", false
	}
	return owner, true
}

// reservePorts reserves the rendezvous ports the plan chose for req's roles until the
// app ends, so that no other app of this machine is planned on them. A port another
// live app reserved since the plan is refused: plan again.
func (s *Scheduler) reservePorts(req *Request) error {
	for _, r := range req.Roles {
		if r.RdzvPort == 0 {
			continue
		}
		if err := safefs.MkdirAll(s.portsDir()); err != nil {
			return fmt.Errorf("rendezvous ports: %w", err)
		}
		if owner, held := s.portHolder(r.RdzvPort); held && owner != req.AppID {
			return fmt.Errorf("rendezvous port %d of role %q was reserved by app %s since the plan: run the dry run again", r.RdzvPort, r.Name, owner)
		}
		if err := safefs.WriteFileAtomic(s.portsDir(), strconv.Itoa(r.RdzvPort), []byte(req.AppID+"\n")); err != nil {
			return fmt.Errorf("rendezvous port %d: %w", r.RdzvPort, err)
		}
	}
	return nil
}

// portFree reports whether a TCP port can be bound on every address, as c10d's store
// binds it.
func portFree(p int) bool {
	l, err := net.Listen("tcp", ":"+strconv.Itoa(p))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// withRendezvousPort returns argv with the default rendezvous port of its endpoint
// replaced by port.
func withRendezvousPort(argv []string, port int) []string {
	return ranks.WithRdzvPort(argv, strconv.Itoa(port))
}

// argvWithPort is withRendezvousPort for a port rendezvousPort chose, argv for 0.
func argvWithPort(argv []string, port int) []string {
	if port == 0 {
		return argv
	}
	return withRendezvousPort(argv, port)
}

// checkRendezvousPorts says why an app must not start: one of its c10d torchrun roles
// rendezvous here on a port another program holds (the user chose it, or it was taken
// after planning). Every node would fail to bind it and connect to that program as to
// their store: one that closes the connection ends the job with store errors, one
// that accepts and never answers leaves it waiting for ever, with nothing in any log
// to say why. The nodes all run here, so a port held before they start is not theirs.
// A port taken after this check is found by checkRendezvousHeld (rdzvheld.go).
func (sv *supervisor) checkRendezvousPorts() error {
	for _, rr := range sv.roles {
		if len(rr.replicas) > 0 && rr.replicas[0].rdzvPort != 0 && !portFree(rr.replicas[0].rdzvPort) {
			return errors.New(ranks.PortInUse(rr.replicas[0].rdzvPort))
		}
	}
	return nil
}

// thisHost reports whether the host of a rendezvous endpoint is this machine:
// localhost, a loopback address, or dist.ddp's ${TORCHX_RANK0_HOST:=localhost} when the
// replica's environment does not set it elsewhere (the store then runs where the user
// said, and its port here says nothing).
func thisHost(host string, env map[string]string) bool {
	if v, def, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(host, "${"), "}"), ":="); ok && strings.HasPrefix(host, "${") {
		host = def
		if set := env[v]; set != "" {
			host = set
		}
	}
	switch strings.Trim(host, "[]") {
	case "localhost", "127.0.0.1", "::1", "0.0.0.0", "::", "":
		return true
	}
	name, err := os.Hostname()
	return err == nil && host == name
}
