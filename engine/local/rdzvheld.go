package local

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/spec"
)

// A rendezvous port taken after checkRendezvousPorts (between the check and the nodes'
// start, which takes torch seconds to import) is not seen by the check. What torch
// 1.13 then does (torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py,
// _create_tcp_store): each node whose endpoint host is this machine tries to host the
// c10d store on the port; one that cannot bind it says so on its stderr (c10d's
// "The server socket has failed to bind to [::]:PORT (errno: 98 - Address already in
// use)") and connects to the port as a client instead. In a healthy job one node of
// this machine binds it and the others connect to that node. When every node failed
// to bind it, no node hosts the store: the nodes talk to whatever holds the port. One
// that accepts and never answers keeps them waiting in TCPStore for as long as its
// timeouts allow, with nothing in any log to say why; one that is another app's
// store lets them join a rendezvous that ends when that app does.
//
// So the supervisor reads the first lines of each such node's stderr as they arrive
// (logs.Writer.Tap). Once every node of the role, in its current attempt, has said it
// could not bind the port, and no process of the app holds a listening socket on it,
// the app fails at once with "rendezvous port N is in use". Nothing is timed: a slow
// rendezvous, where some node binds the port however late, is never stopped.

// rdzvTapBytes bounds what is read of each attempt's stderr for the bind failure:
// torch writes it before the rendezvous, after at most torchrun's banner and a
// user's warnings.
const rdzvTapBytes = 256 << 10

// maxNetTCP bounds what is read of /proc/net/tcp and tcp6 for the port's listener.
const maxNetTCP = 16 << 20

// rendezvousPortHere returns the port of a replica's c10d torchrun rendezvous when its
// endpoint is this machine, so that its nodes here try to host the store on it; else 0.
func rendezvousPortHere(req *ReplicaRequest) int {
	argv := req.Argv
	if !runsTorchrun(argv) || ranks.Flag(argv, "rdzv_backend") != "c10d" {
		return 0
	}
	ep := ranks.Flag(argv, "rdzv_endpoint")
	k := strings.LastIndexByte(ep, ':')
	if k < 0 {
		return 0
	}
	p, err := strconv.Atoi(ep[k+1:])
	if err != nil || p <= 0 || p > 65535 || !thisHost(ep[:k], req.Env) {
		return 0
	}
	return p
}

// portHolder is who listened on a node's rendezvous port when it could not bind it.
type portHolder int32

const (
	holderNone    portHolder = iota + 1 // nobody
	holderApp                           // a process of the app: a node hosting the store
	holderForeign                       // another program, on two looks in a row
)

// foreignRecheck is how long after a first look that found another program on the
// port the second look comes: a program that only probes the port (binds and closes
// it, as a planning wick does) is gone by then.
const foreignRecheck = 200 * time.Millisecond

// rendezvousTap is the part of the stderr tap of attempt a of r (tapStderr) that
// watches a node that tries to host its rendezvous store here for its failure to
// bind the port, and then looks who holds the port; nil when r hosts no store here.
// It returns false once it is done.
func (sv *supervisor) rendezvousTap(r *replica, a int) func(lines []byte) bool {
	port := r.rdzvPort
	if port == 0 {
		return nil
	}
	seen := 0
	return func(lines []byte) bool {
		seen += len(lines)
		if bytes.Contains(lines, []byte("failed to bind")) {
			for line := range bytes.Lines(lines) {
				if p, ok := ranks.BindFailed(string(line)); ok && p == port {
					r.held.Store(int32(sv.portHolder(port)))
					r.unbound.Store(int32(a + 1))
					select {
					case sv.rdzvWake <- struct{}{}:
					default: // one wake-up is enough: checkRendezvousHeld looks at every node
					}
					return false
				}
			}
		}
		return seen < rdzvTapBytes
	}
}

// portHolder looks who listens on port now.
func (sv *supervisor) portHolder(port int) portHolder {
	for look := 0; ; look++ {
		switch l := tcpListeners(port); {
		case len(l) == 0:
			return holderNone
		case sv.holds(l):
			return holderApp
		case look > 0:
			return holderForeign
		}
		time.Sleep(foreignRecheck)
	}
}

// heldRendezvous finds a role whose rendezvous port another program holds: a node of
// it could not bind the port while another program listened on it (the node then
// talks to that program as to its store), or every node could not bind it and none
// saw a process of the app on it (nobody hosts the store). Only the nodes' current
// attempts count.
func (sv *supervisor) heldRendezvous() (*roleRun, int) {
	for _, rr := range sv.roles {
		port, all, foreign, hosted := 0, len(rr.replicas) > 0, false, false
		for _, r := range rr.replicas {
			if r.rdzvPort == 0 || int(r.unbound.Load()) != r.attempt+1 {
				all = false
				continue
			}
			port = r.rdzvPort
			switch portHolder(r.held.Load()) {
			case holderForeign:
				foreign = true
			case holderApp:
				hosted = true
			}
		}
		if foreign || all && !hosted {
			return rr, port
		}
	}
	return nil, 0
}

// checkRendezvousHeld fails the app when another program holds the rendezvous port
// of one of its roles (heldRendezvous). Once the app is failing for another reason,
// the port still becomes its cause: what followed came from it.
func (sv *supervisor) checkRendezvousHeld() {
	if sv.heldPort != nil {
		return
	}
	rr, port := sv.heldRendezvous()
	if rr == nil {
		return
	}
	msg := ranks.PortInUse(port)
	sv.heldPort = &ranks.Cause{Replica: rr.replicas[0].req.ID, Rank: -1, What: msg}
	sv.heldRole = rr.req.Name
	if sv.target != 0 {
		return
	}
	sv.logf("role %s: rendezvous port %d is held by a program that is not the app's: failing the app", rr.req.Name, port)
	sv.target = spec.Failed
	sv.st.Msg, sv.st.StructuredError = msg, msg
	sv.dirty = true
	sv.stopAll()
}

// heldPortCause makes the held rendezvous port that failed the app its cause, as
// rootCause words a port that every node failed to bind; it reports whether there
// was one.
func (sv *supervisor) heldPortCause() bool {
	sv.checkRendezvousHeld() // a node's word that came with the end
	if sv.heldPort == nil {
		return false
	}
	for _, rep := range sv.torchrunReports() {
		if rep.role == sv.heldRole {
			sv.setCause(rep, *sv.heldPort)
			return true
		}
	}
	sv.st.Msg, sv.st.StructuredError = sv.heldPort.What, sv.heldPort.JSON()
	sv.dirty = true
	return true
}

// holds reports whether a process of the app holds one of the sockets listeners.
func (sv *supervisor) holds(listeners map[uint64]bool) bool {
	seen := map[int]bool{}
	for _, pid := range sv.appPids() {
		if seen[pid] {
			continue
		}
		seen[pid] = true
		fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", fd.Name()))
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			if ino, err := strconv.ParseUint(strings.TrimSuffix(link[len("socket:["):], "]"), 10, 64); err == nil && listeners[ino] {
				return true
			}
		}
	}
	return false
}

// appPids lists the app's processes: the replicas' process trees, and its cgroup's
// (which also holds what left them). Both: a replica that could not be started in
// the cgroup runs outside it, and missing a node that hosts the store would take its
// port for another program's. It is called from the replicas' log goroutines: it
// reads only what does not change (sv.cg, sv.all) and the replicas' leaders, which
// are atomic.
func (sv *supervisor) appPids() []int {
	var pids []int
	for _, r := range sv.all {
		if pid := int(r.leader.Load()); pid > 0 {
			pids = append(pids, pid)
			for _, p := range descendants(pid) {
				pids = append(pids, p.pid)
			}
		}
	}
	if sv.cg != nil {
		if b, err := readBounded(filepath.Join(sv.cg.dir, "cgroup.procs"), make([]byte, 256<<10)); err == nil {
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					pids = append(pids, pid)
				}
			}
		}
	}
	return pids
}

// tcpListeners returns the inodes of the listening TCP sockets (IPv4 and IPv6) on
// port, from /proc/net/tcp and tcp6.
func tcpListeners(port int) map[uint64]bool {
	out := map[uint64]bool{}
	want := strings.ToUpper(strconv.FormatInt(int64(port), 16))
	for len(want) < 4 {
		want = "0" + want
	}
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(io.LimitReader(f, maxNetTCP))
		for sc.Scan() {
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 || fs[3] != "0A" || !strings.HasSuffix(fs[1], ":"+want) {
				continue
			}
			if ino, err := strconv.ParseUint(fs[9], 10, 64); err == nil && ino != 0 {
				out[ino] = true
			}
		}
		f.Close()
	}
	return out
}
