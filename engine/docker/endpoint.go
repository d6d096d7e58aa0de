package docker

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/docker/go-connections/tlsconfig"
	"github.com/moby/moby/client"
)

// The docker CLI's environment variables that choose the Engine, besides the SDK's
// (client.EnvOverrideHost, EnvOverrideCertPath, EnvTLSVerify).
const (
	// envContext names the context to use (docker/cli cli/command: EnvOverrideContext).
	envContext = "DOCKER_CONTEXT"
	// envConfig is the docker CLI's configuration directory (default ~/.docker).
	envConfig = "DOCKER_CONFIG"
	// defaultContext is the context that means "DOCKER_HOST, else the default socket".
	defaultContext = "default"
)

// maxContextFile bounds config.json and a context's meta.json read from disk.
const maxContextFile = 1 << 20

// endpoint is the Engine wick talks to and where that choice came from.
type endpoint struct {
	// Host is the Engine's address: unix:///path, tcp://host:port or
	// ssh://[user@]host[:port][/socket].
	Host string
	// TLS is the transport's TLS configuration, nil for none.
	TLS *tls.Config
	// From says what chose Host, for error messages: "DOCKER_HOST", "context
	// rootless (DOCKER_CONTEXT)", "context rootless (~/.docker/config.json)", or ""
	// for the default socket.
	From string
}

// where names the endpoint in a message: "DOCKER_HOST=tcp://h:2376", "socket
// /run/docker.sock (context rootless from DOCKER_CONTEXT)".
func (e endpoint) where() string {
	if e.From == client.EnvOverrideHost {
		return e.From + "=" + e.Host
	}
	at := e.Host
	if addr, ok := strings.CutPrefix(e.Host, "unix://"); ok {
		at = "socket " + addr
	}
	if e.From != "" {
		at += " (" + e.From + ")"
	}
	return at
}

// resolveEndpoint finds the Engine as the docker CLI does when given no --host or
// --context flag (docker/cli cli/command/cli.go, resolveContextName and
// getDockerEndPoint): DOCKER_HOST when set (with the default context's TLS from
// DOCKER_CERT_PATH and DOCKER_TLS_VERIFY); else the context DOCKER_CONTEXT names;
// else the currentContext of config.json in DOCKER_CONFIG (default ~/.docker); the
// context "default", or none, is the default socket. A named context's endpoint is
// read from its meta store (contexts/meta/<sha256 of the name>/meta.json,
// cli/context/store/store.go contextdirOf) and its TLS files from
// contexts/tls/<sha256 of the name>/docker/ (cli/context/store/tlsstore.go).
// getenv is os.Getenv outside tests.
func resolveEndpoint(getenv func(string) string) (endpoint, error) {
	if host := getenv(client.EnvOverrideHost); host != "" {
		ep := endpoint{Host: host, From: client.EnvOverrideHost}
		return ep, ep.envTLS(getenv)
	}
	name, from := getenv(envContext), envContext
	dir := configDir(getenv)
	if name == "" {
		cur, err := currentContext(dir)
		if err != nil {
			return endpoint{}, err
		}
		name, from = cur, tildePath(filepath.Join(dir, "config.json"), getenv)
	}
	if name == "" || name == defaultContext {
		ep := endpoint{Host: client.DefaultDockerHost}
		if name != "" {
			ep.From = "context default (" + from + ")"
		}
		return ep, ep.envTLS(getenv)
	}
	return contextEndpoint(dir, name, from)
}

// configDir is the docker CLI's configuration directory: DOCKER_CONFIG, else
// ~/.docker (docker/cli cli/config/config.go, Dir).
func configDir(getenv func(string) string) string {
	if d := getenv(envConfig); d != "" {
		return d
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".docker")
}

// tildePath writes a path under $HOME with ~, for messages.
func tildePath(p string, getenv func(string) string) string {
	if home := getenv("HOME"); home != "" {
		if rest, ok := strings.CutPrefix(p, filepath.Clean(home)+"/"); ok {
			return "~/" + rest
		}
	}
	return p
}

// readBounded reads a small file of the docker CLI's configuration.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxContextFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxContextFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxContextFile)
	}
	return b, nil
}

// currentContext reads the currentContext of the docker CLI's config.json; "" when
// the file or the field is missing.
func currentContext(dir string) (string, error) {
	path := filepath.Join(dir, "config.json")
	b, err := readBounded(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%w: reading the docker CLI's configuration: %v", ErrUnreachable, err)
	}
	var cfg struct {
		CurrentContext string `json:"currentContext"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return "", fmt.Errorf("%w: %s is not the docker CLI's configuration: %v", ErrUnreachable, path, err)
	}
	return cfg.CurrentContext, nil
}

// contextDir is the directory of a context in the store: the hex SHA-256 of its name.
func contextDir(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])
}

// contextEndpoint reads the docker endpoint of the context name from the meta store
// under dir, and its TLS files.
func contextEndpoint(dir, name, from string) (endpoint, error) {
	what := fmt.Sprintf("docker context %q (from %s)", name, from)
	b, err := readBounded(filepath.Join(dir, "contexts", "meta", contextDir(name), "meta.json"))
	if errors.Is(err, os.ErrNotExist) {
		return endpoint{}, fmt.Errorf("%w: %s does not exist (see `docker context ls`)", ErrUnreachable, what)
	}
	if err != nil {
		return endpoint{}, fmt.Errorf("%w: %s: %v", ErrUnreachable, what, err)
	}
	var meta struct {
		Endpoints map[string]struct {
			Host          string
			SkipTLSVerify bool
		}
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return endpoint{}, fmt.Errorf("%w: %s: its meta.json is not JSON: %v", ErrUnreachable, what, err)
	}
	ep, ok := meta.Endpoints["docker"]
	if !ok {
		return endpoint{}, fmt.Errorf("%w: %s has no docker endpoint", ErrUnreachable, what)
	}
	out := endpoint{Host: ep.Host, From: "context " + name + " from " + from}
	if out.Host == "" {
		out.Host = client.DefaultDockerHost
	}
	proto, _, _ := strings.Cut(out.Host, "://")
	switch proto {
	case "unix":
		return out, nil // no TLS over a socket, as the docker CLI (isSocket)
	case "ssh":
		if _, err := parseSSH(out.Host); err != nil {
			return endpoint{}, fmt.Errorf("%w: %s: endpoint %s: %v", ErrUnreachable, what, out.Host, err)
		}
		return out, nil // ssh's own encryption (see ssh.go)
	case "tcp":
	default:
		return endpoint{}, fmt.Errorf("%w: %s: endpoint %s: wick speaks to unix://, tcp:// and ssh:// endpoints only", ErrUnreachable, what, out.Host)
	}
	tlsDir := filepath.Join(dir, "contexts", "tls", contextDir(name), "docker")
	opts := tlsconfig.Options{InsecureSkipVerify: ep.SkipTLSVerify, ExclusiveRootPools: true, MinVersion: tls.VersionTLS12}
	found := false
	if p := filepath.Join(tlsDir, "ca.pem"); exists(p) {
		opts.CAFile, found = p, true
	}
	if c, k := filepath.Join(tlsDir, "cert.pem"), filepath.Join(tlsDir, "key.pem"); exists(c) && exists(k) {
		opts.CertFile, opts.KeyFile, found = c, k, true
	}
	if !found && !ep.SkipTLSVerify {
		return out, nil // plain HTTP, as the docker CLI without TLS data
	}
	cfg, err := tlsconfig.Client(opts)
	if err != nil {
		return endpoint{}, fmt.Errorf("%w: %s: its TLS files: %v", ErrUnreachable, what, err)
	}
	out.TLS = cfg
	return out, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// envTLS sets the TLS of the default context from the environment, as the docker
// CLI's flags default to it (docker/cli cli/flags/options.go): TLS is on when
// DOCKER_TLS_VERIFY or DOCKER_TLS is set, or DOCKER_CERT_PATH (as the SDK's
// FromEnv); the files are ca.pem, cert.pem and key.pem of DOCKER_CERT_PATH, else of
// the configuration directory, those that exist; the Engine's certificate is
// checked only when DOCKER_TLS_VERIFY is set. A Unix socket and ssh take no TLS.
func (e *endpoint) envTLS(getenv func(string) string) error {
	dir, verify := getenv(client.EnvOverrideCertPath), getenv(client.EnvTLSVerify) != ""
	if dir == "" && !verify && getenv("DOCKER_TLS") == "" || strings.HasPrefix(e.Host, "unix://") || strings.HasPrefix(e.Host, "ssh://") {
		return nil
	}
	if dir == "" {
		dir = configDir(getenv)
	}
	opts := tlsconfig.Options{InsecureSkipVerify: !verify, MinVersion: tls.VersionTLS12}
	if p := filepath.Join(dir, "ca.pem"); verify || exists(p) {
		opts.CAFile = p
	}
	if c, k := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"); exists(c) || exists(k) {
		opts.CertFile, opts.KeyFile = c, k
	}
	cfg, err := tlsconfig.Client(opts)
	if err != nil {
		return fmt.Errorf("%w: TLS files of %s: %v", ErrUnreachable, dir, err)
	}
	e.TLS = cfg
	return nil
}
