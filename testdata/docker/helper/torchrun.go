package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A fake torchrun node with two workers, for the root cause of two workers of one node
// that fail within the same second without torch (a real one is TestDockerTorchDDP's).
// As in a real DDP job without @record (examples/ddp/multinode.py, --tee 1): the
// workers' tracebacks reach the node's stderr unprefixed; worker FAIL_RANK raises, and
// finalizes for seconds (its threads go first: a Python process finalizing after its
// traceback), its peer fails in gloo once the raising one's connection closes and
// exits at once; the agent's poll finds the peer ended first, stops the raising one
// with SIGTERM, and its summary lists the peer alone. Each worker runs threads of its
// own (locked goroutines: a thread of each ends when its goroutine returns).

// ddp are the commands of the fake node: torchrun (the agent) and worker (its
// workers).
func ddp(cmd string, args []string) (int, bool) {
	switch cmd {
	case "torchrun":
		return torchrun(args), true
	case "worker":
		return worker(), true
	}
	return 0, false
}

// workerThreads is how many threads of its own each fake worker runs.
const workerThreads = 6

// torchrun plays the agent: torchrun --nproc_per_node 2 --fail_rank R [--fail_after
// MS]. Worker R raises once the sampler has seen both workers, or MS ms after it
// started where --fail_after says (a worker that fails in its first second, watched
// or not).
func torchrun(args []string) int {
	failRank, failAfter := 1, "-1"
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--fail_rank":
			failRank = atoi(args[i+1])
		case "--fail_after":
			failAfter = args[i+1]
		}
	}
	// The raising worker's end of its "connection" to the peer (fd 3 in both).
	r, w, err := os.Pipe()
	if err != nil {
		fail(1, "%v", err)
	}
	type ended struct {
		local, pid, code int
	}
	done := make(chan ended, 2)
	var cmds [2]*exec.Cmd
	for local := range 2 {
		c := exec.Command("/proc/self/exe", "worker")
		c.Args[0] = "helper"
		c.Env = append(os.Environ(), "RANK="+strconv.Itoa(local), "LOCAL_RANK="+strconv.Itoa(local),
			"GROUP_RANK=0", "WORLD_SIZE=2", "FAIL_RANK="+strconv.Itoa(failRank), "FAIL_AFTER="+failAfter)
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		c.ExtraFiles = []*os.File{r}
		if local == failRank {
			c.ExtraFiles = []*os.File{w}
		}
		if err := c.Start(); err != nil {
			fail(1, "%v", err)
		}
		cmds[local] = c
	}
	r.Close()
	w.Close()
	for local, c := range cmds {
		go func() {
			_ = c.Wait()
			done <- ended{local, c.Process.Pid, c.ProcessState.ExitCode()}
		}()
	}
	// torchrun's monitor polls its workers (monitor_interval): the first poll that
	// finds one failed stops the others and reports what it found.
	var failed []ended
	for len(failed) == 0 {
		time.Sleep(100 * time.Millisecond)
		for more := true; more; {
			select {
			case e := <-done:
				failed = append(failed, e)
			default:
				more = false
			}
		}
	}
	when := time.Now().Format("2006-01-02_15:04:05")
	for local, c := range cmds {
		if !slicesHas(failed, func(e ended) bool { return e.local == local }) {
			fmt.Fprintf(os.Stderr, "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process %d closing signal SIGTERM\n", c.Process.Pid)
			_ = c.Process.Signal(syscall.SIGTERM)
			<-done
		}
	}
	first := failed[0]
	fmt.Fprintf(os.Stderr, "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: %d) local_rank: %d (pid: %d) of binary: /usr/bin/python3\n", first.code, first.local, first.pid)
	var b strings.Builder
	b.WriteString(`Traceback (most recent call last):
  File "/usr/bin/torchrun", line 33, in <module>
    sys.exit(load_entry_point('torch==1.13.0a0+gitunknown', 'console_scripts', 'torchrun')())
  File "/usr/lib/python3/dist-packages/torch/distributed/run.py", line 762, in main
    run(args)
  File "/usr/lib/python3/dist-packages/torch/distributed/launcher/api.py", line 246, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
`)
	if len(failed) == 1 {
		b.WriteString("  <NO_OTHER_FAILURES>\n")
	}
	entry := func(i int, e ended) {
		fmt.Fprintf(&b, "[%d]:\n  time      : %s\n  host      : localhost\n  rank      : %d (local_rank: %d)\n  exitcode  : %d (pid: %d)\n  error_file: <N/A>\n  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n",
			i, when, e.local, e.local, e.code, e.pid)
	}
	for i, e := range failed[1:] {
		entry(i+1, e)
	}
	b.WriteString("------------------------------------------------------------\nRoot Cause (first observed failure):\n")
	entry(0, first)
	b.WriteString("============================================================\n")
	os.Stderr.WriteString(b.String())
	return 1
}

func slicesHas[E any](s []E, f func(E) bool) bool {
	for _, e := range s {
		if f(e) {
			return true
		}
	}
	return false
}

// worker plays one worker of the fake node (RANK, FAIL_RANK; fd 3 is its connection to
// the peer).
func worker() int {
	rank, failRank := atoi(os.Getenv("RANK")), atoi(os.Getenv("FAIL_RANK"))
	spareThreads()
	release := make(chan struct{})
	for range workerThreads {
		go func() {
			runtime.LockOSThread()
			<-release // returning locked ends the thread
		}()
	}
	conn := os.NewFile(3, "peer")
	fmt.Printf("rank %d step 1 loss 0.5\n", rank)
	if rank != failRank {
		buf := make([]byte, 1)
		for {
			if _, err := conn.Read(buf); err != nil {
				break
			}
		}
		os.Stderr.WriteString(`Traceback (most recent call last):
  File "/app/train.py", line 70, in _run_batch
    loss.backward()
  File "/usr/lib/python3/dist-packages/torch/autograd/__init__.py", line 197, in backward
    Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass
RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:6033
`)
		time.Sleep(300 * time.Millisecond)
		close(release)
		time.Sleep(100 * time.Millisecond)
		return 1
	}
	if ms := atoi(os.Getenv("FAIL_AFTER")); ms >= 0 {
		time.Sleep(time.Duration(ms) * time.Millisecond)
	} else {
		waitWatched(2)
	}
	fmt.Fprintf(os.Stderr, `Traceback (most recent call last):
  File "/app/train.py", line 111, in <module>
    main()
  File "/app/train.py", line 65, in _run_batch
    raise RuntimeError(f"loss diverged on rank {self.global_rank} at step {self.step}")
RuntimeError: loss diverged on rank %d at step 3
`, rank)
	// Python finalizing: its threads go, then its process group (the peer's
	// connection), and it lingers.
	time.Sleep(300 * time.Millisecond)
	close(release)
	time.Sleep(500 * time.Millisecond)
	conn.Close()
	time.Sleep(5 * time.Second)
	return 1
}

// spareThreads has Go's runtime make threads that it then keeps idle: when the
// worker's own threads end, the runtime hands their work to a thread it has (without
// spares it may start one: 4 of 20 runs saw the count fall, then rise by one, which
// a Python process finalizing does not do; 0 of 100 with spares).
func spareThreads() {
	done := make(chan struct{})
	for range 4 {
		go func() {
			ts := syscall.Timespec{Nsec: 50e6} // a blocking syscall: its P goes to another thread
			_ = syscall.Nanosleep(&ts, nil)
			done <- struct{}{}
		}()
	}
	for range 4 {
		<-done
	}
}

// waitWatched waits (at most a minute) until the container's sampler has seen n
// workers: a real worker runs for seconds (imports, its rendezvous, steps) before it
// fails, and this one fails once it is watched, as they are by then.
func waitWatched(n int) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile("/run/wick/workers.watch")
		pids := map[string]bool{}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 4 {
				pids[f[1]] = true
			}
		}
		if len(pids) >= n {
			time.Sleep(300 * time.Millisecond)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
