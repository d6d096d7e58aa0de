package local

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/spec"
)

// A replica that runs torchrun is a node whose workers are its children (or
// grandchildren, under a shell). Two things about them are in no log line, and the
// supervisor, which owns the replica's processes, can see both:
//
//   - Which ranks the node got. torchrun gives each worker RANK, LOCAL_RANK and
//     GROUP_RANK in its environment; with c10d's rendezvous the group rank is the order
//     of the nodes' (host, agent pid), not the replica index, and torchrun says it only
//     at LOGLEVEL=INFO.
//   - Which worker ended first. A worker that raises writes its traceback to the node's
//     stderr (unprefixed unless torchrun tees stderr) and exits; the ranks whose
//     collectives then fail write theirs after it. torchrun's failure summary gives each
//     failed rank's pid but, without an error file, one time for all of them (its
//     monitor's, every 5 s), so the order in which the pids exited is what tells the
//     first traceback's rank.
//
// workerWatch follows one attempt of one replica: it finds the workers among the
// leader's descendants every discoverEvery, reads their rank variables once, and holds a
// pidfd of each so that poll(2) wakes it the moment one exits.
type workerWatch struct {
	leader int
	// learned is called (from the watch's goroutine) when a worker's GROUP_RANK is
	// first read, or changes (a restart of the workers), and with -1 when a worker
	// exits with a failure.
	learned func(group int)

	mu    sync.Mutex
	exits map[int]time.Time // worker pid -> when it exited
	// threads is each live worker's thread count, as last read; downs when it last
	// began to fall and did not rise again (see Downs).
	threads map[int]int
	downs   map[int]time.Time
	group   int              // the latest GROUP_RANK read, -1 before
	failed  int              // workers seen to exit with a failure (nodefail.go)
	vars    map[int]rankVars // worker pid -> its ranks
	status  map[int]int      // worker pid -> its exit status (wait(2)'s), when read

	quit chan struct{}
	done chan struct{}
}

// Bounds of the watch: the descendants looked at, how often, how many workers.
const (
	discoverEvery = 100 * time.Millisecond
	maxWatched    = 1024
	maxEnviron    = 256 << 10
	maxDescend    = 4096
	// envTries is how many discoveries may see a new process without torchrun's
	// variables (forked, not yet exec'd) before it is taken for something else.
	envTries = 50
)

// watchWorkers starts watching the workers under leader.
func watchWorkers(leader int, learned func(group int)) *workerWatch {
	w := &workerWatch{leader: leader, learned: learned, exits: map[int]time.Time{}, group: -1,
		threads: map[int]int{}, downs: map[int]time.Time{},
		vars: map[int]rankVars{}, status: map[int]int{},
		quit: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// stop ends the watch and waits for its goroutine.
func (w *workerWatch) stop() {
	select {
	case <-w.quit:
	default:
		close(w.quit)
	}
	<-w.done
}

// Exits returns when each watched worker exited, by pid.
func (w *workerWatch) Exits() map[int]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[int]time.Time, len(w.exits))
	for k, v := range w.exits {
		out[k] = v
	}
	return out
}

// Downs returns, by pid, when each watched worker's thread count last began to fall
// for good while it ran: a Python worker that raised prints its traceback, then
// finalizes, which joins its threads and closes its sockets (a collective's peer
// fails of that); it may exit seconds later, after a peer that failed of it. A worker
// whose count fell during its work and rose again has none until it falls again.
func (w *workerWatch) Downs() map[int]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[int]time.Time, len(w.downs))
	for k, v := range w.downs {
		out[k] = v
	}
	return out
}

// Failed is how many workers were seen to exit with a failure (a non-zero status, or
// a signal), read from the zombie before torchrun reaped it.
func (w *workerWatch) Failed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed
}

// Summary is what torchrun's failure summary would say of the workers seen to fail,
// from their exit statuses and rank variables: for a node stopped before its agent
// printed one (it waits in its exit barrier first). The one that exited first is its
// root cause.
func (w *workerWatch) Summary() []ranks.Failure {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []ranks.Failure
	first := -1
	for pid, st := range w.status {
		ws := unix.WaitStatus(st)
		v, ok := w.vars[pid]
		if st == 0 || !ok || v.rank < 0 {
			continue
		}
		code := ws.ExitStatus()
		if ws.Signaled() {
			code = -int(ws.Signal())
		}
		out = append(out, ranks.Failure{Rank: v.rank, Local: v.local, ExitCode: code, PID: pid, Time: w.exits[pid].Local().Format(ranks.SummaryTime)})
		if first < 0 || w.exits[pid].Before(w.exits[out[first].PID]) {
			first = len(out) - 1
		}
	}
	if first >= 0 {
		out[first].Root = true
	}
	return out
}

// GroupRank is the node's group rank as its workers' environment says, or -1.
func (w *workerWatch) GroupRank() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.group
}

func (w *workerWatch) run() {
	defer close(w.done)
	type watched struct {
		pid int
		fd  int
	}
	var live []watched
	defer func() {
		for _, x := range live {
			unix.Close(x.fd)
		}
	}()
	seen := map[int]int{} // pid -> discoveries without torchrun's variables; -1: done
	workers := map[int]bool{}
	var next time.Time
	for {
		select {
		case <-w.quit:
			return
		default:
		}
		if now := time.Now(); !now.Before(next) {
			next = now.Add(discoverEvery)
			for _, pp := range descendants(w.leader) {
				pid := pp.pid
				if workers[pp.parent] {
					// A worker's own children (DataLoader workers) inherit its
					// variables; torchrun's summary never names them.
					seen[pid] = -1
				}
				if seen[pid] < 0 || len(live) >= maxWatched {
					continue
				}
				vars, ok := workerVars(pid)
				group := vars.group
				if !ok {
					if seen[pid]++; seen[pid] >= envTries {
						seen[pid] = -1
					}
					continue
				}
				seen[pid] = -1
				workers[pid] = true
				fd, err := unix.PidfdOpen(pid, 0)
				if err != nil {
					continue // gone already, or no pidfds (Linux < 5.3)
				}
				live = append(live, watched{pid, fd})
				w.mu.Lock()
				w.vars[pid] = vars
				changed := w.group != group
				w.group = group
				w.mu.Unlock()
				if changed && w.learned != nil {
					w.learned(group)
				}
			}
			if len(seen) > maxDescend {
				clear(seen) // a replica that forks without end: start over
				clear(workers)
			}
			for _, x := range live {
				w.sampleThreads(x.pid, now)
			}
		}
		fds := make([]unix.PollFd, len(live))
		for i, x := range live {
			fds[i] = unix.PollFd{Fd: int32(x.fd), Events: unix.POLLIN}
		}
		wait := max(time.Until(next), time.Millisecond)
		n, err := unix.Poll(fds, int(wait/time.Millisecond))
		if err != nil && err != unix.EINTR {
			time.Sleep(wait)
			continue
		}
		if n <= 0 {
			continue
		}
		now := time.Now()
		kept := live[:0]
		for i, x := range live {
			if fds[i].Revents == 0 {
				kept = append(kept, x)
				continue
			}
			// The worker is a zombie until torchrun reaps it: its status is still
			// there to read (nodefail.go).
			status, ok := zombieExitStatus(x.pid)
			failed := ok && status != 0
			unix.Close(x.fd)
			w.mu.Lock()
			w.exits[x.pid] = now
			delete(w.threads, x.pid)
			if ok {
				w.status[x.pid] = status
			}
			if failed {
				w.failed++
			}
			w.mu.Unlock()
			if failed && w.learned != nil {
				w.learned(-1)
			}
		}
		live = kept
	}
}

// sampleThreads reads worker pid's thread count at now, and notes when it fell (see
// Downs).
func (w *workerWatch) sampleThreads(pid int, now time.Time) {
	n, ok := threadCount(pid)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	before, seen := w.threads[pid]
	w.threads[pid] = n
	switch {
	case !seen:
	case n > before:
		delete(w.downs, pid)
	case n < before:
		if _, ok := w.downs[pid]; !ok {
			w.downs[pid] = now
		}
	}
}

// threadCount reads the number of threads of pid (/proc/PID/stat's num_threads).
func threadCount(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// "PID (COMM) STATE PPID ...": COMM may hold anything, ")" included; the fields
	// after the last ")" start with STATE, the stat's third, and num_threads is its
	// twentieth.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 18 {
		return 0, false
	}
	n, err := strconv.Atoi(f[17])
	return n, err == nil && n > 0
}

// proc is a process and its parent.
type proc struct{ pid, parent int }

// descendants lists the processes below pid, parents first, through
// /proc/PID/task/TID/children.
func descendants(pid int) []proc {
	var out []proc
	queue := []int{pid}
	for len(queue) > 0 && len(out) < maxDescend {
		p := queue[0]
		queue = queue[1:]
		tasks, err := os.ReadDir("/proc/" + strconv.Itoa(p) + "/task")
		if err != nil {
			continue
		}
		for _, t := range tasks {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/task/" + t.Name() + "/children")
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					out = append(out, proc{c, p})
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}

// rankVars are a torchrun worker's GROUP_RANK, RANK and LOCAL_RANK (-1: unset).
type rankVars struct{ group, rank, local int }

// workerVars reads a torchrun worker's rank variables from its environment; ok is
// false for a process that is not one.
func workerVars(pid int) (v rankVars, ok bool) {
	v = rankVars{-1, -1, -1}
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return v, false
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, maxEnviron))
	for _, kv := range bytes.Split(b, []byte{0}) {
		k, val, _ := bytes.Cut(kv, []byte{'='})
		n, err := strconv.Atoi(string(val))
		if err != nil || n < 0 {
			continue
		}
		switch string(k) {
		case "GROUP_RANK":
			v.group = n
		case "RANK":
			v.rank = n
		case "LOCAL_RANK":
			v.local = n
		}
	}
	return v, v.group >= 0 && v.local >= 0
}

// runsTorchrun reports whether a replica's command runs torchrun.
func runsTorchrun(argv []string) bool { return ranks.RunsTorchrun(argv) }

// watchWorkers starts following the workers of r's attempt that just started, if it
// is a torchrun node.
func (sv *supervisor) watchWorkers(r *replica) {
	if r.workers != nil {
		r.workers.stop()
		r.workers = nil
	}
	r.st.GroupRank = nil
	if !runsTorchrun(r.req.Argv) {
		return
	}
	r.workers = watchWorkers(r.pid, func(int) {
		select {
		case sv.learned <- struct{}{}:
		default: // one wake-up is enough: learnRanks reads every watch
		}
	})
}

// learnRanks records the group ranks the watches learned, and fails the nodes whose
// workers failed (checkNodes).
func (sv *supervisor) learnRanks() {
	if sv.target == 0 {
		sv.checkNodes()
	}
	for _, r := range sv.all {
		if r.workers == nil {
			continue
		}
		if g := r.workers.GroupRank(); g >= 0 && (r.st.GroupRank == nil || *r.st.GroupRank != g) {
			r.st.GroupRank = spec.IntPtr(g)
			sv.dirty = true
		}
	}
}

// stopWatches ends every watch (the app has ended), keeping what they saw.
func (sv *supervisor) stopWatches() {
	for _, r := range sv.all {
		if r.workers != nil {
			r.workers.stop()
		}
	}
	sv.learnRanks()
}
