package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wick-dev/wick/internal/testkit"
)

// writeDockerContext writes a docker CLI context named name whose docker endpoint is host
// into the store under dir, as `docker context create NAME --docker host=HOST` does
// (docker/cli cli/context/store: meta/<sha256 of the name>/meta.json).
func writeDockerContext(t *testing.T, dir, name, host string, skipVerify bool) {
	t.Helper()
	sum := sha256.Sum256([]byte(name))
	meta := filepath.Join(dir, "contexts", "meta", hex.EncodeToString(sum[:]))
	if err := os.MkdirAll(meta, 0o755); err != nil {
		t.Fatal(err)
	}
	// The file as docker context create writes it (docker 20.10 here).
	b, err := json.Marshal(map[string]any{
		"Name":      name,
		"Metadata":  map[string]any{"Description": "wick test"},
		"Endpoints": map[string]any{"docker": map[string]any{"Host": host, "SkipTLSVerify": skipVerify}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(meta, "meta.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeConfig writes the docker CLI's config.json with currentContext.
func writeConfig(t *testing.T, dir, current string) {
	t.Helper()
	b := []byte(`{"auths": {}, "currentContext": "` + current + `"}`)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// The endpoint is chosen in the docker CLI's order: DOCKER_HOST, DOCKER_CONTEXT, the
// currentContext of config.json, the default socket; "default" is the default socket.
func TestResolveEndpointOrder(t *testing.T) {
	dir := t.TempDir()
	writeDockerContext(t, dir, "ctxenv", "unix:///run/ctxenv.sock", false)
	writeDockerContext(t, dir, "ctxcfg", "unix:///run/ctxcfg.sock", false)
	writeConfig(t, dir, "ctxcfg")
	for _, c := range []struct {
		name     string
		env      map[string]string
		host     string
		fromPart string
	}{
		{"DOCKER_HOST wins over both", map[string]string{"DOCKER_HOST": "unix:///run/host.sock", "DOCKER_CONTEXT": "ctxenv"}, "unix:///run/host.sock", "DOCKER_HOST"},
		{"DOCKER_CONTEXT over config.json", map[string]string{"DOCKER_CONTEXT": "ctxenv"}, "unix:///run/ctxenv.sock", "context ctxenv from DOCKER_CONTEXT"},
		{"config.json's current context", map[string]string{}, "unix:///run/ctxcfg.sock", "context ctxcfg from " + filepath.Join(dir, "config.json")},
		{"DOCKER_CONTEXT=default", map[string]string{"DOCKER_CONTEXT": "default"}, "unix:///var/run/docker.sock", "context default"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.env["DOCKER_CONFIG"] = dir
			ep, err := resolveEndpoint(envOf(c.env))
			if err != nil {
				t.Fatal(err)
			}
			if ep.Host != c.host || !strings.Contains(ep.From, c.fromPart) || ep.TLS != nil {
				t.Errorf("endpoint %+v, want host %s from %q", ep, c.host, c.fromPart)
			}
		})
	}
	// No config.json, no variables: the default socket.
	ep, err := resolveEndpoint(envOf(map[string]string{"DOCKER_CONFIG": t.TempDir()}))
	if err != nil || ep.Host != "unix:///var/run/docker.sock" || ep.From != "" {
		t.Errorf("no configuration: %+v, %v", ep, err)
	}
}

// A context that does not exist, a broken meta.json or config.json, an ssh://
// endpoint with a password and an npipe:// endpoint are one line each that names the
// context and where it came from.
func TestResolveEndpointErrors(t *testing.T) {
	dir := t.TempDir()
	writeDockerContext(t, dir, "remote", "ssh://me:secret@host", false)
	writeDockerContext(t, dir, "pipe", "npipe:////./pipe/docker_engine", false)
	broken := filepath.Join(dir, "contexts", "meta", contextDir("broken"))
	if err := os.MkdirAll(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "meta.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	badCfg := t.TempDir()
	if err := os.WriteFile(filepath.Join(badCfg, "config.json"), []byte("[1,"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"DOCKER_CONFIG": dir, "DOCKER_CONTEXT": "nosuch"}, `docker context "nosuch" (from DOCKER_CONTEXT) does not exist`},
		{map[string]string{"DOCKER_CONFIG": dir, "DOCKER_CONTEXT": "broken"}, `docker context "broken" (from DOCKER_CONTEXT): its meta.json is not JSON`},
		{map[string]string{"DOCKER_CONFIG": dir, "DOCKER_CONTEXT": "remote"}, "invalid SSH URL: plain-text password is not supported"},
		{map[string]string{"DOCKER_CONFIG": dir, "DOCKER_CONTEXT": "pipe"}, "unix://, tcp:// and ssh:// endpoints only"},
		{map[string]string{"DOCKER_CONFIG": badCfg}, "is not the docker CLI's configuration"},
		{map[string]string{"DOCKER_HOST": "tcp://127.0.0.1:2376", "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": t.TempDir()}, "TLS files of"},
	} {
		_, err := resolveEndpoint(envOf(c.env))
		if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %v, want one line containing %q", c.env, err, c.want)
		}
	}
}

// A tcp context with SkipTLSVerify speaks TLS without checking the Engine's
// certificate (docker/cli cli/context/docker/load.go, tlsConfig); without TLS data or
// SkipTLSVerify it speaks plain HTTP.
func TestResolveEndpointContextTLS(t *testing.T) {
	dir := t.TempDir()
	writeDockerContext(t, dir, "insecure", "tcp://10.0.0.1:2376", true)
	writeDockerContext(t, dir, "plain", "tcp://10.0.0.1:2375", false)
	ep, err := resolveEndpoint(envOf(map[string]string{"DOCKER_CONFIG": dir, "DOCKER_CONTEXT": "insecure"}))
	if err != nil || ep.TLS == nil || !ep.TLS.InsecureSkipVerify {
		t.Errorf("insecure: %+v, %v", ep, err)
	}
	ep, err = resolveEndpoint(envOf(map[string]string{"DOCKER_CONFIG": dir, "DOCKER_CONTEXT": "plain"}))
	if err != nil || ep.TLS != nil {
		t.Errorf("plain: %+v, %v", ep, err)
	}
}

// recordingProxy is a second Engine socket: a Unix socket that forwards every request
// to the real Engine and counts them.
type recordingProxy struct {
	sock string
	mu   sync.Mutex
	n    int
	// paths are the requests' methods and paths (without the API version).
	paths []string
	// stall, when set, holds every request until the client gives up.
	stall bool
	// inflate, when set, says how many spaces to put after the first byte of the
	// answer to a request (its method and path without the API version): valid JSON
	// that a decoder must read through.
	inflate func(method, path string) int64
}

// setInflate sets the proxy's inflate.
func (p *recordingProxy) setInflate(f func(method, path string) int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inflate = f
}

// inflated is the answer's body with n spaces after its first byte.
func inflated(body io.ReadCloser, n int64) io.ReadCloser {
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(io.LimitReader(body, 1), io.LimitReader(spaces{}, n), body), body}
}

// spaces reads as endless spaces.
type spaces struct{}

func (spaces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// reset forgets the requests recorded so far.
func (p *recordingProxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paths = nil
}

// recorded returns the requests recorded since the last reset.
func (p *recordingProxy) recorded() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.paths)
}

func (p *recordingProxy) setStall(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stall = on
}

func (p *recordingProxy) requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

func newRecordingProxy(t *testing.T) *recordingProxy {
	t.Helper()
	real, err := resolveEndpoint(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	addr, ok := strings.CutPrefix(real.Host, "unix://")
	if !ok {
		t.Skipf("the proxy speaks to an Engine on a Unix socket, not %s", real.Host)
	}
	dir, err := os.MkdirTemp("", "wick-ctx-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &recordingProxy{sock: filepath.Join(dir, "engine.sock")}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", addr)
	}}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.Out.URL.Scheme, r.Out.URL.Host = "http", "docker"
	}, Transport: tr, ModifyResponse: func(resp *http.Response) error {
		p.mu.Lock()
		f := p.inflate
		p.mu.Unlock()
		if f == nil || resp.StatusCode != http.StatusOK {
			return nil
		}
		if n := f(resp.Request.Method, apiPath(resp.Request.URL.Path)); n > 0 {
			resp.Body = inflated(resp.Body, n)
			resp.ContentLength = -1
			resp.Header.Del("Content-Length")
		}
		return nil
	}}
	l, err := net.Listen("unix", p.sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.n++
		p.paths = append(p.paths, r.Method+" "+apiPath(r.URL.Path))
		stall := p.stall
		p.mu.Unlock()
		if stall {
			<-r.Context().Done() // the client gave up
			return
		}
		proxy.ServeHTTP(w, r)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close(); tr.CloseIdleConnections() })
	return p
}

// Each of the three ways of choosing an Engine reaches the second socket: wick's
// calls go through it (its count grows) and the listing answers.
func TestEndpointReachesContextSocket(t *testing.T) {
	needEngine(t)
	p := newRecordingProxy(t)
	cfgDir := t.TempDir()
	writeDockerContext(t, cfgDir, "wick-second", "unix://"+p.sock, false)
	for _, c := range []struct {
		name string
		env  map[string]string
	}{
		{"DOCKER_HOST", map[string]string{"DOCKER_HOST": "unix://" + p.sock}},
		{"DOCKER_CONTEXT", map[string]string{"DOCKER_HOST": "", "DOCKER_CONTEXT": "wick-second"}},
		{"config.json", map[string]string{"DOCKER_HOST": "", "DOCKER_CONTEXT": ""}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("DOCKER_CONFIG", cfgDir)
			if c.name == "config.json" {
				writeConfig(t, cfgDir, "wick-second")
			}
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			before := p.requests()
			s := newScheduler(t)
			ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(60*time.Second))
			defer cancel()
			if _, err := s.List(ctx); err != nil {
				t.Fatal(err)
			}
			if p.requests() <= before {
				t.Errorf("no request reached the second socket (%d before, %d after)", before, p.requests())
			}
			if s.ep.Host != "unix://"+p.sock {
				t.Errorf("endpoint %+v", s.ep)
			}
		})
	}
}

// An Engine a context names that does not answer is one line naming the context.
func TestEndpointContextUnreachable(t *testing.T) {
	cfgDir := t.TempDir()
	writeDockerContext(t, cfgDir, "gone", "unix://"+filepath.Join(cfgDir, "gone.sock"), false)
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("DOCKER_CONFIG", cfgDir)
	t.Setenv("DOCKER_CONTEXT", "gone")
	s := newScheduler(t)
	_, err := s.List(context.Background())
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "context gone from DOCKER_CONTEXT") ||
		!strings.Contains(err.Error(), "the socket does not exist") || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %v", err)
	}
}
