// Command helper is the only program in the images that engine/docker's tests build: a
// static binary that plays every workload the tests need (exit codes, a TCP server and
// client that find each other by hostname, log lines on both streams, file checks), so
// that no test depends on an image it did not make.
//
// Usage: helper COMMAND [ARGS...], or through a link named after the command (/bin/true).
package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	args := os.Args
	if name := filepath.Base(args[0]); name != "helper" {
		args = append([]string{"helper", name}, args[1:]...)
	}
	if len(args) < 2 {
		fail(2, "usage: helper COMMAND [ARGS...]")
	}
	os.Exit(run(args[1], args[2:]))
}

func fail(code int, format string, a ...any) {
	fmt.Fprintf(os.Stderr, "helper: "+format+"\n", a...)
	os.Exit(code)
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fail(2, "not a number: %q", s)
	}
	return n
}

func arg(args []string, i int) string {
	if i >= len(args) {
		fail(2, "missing argument %d", i+1)
	}
	return args[i]
}

// run plays command cmd; the commands are in groups, each of which says whether cmd
// is one of its own.
func run(cmd string, args []string) int {
	for _, group := range []func(string, []string) (int, bool){basics, processes, outputs, failures, ddp} {
		if code, ok := group(cmd, args); ok {
			return code
		}
	}
	fail(2, "unknown command %q", cmd)
	return 2
}

// basics are the commands of a minimal userland: true, false, exit, echo, env, cat,
// write, exists, and the TCP server and client.
func basics(cmd string, args []string) (int, bool) {
	switch cmd {
	case "true":
	case "false":
		return 1, true
	case "exit":
		fmt.Fprintln(os.Stderr, "exiting with", arg(args, 0))
		return atoi(arg(args, 0)), true
	case "echo":
		fmt.Println(strings.Join(args, " "))
	case "env":
		env := os.Environ()
		sort.Strings(env)
		for _, kv := range env {
			fmt.Println(kv)
		}
	case "serve":
		return serve(arg(args, 0), atoi(arg(args, 1))), true
	case "dial":
		return dial(arg(args, 0)), true
	case "ishost":
		return isHost(arg(args, 0)), true
	case "cat":
		b, err := os.ReadFile(arg(args, 0))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2, true
		}
		os.Stdout.Write(b)
	case "write":
		if err := os.WriteFile(arg(args, 0), []byte(arg(args, 1)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1, true
		}
	case "exists":
		for _, p := range args {
			if _, err := os.Stat(p); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1, true
			}
		}
	default:
		return 0, false
	}
	return 0, true
}

// processes are the commands that take time or resist being stopped: loop, stubborn,
// trap, burn, sleep.
func processes(cmd string, args []string) (int, bool) {
	switch cmd {
	case "loop":
		for {
			time.Sleep(time.Second)
		}
	case "stubborn": // ignore SIGTERM and loop: only the grace period's SIGKILL stops it
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ignoring SIGTERM")
		for {
			time.Sleep(time.Second)
		}
	case "trap": // a TERM trap that takes its time (a checkpoint): says so, sleeps a minute, exits 0
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		fmt.Println("waiting for SIGTERM")
		<-term
		fmt.Println("TERM trap: checkpointing")
		time.Sleep(time.Minute)
	case "burn": // burn MB: hold MB MiB of touched memory and keep a core busy (2 minutes)
		b := make([]byte, atoi(arg(args, 0))<<20)
		for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); {
			for i := 0; i < len(b); i += 4096 {
				b[i]++
			}
		}
	case "sleep":
		d, err := time.ParseDuration(arg(args, 0))
		if err != nil {
			fail(2, "%v", err)
		}
		time.Sleep(d)
	default:
		return 0, false
	}
	return 0, true
}

// outputs are the commands that write lines of a shape: lines, flood, long, nonl, bar.
func outputs(cmd string, args []string) (int, bool) {
	switch cmd {
	case "lines":
		n := atoi(arg(args, 0))
		var every time.Duration
		if len(args) > 1 {
			every, _ = time.ParseDuration(args[1])
		}
		for i := range n {
			fmt.Fprintf(os.Stdout, "out %d\n", i)
			fmt.Fprintf(os.Stderr, "err %d\n", i)
			time.Sleep(every)
		}
	case "flood":
		w := bufio.NewWriterSize(os.Stdout, 1<<16)
		for i := range atoi(arg(args, 0)) {
			fmt.Fprintf(w, "line %d of the flood, padded to look like a real log line\n", i)
		}
		w.Flush()
	case "long":
		fmt.Println(strings.Repeat("x", atoi(arg(args, 0))))
		fmt.Println("end")
	case "nonl":
		fmt.Println("first")
		fmt.Print(arg(args, 0))
	case "bar":
		bar(atoi(arg(args, 0)), arg(args, 1))
	default:
		return 0, false
	}
	return 0, true
}

// bar draws a progress bar: total bytes of \r redraws with no newline, then, once
// file exists (the test copies it in), the line ends and the program exits, which ends
// the container and kills whatever else runs in it: so the file is best made by
// something that runs no process in the container (`docker cp`, CopyToContainer). The
// bound is generous: on a loaded machine the test may take minutes to see the bar and
// make the file; the test cancels the app when it ends, so the bound only stops an
// orphan.
func bar(total int, file string) {
	var b strings.Builder
	for i := 0; b.Len() < total; i++ {
		fmt.Fprintf(&b, "\rstep %06d", i)
	}
	os.Stdout.WriteString(b.String()[:total])
	for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(file); err == nil {
			break
		}
	}
	fmt.Println("\rdone")
}

// failures are the commands that fail on purpose: failtimes and nonlfail (the first
// N runs), raise (with a torchelastic error file).
func failures(cmd string, args []string) (int, bool) {
	switch cmd {
	case "failtimes":
		// Fails N times, counting runs in FILE (the container's filesystem survives a
		// restart), then succeeds.
		n, count := atoi(arg(args, 0)), countRun(arg(args, 1))
		if count <= n {
			fmt.Fprintf(os.Stderr, "run %d fails\n", count)
			return 1, true
		}
		fmt.Printf("run %d succeeds\n", count)
	case "nonlfail":
		// Like failtimes, but each run ends its output without a newline.
		n, count := atoi(arg(args, 0)), countRun(arg(args, 1))
		fmt.Printf("run %d\n", count)
		fmt.Printf("end %d", count)
		if count <= n {
			return 1, true
		}
	case "raise":
		return raise(arg(args, 0), arg(args, 1)), true
	case "steps": // steps D V...: "step i loss V" for each V, then quiet for D (a hang)
		d, err := time.ParseDuration(arg(args, 0))
		if err != nil {
			fail(2, "%v", err)
		}
		for i, v := range args[1:] {
			fmt.Printf("step %d loss %s\n", i+1, v)
		}
		time.Sleep(d)
	default:
		return 0, false
	}
	return 0, true
}

// countRun counts this run in file and returns its number, from 1.
func countRun(file string) int {
	b, _ := os.ReadFile(file)
	count, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	count++
	if err := os.WriteFile(file, []byte(strconv.Itoa(count)), 0o644); err != nil {
		fail(3, "%v", err)
	}
	return count
}

// raise writes a torchelastic error file naming msg after delay, then exits 1.
func raise(delay, msg string) int {
	d, err := time.ParseDuration(delay)
	if err != nil {
		fail(2, "%v", err)
	}
	time.Sleep(d)
	body := fmt.Sprintf(`{"message": {"message": %q, "extraInfo": {"py_callstack": "Traceback ...", "timestamp": "%d"}}}`, msg, time.Now().Unix())
	if p := os.Getenv("TORCHELASTIC_ERROR_FILE"); p != "" {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	fmt.Fprintln(os.Stderr, msg)
	return 1
}

// serve accepts n connections on port (0: forever) and answers each with its hostname.
func serve(port string, n int) int {
	l, err := net.Listen("tcp", ":"+port)
	if err != nil {
		fail(1, "%v", err)
	}
	host, _ := os.Hostname()
	fmt.Println("listening on", l.Addr())
	for i := 0; n == 0 || i < n; i++ {
		c, err := l.Accept()
		if err != nil {
			fail(1, "%v", err)
		}
		fmt.Fprintf(c, "hello from %s\n", host)
		c.Close()
		fmt.Println("served", c.RemoteAddr())
	}
	return 0
}

// dial connects to addr ($VARIABLES expanded, as a shell would), retrying for up to
// 30 s while the server starts, and prints what it hears along with its identity.
func dial(addr string) int {
	addr = os.ExpandEnv(addr)
	// Rank 0 by name goes through the cluster's DNS (search domains first, as
	// resolv.conf's ndots says), which a busy 2-core test machine may answer in
	// seconds: each try gets 5 s, all of them 90 s.
	deadline := time.Now().Add(90 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err == nil {
			line, err := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if err != nil && err != io.EOF {
				fail(1, "read: %v", err)
			}
			fmt.Printf("role=%s replica=%s rank0=%s got=%s\n", os.Getenv("WICK_ROLE"),
				os.Getenv("WICK_REPLICA_ID"), os.Getenv("TORCHX_RANK0_HOST"), strings.TrimSpace(line))
			return 0
		}
		if time.Now().After(deadline) {
			fail(1, "dial %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// isHost says, as torchrun's c10d rendezvous decides whether this host keeps its store
// (torch 1.13, torch/distributed/elastic/rendezvous/utils.py _matches_machine_hostname),
// whether host ($VARIABLES expanded) names this machine: "localhost", its host name, or
// its canonical name, which getaddrinfo(AI_CANONNAME) takes from /etc/hosts (the
// first name of the line that holds the host name; glibc's files backend first, as
// nsswitch has it). It prints "is_host=true host=... canonical=...".
func isHost(host string) int {
	host = os.ExpandEnv(host)
	name, err := os.Hostname()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	canonical := ""
	if b, err := os.ReadFile("/etc/hosts"); err == nil {
	lines:
		for _, line := range strings.Split(string(b), "\n") {
			line, _, _ = strings.Cut(line, "#")
			f := strings.Fields(line)
			for _, n := range f[min(1, len(f)):] {
				if n == name {
					canonical = f[1]
					break lines
				}
			}
		}
	}
	ok := host == "localhost" || host == name || (canonical != "" && host == canonical)
	fmt.Printf("is_host=%t host=%s canonical=%s\n", ok, name, canonical)
	return 0
}
