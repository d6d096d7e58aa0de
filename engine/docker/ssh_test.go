package docker

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// The ssh arguments of the docker CLI's connection helper for each form of address
// (docker/cli cli/connhelper/ssh/ssh_test.go TestCommand and connhelper_test.go:
// -o ConnectTimeout=30 and -T by default), and the addresses it refuses
// (TestParseURL).
func TestSSHArgs(t *testing.T) {
	for _, c := range []struct {
		url  string
		want []string
	}{
		{"ssh://example.com", []string{"-o", "ConnectTimeout=30", "-T", "--", "example.com", "docker system dial-stdio"}},
		{"ssh://example.com/", []string{"-o", "ConnectTimeout=30", "-T", "--", "example.com", "docker system dial-stdio"}},
		{"ssh://me@example.com:10022/var/run/docker.sock", []string{"-l", "me", "-p", "10022", "-o", "ConnectTimeout=30", "-T", "--", "example.com",
			"docker '--host=unix:///var/run/docker.sock' system dial-stdio"}},
		{`ssh://example.com/var/run/docker.sock '$(echo hello > /hello.txt)'`, []string{"-o", "ConnectTimeout=30", "-T", "--", "example.com",
			`docker '--host=unix:///var/run/docker.sock '\''$(echo hello > /hello.txt)'\''' system dial-stdio`}},
	} {
		sp, err := parseSSH(c.url)
		if err != nil {
			t.Errorf("%s: %v", c.url, err)
			continue
		}
		if got := sp.args(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: ssh %q\nwant %q", c.url, got, c.want)
		}
	}
	for url, want := range map[string]string{
		"ssh://me:passw0rd@example.com":  "invalid SSH URL: plain-text password is not supported",
		"ssh://example.com?foo=bar":      `invalid SSH URL: query parameters are not allowed: "foo=bar"`,
		"ssh://example.com#bar":          `invalid SSH URL: fragments are not allowed: "bar"`,
		"ssh://":                         "invalid SSH URL: hostname is empty",
		"ssh:///no-hostname":             "invalid SSH URL: hostname is empty",
		"ssh://example.com/var/run/\x00": "invalid SSH URL: net/url: invalid control character in URL",
	} {
		if _, err := parseSSH(url); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %s", url, err, want)
		}
	}
}

// fakeSSH puts on PATH an `ssh` that stands for a real one: it records its
// arguments, then runs the remote command here, as sshd would run it on the host
// (with FAKE_SSH_FAIL set it fails as ssh does when the host refuses the key). What
// it fakes is the ssh transport only (no sshd here: its cost, a server and keys, buys
// nothing wick sees); `docker system dial-stdio` and the Engine behind it are real.
func fakeSSH(t *testing.T) (argsFile string) {
	t.Helper()
	docker, err := exec.LookPath("docker")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but no docker CLI on PATH (the remote end of ssh://)")
		}
		t.Skip("no docker CLI on PATH (the remote end of ssh://)")
	}
	dir := t.TempDir()
	argsFile = filepath.Join(dir, "args")
	script := `#!/bin/sh
for a in "$@"; do printf '%s\n' "$a"; done >'` + argsFile + `'
if [ -n "$FAKE_SSH_FAIL" ]; then
	echo "me@wick-test-host: Permission denied (publickey)." >&2
	exit 255
fi
while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift 2 # -- HOST
PATH='` + filepath.Dir(docker) + `':$PATH exec sh -c "$*"
`
	if err := os.WriteFile(filepath.Join(dir, "ssh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return argsFile
}

// DOCKER_HOST=ssh://... and a context with an ssh endpoint reach the Engine through
// ssh and the remote `docker system dial-stdio`: an app runs and its log streams
// back; the requests reach the Engine socket the address names (the recording
// proxy). ssh that fails is one line with what ssh said.
func TestSSHEngine(t *testing.T) {
	needEngine(t)
	argsFile := fakeSSH(t)
	p := newRecordingProxy(t)
	host := "ssh://me@wick-test-host:2222" + p.sock
	t.Setenv("DOCKER_HOST", host)
	t.Setenv("FAKE_SSH_FAIL", "")
	s := newScheduler(t)
	before := p.requests()
	appID := launch(t, s, &spec.AppDef{Name: "ssh", Roles: []spec.Role{role("echo", 1, "lines", "3")}}, nil)
	waitTerminal(t, s, appID)
	got := texts(readLogs(t, s, appID, "echo", 0, sched.LogOptions{}))
	if len(got) != 6 || !strings.Contains(strings.Join(got, "\n"), "out 2") {
		t.Errorf("log through ssh: %q", got)
	}
	if p.requests() <= before {
		t.Errorf("no request reached the Engine socket of the ssh address")
	}
	args, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	want := "-l\nme\n-p\n2222\n-o\nConnectTimeout=30\n-T\n--\nwick-test-host\ndocker '--host=unix://" + p.sock + "' system dial-stdio\n"
	if string(args) != want {
		t.Errorf("ssh arguments:\n%s\nwant\n%s", args, want)
	}

	// The same Engine as a docker context's endpoint.
	cfgDir := t.TempDir()
	writeDockerContext(t, cfgDir, "over-ssh", host, false)
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("DOCKER_CONFIG", cfgDir)
	t.Setenv("DOCKER_CONTEXT", "over-ssh")
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(60*time.Second))
	defer cancel()
	before = p.requests()
	s2 := newScheduler(t)
	if _, err := s2.Describe(ctx, appID); err != nil {
		t.Errorf("describe through the ssh context: %v", err)
	}
	if p.requests() <= before {
		t.Errorf("no request of the context reached the Engine socket")
	}

	// No ssh.
	path := os.Getenv("PATH")
	t.Setenv("PATH", t.TempDir())
	_, err = newScheduler(t).List(ctx)
	if !errors.Is(err, ErrUnreachable) || !strings.HasSuffix(err.Error(), `: cannot start ssh: exec: "ssh": executable file not found in $PATH`) {
		t.Errorf("no ssh: %v", err)
	}
	t.Setenv("PATH", path)

	// ssh refused.
	t.Setenv("FAKE_SSH_FAIL", "1")
	s3 := newScheduler(t)
	_, err = s3.List(ctx)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "context over-ssh from DOCKER_CONTEXT") ||
		!strings.Contains(err.Error(), "ssh to wick-test-host ended (exit status 255): me@wick-test-host: Permission denied (publickey).") ||
		strings.Contains(err.Error(), "\n") {
		t.Errorf("ssh refused: %v", err)
	}
}
