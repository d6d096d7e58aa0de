// Package docker is wick's local_docker scheduler: every replica of an AppDef runs as a
// container on the Docker Engine, on a user-defined bridge network where replicas reach
// each other by name.
//
// The scheduler keeps no state of its own: every container carries labels (app id, role,
// replica, session, wick version and the submitted AppDef), so that describe, list, logs,
// cancel and delete work from any process that reaches the same Engine. It talks to the
// Engine through the Docker SDK (github.com/moby/moby/client), at the endpoint the
// docker CLI would use (see resolveEndpoint), negotiating the API version down to
// Engine 20.10 (API 1.41).
package docker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/docker/go-connections/sockets"
	"github.com/moby/moby/client"

	"github.com/wick-dev/wick/engine/docker/front"
	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Name is the scheduler's registry name.
const Name = front.Name

// Label keys set on every container wick creates. The dev.wick.* keys are what wick
// reads back; the torchx.pytorch.org/* keys are TorchX's, so that torchx's own tools
// recognise the containers too.
const (
	LabelAppID     = "dev.wick.app-id"
	LabelRole      = "dev.wick.role"
	LabelReplicaID = "dev.wick.replica-id"
	LabelSession   = "dev.wick.session"
	LabelVersion   = "dev.wick.version"
	// LabelApp holds the submitted AppDef, run options and workspace as JSON. It is
	// left out of the dry run's printout.
	LabelApp = "dev.wick.app"
	// LabelHome identifies the WICK_HOME that launched the app (see homeID): a shared
	// Engine holds other homes' and users' apps, which lists leave out by default.
	LabelHome = "dev.wick.home"
	// LabelManaged marks networks and workspace images wick created.
	LabelManaged = "dev.wick.managed"

	LabelTorchXVersion   = "torchx.pytorch.org/version"
	LabelTorchXAppID     = "torchx.pytorch.org/app-id"
	LabelTorchXRoleName  = "torchx.pytorch.org/role-name"
	LabelTorchXReplicaID = "torchx.pytorch.org/replica-id"
)

// Run option names and their defaults: front's (wick knows them without the helper).
const (
	OptCopyEnv         = front.OptCopyEnv
	OptEnv             = front.OptEnv
	OptPrivileged      = front.OptPrivileged
	OptImageRepo       = front.OptImageRepo
	OptNetwork         = front.OptNetwork
	OptShmSize         = front.OptShmSize
	OptQuiet           = front.OptQuiet
	OptStopTimeout     = front.OptStopTimeout
	OptPublishPorts    = front.OptPublishPorts
	OptLogOpts         = front.OptLogOpts
	DefaultNetwork     = front.DefaultNetwork
	DefaultStopTimeout = front.DefaultStopTimeout
	DefaultImageRepo   = front.DefaultImageRepo
)

// ErrUnreachable is wrapped when the Docker Engine cannot be reached.
var ErrUnreachable = sched.Unreachable("cannot reach the Docker Engine")

// Scheduler is the local_docker scheduler. It is safe for concurrent use.
type Scheduler struct {
	cfg sched.Config

	mu     sync.Mutex // guards cli, ep, pinged and lastList
	cli    *client.Client
	tr     *http.Transport // cli's
	ep     endpoint        // the Engine cli talks to
	pinged bool
	// lastList is the last listing that answered, this home's (false) and every
	// home's (true): what a listing shows while the Engine does not answer.
	lastList map[bool][]spec.AppStatus

	// errs remembers the error files of stopped containers.
	errs stoppedCache[errorInfo]
	// failures remembers what stopped torchrun nodes wrote of their failure.
	failures stoppedCache[*ranks.Failures]
	// workers remembers what the samplers of stopped torchrun nodes saw of their
	// workers (see wrapCommand).
	workers stoppedCache[map[int]ranks.Watched]
	// stats keeps containers' previous CPU samples (see Usage).
	stats statsCache
	// cleanupTimeout replaces the package's when set (tests of a rollback that
	// cannot finish).
	cleanupTimeout time.Duration
	// listTimeout replaces the package's when set (tests of an Engine that stalls).
	listTimeout time.Duration
}

// New makes the local_docker scheduler. It does not contact the Engine: the first call
// that needs it connects, negotiating the API version.
func New(cfg sched.Config) (sched.Scheduler, error) {
	if cfg.Session == "" {
		cfg.Session = spec.DefaultSession
	}
	return &Scheduler{cfg: cfg}, nil
}

// Name returns "local_docker".
func (s *Scheduler) Name() string { return Name }

// RunOpts lists the options of local_docker (front.RunOpts).
func (s *Scheduler) RunOpts() spec.RunOpts { return front.RunOpts() }

// Close releases the Engine connection. Running containers are left alone.
func (s *Scheduler) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cli == nil {
		return nil
	}
	err := s.cli.Close()
	if s.tr != nil {
		s.tr.CloseIdleConnections() // the SDK's Close does not see a transport it did not make
	}
	s.cli, s.tr, s.pinged = nil, nil, false
	return err
}

// engine returns a client that has reached the Engine once, connecting on first use.
func (s *Scheduler) engine(ctx context.Context) (*client.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cli == nil {
		ep, err := resolveEndpoint(os.Getenv)
		if err != nil {
			return nil, err
		}
		cli, tr, err := newClient(ep)
		if err != nil {
			return nil, fmt.Errorf("%w at %s: %v", ErrUnreachable, ep.where(), err)
		}
		s.cli, s.tr, s.ep = cli, tr, ep
	}
	if !s.pinged {
		if _, err := s.cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
			return nil, s.engineErrAt(s.ep, err)
		}
		s.pinged = true
	}
	return s.cli, nil
}

// newClient makes an SDK client of the Engine at ep that negotiates the API version
// (DOCKER_API_VERSION fixes it, as for the docker CLI). Its transport reads in large
// buffers (log streams come as one small chunk per line), keeps a connection per
// concurrent call, and bounds what it reads of each answer that is not a stream
// (boundedTransport).
func newClient(ep endpoint) (*client.Client, *http.Transport, error) {
	return newClientBounded(ep, maxListAnswer, maxObjectAnswer)
}

// newClientBounded is newClient with the bounds of a listing and of another answer.
func newClientBounded(ep endpoint, list, object int64) (*client.Client, *http.Transport, error) {
	hostURL, err := client.ParseHostURL(ep.Host)
	if err != nil {
		return nil, nil, err
	}
	tr := &http.Transport{
		ReadBufferSize:      64 << 10,
		MaxIdleConns:        maxParallel,
		MaxIdleConnsPerHost: maxParallel,
		IdleConnTimeout:     30 * time.Second,
		TLSClientConfig:     ep.TLS,
		// No HTTP/2 (the Engine speaks HTTP/1.1).
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	host := ep.Host
	if hostURL.Scheme == "ssh" {
		// As the docker CLI (cli/context/docker/load.go): the connection helper's
		// dialer (what the SDK's WithDialContext sets, on the transport it wraps
		// here) and its dummy host.
		sp, err := parseSSH(ep.Host)
		if err != nil {
			return nil, nil, err
		}
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) { return dialSSH(ctx, sp) }
		host = sshDummyHost
	} else if err := sockets.ConfigureTransport(tr, hostURL.Scheme, hostURL.Host); err != nil {
		// What the SDK's WithHost does to its own transport: a Unix socket's dialer,
		// or TCP's with the proxy of the environment.
		return nil, nil, err
	}
	hc := &http.Client{Transport: &boundedTransport{base: tr, list: list, object: object}, CheckRedirect: client.CheckRedirect}
	scheme := "http"
	if ep.TLS != nil {
		scheme = "https" // the SDK finds TLS on an *http.Transport only
	}
	// WithHost before WithHTTPClient: it configures the SDK's default transport
	// (which is then replaced), and sets the host the requests name.
	cli, err := client.New(client.WithHost(host), client.WithHTTPClient(hc), client.WithScheme(scheme), client.WithAPIVersionFromEnv())
	return cli, tr, err
}

// ErrEngineSlow is wrapped when the Engine did not answer a call in time: the
// Engine is there but busy (or hung), which callers show as a calm line, not as a
// failure of the app.
var ErrEngineSlow = sched.Unreachable("the Docker Engine did not answer")

// engineErr turns a failure to reach the Engine into one line naming its socket or
// address and what chose it (DOCKER_HOST, a context); a call that ran out of time
// into ErrEngineSlow; other errors are returned as they are.
func (s *Scheduler) engineErr(err error) error {
	s.mu.Lock()
	ep := s.ep
	s.mu.Unlock()
	return s.engineErrAt(ep, err)
}

func (s *Scheduler) engineErrAt(ep endpoint, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrEngineSlow) {
		return fmt.Errorf("%w in time at %s: %v", ErrEngineSlow, ep.where(), err)
	}
	var sshErr *sshExitError
	if !client.IsErrConnectionFailed(err) && !isDialError(err) && !errors.As(err, &sshErr) {
		return err
	}
	if ep.Host == "" {
		ep.Host = client.DefaultDockerHost
	}
	hint := ""
	if ep.From == "" {
		hint = " (set DOCKER_HOST or a docker context to use another Engine)"
	}
	why := strings.Join(strings.Fields(rootCause(err)), " ")
	if errors.As(err, &sshErr) {
		why = sshErr.Error()
	}
	if addr, ok := strings.CutPrefix(ep.Host, "unix://"); ok {
		if _, serr := os.Stat(addr); errors.Is(serr, os.ErrNotExist) {
			if ep.From == "" {
				return fmt.Errorf("%w: socket %s does not exist (is Docker running? set DOCKER_HOST or a docker context to use another Engine)", ErrUnreachable, addr)
			}
			why = "the socket does not exist (is Docker running?)"
		} else if strings.Contains(why, "connection refused") || strings.HasPrefix(why, "Cannot connect to the Docker daemon") {
			why = "nothing answers there (is Docker running?)"
		} else if strings.Contains(why, "permission denied") {
			why = "permission denied (is your user in the docker group?)"
		}
	}
	return fmt.Errorf("%w at %s: %s%s", ErrUnreachable, ep.where(), why, hint)
}

func isDialError(err error) bool {
	var uerr *url.Error
	return errors.As(err, &uerr) && strings.Contains(uerr.Error(), "dial")
}

// rootCause returns the innermost message of a chain, which is the useful part of the
// client's connection errors ("connect: permission denied").
func rootCause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// version is wick's version, for labels.
func version() string { return spec.Version }
