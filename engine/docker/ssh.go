package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// An ssh:// Engine is reached as the docker CLI reaches it (docker/cli
// cli/connhelper/connhelper.go, getConnectionHelper): each connection is an `ssh`
// process running `docker system dial-stdio` on the remote host, whose stdin and
// stdout carry the HTTP of the Engine API; the requests name a dummy host.

// sshDummyHost is the URL the requests of an ssh:// Engine name (the docker CLI's
// ConnectionHelper.Host).
const sshDummyHost = "http://docker.example.com"

// sshSpec is an ssh:// address as the docker CLI reads it (cli/connhelper/ssh/ssh.go,
// ParseURL): ssh://[user@]host[:port][/path of the remote socket].
type sshSpec struct {
	user, host, port, path string
}

// parseSSH reads an ssh:// address, refusing what the docker CLI refuses: a
// password, a query, a fragment, no host.
func parseSSH(addr string) (sshSpec, error) {
	u, err := url.Parse(addr)
	if err != nil {
		return sshSpec{}, fmt.Errorf("invalid SSH URL: %v", errors.Unwrap(err))
	}
	if u.Scheme != "ssh" {
		return sshSpec{}, fmt.Errorf("invalid SSH URL: incorrect scheme: %s", u.Scheme)
	}
	var sp sshSpec
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			return sshSpec{}, errors.New("invalid SSH URL: plain-text password is not supported")
		}
		sp.user = u.User.Username()
	}
	sp.host, sp.port, sp.path = u.Hostname(), u.Port(), u.Path
	switch {
	case sp.host == "":
		return sshSpec{}, errors.New("invalid SSH URL: hostname is empty")
	case u.RawQuery != "":
		return sshSpec{}, fmt.Errorf("invalid SSH URL: query parameters are not allowed: %q", u.RawQuery)
	case u.Fragment != "":
		return sshSpec{}, fmt.Errorf("invalid SSH URL: fragments are not allowed: %q", u.Fragment)
	}
	return sp, nil
}

// args are ssh's arguments, as the docker CLI gives them: -l USER, -p PORT, its
// default flags (-o ConnectTimeout=30: addSSHTimeout; -T: disablePseudoTerminalAllocation),
// then -- HOST and the remote command as one line for the remote shell, its words
// quoted (Spec.Command): docker [--host=unix://PATH] system dial-stdio.
func (sp sshSpec) args() []string {
	var args []string
	if sp.user != "" {
		args = append(args, "-l", sp.user)
	}
	if sp.port != "" {
		args = append(args, "-p", sp.port)
	}
	args = append(args, "-o", "ConnectTimeout=30", "-T", "--", sp.host)
	remote := []string{"docker"}
	if strings.Trim(sp.path, "/") != "" {
		remote = append(remote, "--host=unix://"+sp.path)
	}
	remote = append(remote, "system", "dial-stdio")
	for i, w := range remote {
		remote[i] = shellWord(w)
	}
	return append(args, strings.Join(remote, " "))
}

// shellWord quotes w for a POSIX shell unless it is made of characters none
// interprets.
func shellWord(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// sshExitError is an ssh connection whose process ended badly: ssh could not reach
// or log in to the host, or the remote docker failed.
type sshExitError struct {
	host   string
	state  string // "exit status 255"
	stderr string // its last line
}

func (e *sshExitError) Error() string {
	msg := fmt.Sprintf("ssh to %s ended (%s)", e.host, e.state)
	if e.stderr != "" {
		msg += ": " + e.stderr
	}
	return msg
}

// Bounds of an ssh connection's process.
const (
	// sshStderr is how much of ssh's stderr is kept for a message.
	sshStderr = 4 << 10
	// sshEndWait is how long a connection whose pipe ended waits for its process's
	// status, and how long a closed one gets between SIGTERM and SIGKILL.
	sshEndWait = 3 * time.Second
)

// sshConn is a connection to the Engine over the stdin and stdout of an ssh process
// (docker/cli's commandconn).
type sshConn struct {
	host   string
	cmd    *exec.Cmd
	in     *os.File // ssh's stdin
	out    *os.File // ssh's stdout
	stderr *tailWriter
	done   chan struct{} // closed when the process has ended
	err    error         // how it ended, once done

	closeOnce sync.Once
}

// dialSSH starts `ssh ARGS` (the ssh on PATH) for one connection. The process is the
// leader of a session of its own (a Ctrl-C at the terminal stops wick, which then
// ends it) and dies with wick (Pdeathsig, from a thread locked for its life:
// golang/go#27505).
func dialSSH(ctx context.Context, sp sshSpec) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	c := &sshConn{host: sp.host, in: inW, out: outR, stderr: &tailWriter{max: sshStderr}, done: make(chan struct{})}
	c.cmd = exec.Command("ssh", sp.args()...)
	c.cmd.Stdin, c.cmd.Stdout, c.cmd.Stderr = inR, outW, c.stderr
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	c.cmd.WaitDelay = sshEndWait
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := c.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	err = <-started
	inR.Close() // the child's ends
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		// Its message, not its chain: the Engine's error shows the innermost one.
		return nil, &net.OpError{Op: "dial", Net: "ssh", Addr: sshAddr(sp.host), Err: errors.New("cannot start ssh: " + err.Error())}
	}
	return c, nil
}

// ended turns a failed read or write into how the process ended, when it ended
// badly (ssh says why on stderr).
func (c *sshConn) ended(err error) error {
	select {
	case <-c.done:
	case <-time.After(sshEndWait):
		return err
	}
	if c.err == nil {
		return err
	}
	return &sshExitError{host: c.host, state: c.err.Error(), stderr: c.stderr.lastLine()}
}

func (c *sshConn) Read(p []byte) (int, error) {
	n, err := c.out.Read(p)
	if err == io.EOF {
		err = c.ended(err)
	}
	return n, err
}

func (c *sshConn) Write(p []byte) (int, error) {
	n, err := c.in.Write(p)
	if err != nil {
		err = c.ended(err)
	}
	return n, err
}

// CloseWrite ends the request side: the remote dial-stdio sees EOF.
func (c *sshConn) CloseWrite() error { return c.in.Close() }

// Close closes both pipes and ends the process: SIGTERM to its session, SIGKILL if
// it is still there sshEndWait later.
func (c *sshConn) Close() error {
	c.closeOnce.Do(func() {
		c.in.Close()
		c.out.Close()
		pid := c.cmd.Process.Pid
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		go func() {
			select {
			case <-c.done:
			case <-time.After(sshEndWait):
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		}()
	})
	return nil
}

func (c *sshConn) LocalAddr() net.Addr  { return sshAddr("local") }
func (c *sshConn) RemoteAddr() net.Addr { return sshAddr(c.host) }

// Deadlines are not kept, as by docker/cli's commandconn: the HTTP client ends a
// request that runs out of time by closing its connection.
func (c *sshConn) SetDeadline(time.Time) error      { return nil }
func (c *sshConn) SetReadDeadline(time.Time) error  { return nil }
func (c *sshConn) SetWriteDeadline(time.Time) error { return nil }

// sshAddr is an ssh connection's address.
type sshAddr string

func (a sshAddr) Network() string { return "ssh" }
func (a sshAddr) String() string  { return string(a) }

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

// lastLine is the last non-blank line written, its spaces folded.
func (t *tailWriter) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.b)), "\n")
	return strings.Join(strings.Fields(lines[len(lines)-1]), " ")
}
