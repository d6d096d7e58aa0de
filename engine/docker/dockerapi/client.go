// Package dockerapi is a small client of the Docker Engine's HTTP API: the calls the
// local_docker scheduler makes (containers, images, networks), over the Unix socket
// or TCP (with TLS) that DOCKER_HOST names, negotiating the API version down to the
// Engine's (20.10 speaks 1.41).
//
// It replaces github.com/moby/moby/client in wick's binary, which every verb of wick
// starts: that client links OpenTelemetry and, through its API types, the regular
// expressions of github.com/distribution/reference and opencontainers/go-digest,
// compiled at every start-up (see DESIGN.md). Everything read from the Engine has a
// size bound; the errors callers decide on are typed (IsNotFound, IsConflict,
// ErrUnreachable).
package dockerapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Environment variables the client reads, as the docker CLI and the moby client do.
const (
	EnvHost       = "DOCKER_HOST"
	EnvAPIVersion = "DOCKER_API_VERSION"
	EnvCertPath   = "DOCKER_CERT_PATH"
	EnvTLSVerify  = "DOCKER_TLS_VERIFY"
)

// DefaultHost is the Engine's socket when DOCKER_HOST is not set.
const DefaultHost = "unix:///var/run/docker.sock"

// API versions: the client speaks at most MaxVersion, and negotiates down to what
// the Engine speaks, not below MinVersion (Engine 19.03).
const (
	MaxVersion = "1.47"
	MinVersion = "1.40"
)

// Size bounds of what is read from the Engine.
const (
	// MaxJSON bounds one JSON answer: a list of every container, each with its
	// labels (wick's hold the AppDef), is the largest.
	MaxJSON = 64 << 20
	// MaxStats bounds one stats sample (about 2 KiB, more with many CPUs).
	MaxStats = 1 << 20
	// maxErrorBody bounds an error answer, as the moby client does.
	maxErrorBody = 1 << 20
	// maxPing bounds the body of /_ping ("OK").
	maxPing = 4 << 10
)

// dummyHost is the Host header of requests over a Unix socket (the Engine ignores it).
const dummyHost = "api.moby.localhost"

// ErrUnreachable is wrapped by the errors of calls that could not reach the Engine
// (nothing listens at the socket, connection refused, TLS failure).
var ErrUnreachable = errors.New("cannot reach the Docker Engine")

// ErrTooLarge is wrapped when an answer of the Engine passes its size bound.
var ErrTooLarge = errors.New("answer of the Docker Engine too large")

// Error is an error answer of the Engine: a status of 400 or more and its message.
type Error struct {
	Status  int    // HTTP status
	Method  string // the request's method and path, for the message
	Path    string
	Message string // the Engine's message
}

// Error returns the Engine's message, as the docker CLI shows it.
func (e *Error) Error() string {
	if e.Message != "" {
		return "Error response from daemon: " + e.Message
	}
	return fmt.Sprintf("Error response from daemon: %s %s: %d %s", e.Method, e.Path, e.Status, http.StatusText(e.Status))
}

// IsNotFound reports whether err is the Engine's 404: no such container, image or
// network.
func IsNotFound(err error) bool { return isStatus(err, http.StatusNotFound) }

// IsConflict reports whether err is the Engine's 409: a name in use, a container in a
// state that does not allow the call.
func IsConflict(err error) bool { return isStatus(err, http.StatusConflict) }

func isStatus(err error, status int) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == status
}

// Client calls one Engine. It is safe for concurrent use.
type Client struct {
	host    string // as given: unix:///path or tcp://host:port
	scheme  string // http or https
	addr    string // the URL host of requests
	hc      *http.Client
	tr      *http.Transport
	fixed   bool // the version came from DOCKER_API_VERSION: no negotiation
	mu      sync.Mutex
	version string // "" until negotiated
}

// FromEnv makes a client of the Engine DOCKER_HOST names (DefaultHost when unset),
// with DOCKER_API_VERSION, DOCKER_CERT_PATH and DOCKER_TLS_VERIFY as the docker CLI
// reads them. It does not contact the Engine.
func FromEnv() (*Client, error) {
	host := os.Getenv(EnvHost)
	if host == "" {
		host = DefaultHost
	}
	var tlsCfg *tls.Config
	if dir := os.Getenv(EnvCertPath); dir != "" {
		cfg, err := tlsFromDir(dir, os.Getenv(EnvTLSVerify) != "")
		if err != nil {
			return nil, err
		}
		tlsCfg = cfg
	}
	c, err := New(host, tlsCfg)
	if err != nil {
		return nil, err
	}
	if v := os.Getenv(EnvAPIVersion); v != "" {
		if _, ok := parseVersion(v); !ok {
			return nil, fmt.Errorf("%s=%q is not an API version (want MAJOR.MINOR)", EnvAPIVersion, v)
		}
		c.version, c.fixed = v, true
	}
	return c, nil
}

// tlsFromDir reads ca.pem, cert.pem and key.pem of dir, as the docker CLI does; the
// Engine's certificate is checked only when verify is set (DOCKER_TLS_VERIFY).
func tlsFromDir(dir string, verify bool) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", EnvCertPath, dir, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, InsecureSkipVerify: !verify} // #nosec G402 -- as DOCKER_TLS_VERIFY says
	if verify {
		ca, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", EnvCertPath, dir, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("%s=%s: ca.pem holds no certificate", EnvCertPath, dir)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// ParseHost splits a DOCKER_HOST value into its network ("unix" or "tcp") and address.
func ParseHost(host string) (network, addr string, err error) {
	proto, rest, ok := strings.Cut(host, "://")
	if !ok || rest == "" {
		return "", "", fmt.Errorf("unable to parse docker host %q", host)
	}
	switch proto {
	case "unix":
		return "unix", rest, nil
	case "tcp", "http", "https":
		u, err := url.Parse("tcp://" + rest)
		if err != nil || u.Host == "" {
			return "", "", fmt.Errorf("unable to parse docker host %q", host)
		}
		if u.Path != "" && u.Path != "/" {
			return "", "", fmt.Errorf("docker host %q: a path after the address is not supported", host)
		}
		if u.Port() == "" {
			return "", "", fmt.Errorf("docker host %q: no port", host)
		}
		return "tcp", u.Host, nil
	}
	return "", "", fmt.Errorf("docker host %q: protocol %q is not supported (unix:// or tcp://)", host, proto)
}

// New makes a client of the Engine at host (unix:///path or tcp://host:port), over
// TLS when tlsCfg is not nil. It does not contact the Engine.
func New(host string, tlsCfg *tls.Config) (*Client, error) {
	network, addr, err := ParseHost(host)
	if err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, addr)
		},
		// Log streams come as one small chunk per line: read in large buffers.
		ReadBufferSize:      64 << 10,
		MaxIdleConns:        16,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
		// The Engine speaks HTTP/1.1 only.
		TLSNextProto:    map[string]func(string, *tls.Conn) http.RoundTripper{},
		TLSClientConfig: tlsCfg,
	}
	c := &Client{host: host, scheme: "http", addr: addr, tr: tr}
	if network == "unix" {
		c.addr = dummyHost
	}
	if tlsCfg != nil {
		c.scheme = "https"
		if network == "unix" {
			return nil, fmt.Errorf("docker host %q: TLS over a Unix socket is not supported", host)
		}
	}
	c.hc = &http.Client{
		Transport: tr,
		// The Engine does not redirect; a redirect is answered as is.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c, nil
}

// Host is the Engine's address as given (DOCKER_HOST's value).
func (c *Client) Host() string { return c.host }

// Version is the API version in use: negotiated by the first call, or
// DOCKER_API_VERSION's.
func (c *Client) Version() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// Close closes the idle connections. Streams still open keep theirs.
func (c *Client) Close() error {
	c.tr.CloseIdleConnections()
	return nil
}

// Ping checks that the Engine answers and negotiates the API version: the lower of
// MaxVersion and the Engine's, failing when the Engine's is below MinVersion.
func (c *Client) Ping(ctx context.Context) error {
	resp, err := c.send(ctx, http.MethodGet, "/_ping", nil, nil, nil)
	if err != nil {
		return err
	}
	defer closeBody(resp)
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxPing))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fixed {
		return nil
	}
	v := resp.Header.Get("Api-Version")
	if v == "" {
		v = MinVersion // an Engine that does not say: assume the oldest we speak
	}
	if lessVersion(v, MinVersion) {
		return fmt.Errorf("the Docker Engine speaks API %s, older than %s (Engine 19.03), the oldest wick speaks", v, MinVersion)
	}
	c.version = MaxVersion
	if lessVersion(v, MaxVersion) {
		c.version = v
	}
	return nil
}

// negotiated returns the API version, pinging the Engine first when none is known.
func (c *Client) negotiated(ctx context.Context) (string, error) {
	if v := c.Version(); v != "" {
		return v, nil
	}
	if err := c.Ping(ctx); err != nil {
		return "", err
	}
	return c.Version(), nil
}

// parseVersion reads MAJOR.MINOR.
func parseVersion(v string) ([2]int, bool) {
	a, b, ok := strings.Cut(v, ".")
	if !ok {
		return [2]int{}, false
	}
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || x < 0 || y < 0 {
		return [2]int{}, false
	}
	return [2]int{x, y}, true
}

// lessVersion reports whether API version a is older than b; an unreadable version
// counts as the oldest.
func lessVersion(a, b string) bool {
	x, okx := parseVersion(a)
	y, oky := parseVersion(b)
	switch {
	case !okx:
		return oky
	case !oky:
		return false
	}
	return x[0] < y[0] || x[0] == y[0] && x[1] < y[1]
}

// request makes a call of the API at the negotiated version and returns the answer
// of a status below 400; larger statuses are an *Error. The caller closes the body.
func (c *Client) request(ctx context.Context, method, path string, query url.Values, hdr http.Header, body io.Reader) (*http.Response, error) {
	v, err := c.negotiated(ctx)
	if err != nil {
		return nil, err
	}
	return c.send(ctx, method, "/v"+v+path, query, hdr, body)
}

// send makes one HTTP request of the Engine.
func (c *Client) send(ctx context.Context, method, path string, query url.Values, hdr http.Header, body io.Reader) (*http.Response, error) {
	u := url.URL{Scheme: c.scheme, Host: c.addr, Path: path, RawQuery: query.Encode()}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("docker: %s %s: %w", method, path, err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("docker: %s %s: %w", method, path, ctx.Err())
		}
		return nil, &reachError{host: c.host, err: err}
	}
	if resp.StatusCode < http.StatusBadRequest {
		return resp, nil
	}
	defer closeBody(resp)
	return nil, errorOf(resp, method, path)
}

// reachError is a call that did not reach the Engine.
type reachError struct {
	host string
	err  error
}

func (e *reachError) Error() string {
	return fmt.Sprintf("%v at %s: %v", ErrUnreachable, e.host, rootCause(e.err))
}

func (e *reachError) Unwrap() error { return e.err }

// Is makes errors.Is(err, ErrUnreachable) hold.
func (e *reachError) Is(target error) bool { return target == ErrUnreachable }

// rootCause is the innermost error of a chain: "connect: no such file or directory"
// rather than the URL of the request around it.
func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// errorOf reads an error answer: {"message": "..."} or plain text.
func errorOf(resp *http.Response, method, path string) error {
	e := &Error{Status: resp.StatusCode, Method: method, Path: path}
	if method == http.MethodHead {
		return e
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		return e
	}
	var msg struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &msg) == nil && msg.Message != "" {
		e.Message = msg.Message
	} else {
		e.Message = strings.TrimSpace(string(b))
	}
	return e
}

// closeBody drains a little of a body, so that its connection can be reused, and
// closes it.
func closeBody(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}

// call makes a request with a JSON body (in, when not nil) and decodes its JSON
// answer into out (when not nil), at most MaxJSON bytes of it.
func (c *Client) call(ctx context.Context, method, path string, query url.Values, in, out any) error {
	return c.callLimit(ctx, method, path, query, in, out, MaxJSON)
}

// callLimit is call with an answer of at most limit bytes.
func (c *Client) callLimit(ctx context.Context, method, path string, query url.Values, in, out any, limit int64) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("docker: %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	resp, err := c.request(ctx, method, path, query, nil, body)
	if err != nil {
		return err
	}
	defer closeBody(resp)
	if out == nil {
		return nil
	}
	return decodeJSON(resp.Body, out, limit, method, path)
}

// decodeJSON decodes one JSON value of at most limit bytes.
func decodeJSON(r io.Reader, out any, limit int64, method, path string) error {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return fmt.Errorf("docker: %s %s: reading the answer: %w", method, path, err)
	}
	if int64(len(b)) > limit {
		return fmt.Errorf("docker: %s %s: %w (over %d bytes)", method, path, ErrTooLarge, limit)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("docker: %s %s: reading the answer: %w", method, path, err)
	}
	return nil
}
