package dockerapi

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// engine is a client of the Engine DOCKER_HOST names, pinged; the test skips (fails
// under CI=true) when none answers.
func engine(t *testing.T) *Client {
	t.Helper()
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(10*time.Second))
	defer cancel()
	if err := c.Ping(ctx); err != nil {
		testkit.Missing(t, "no Docker Engine: "+err.Error())
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestParseHost(t *testing.T) {
	for _, c := range []struct{ host, network, addr string }{
		{"unix:///var/run/docker.sock", "unix", "/var/run/docker.sock"},
		{"unix:///run/user/1000/docker.sock", "unix", "/run/user/1000/docker.sock"},
		{"tcp://127.0.0.1:2375", "tcp", "127.0.0.1:2375"},
		{"tcp://[::1]:2376", "tcp", "[::1]:2376"},
		{"tcp://docker.example.com:2376/", "tcp", "docker.example.com:2376"},
	} {
		network, addr, err := ParseHost(c.host)
		if err != nil || network != c.network || addr != c.addr {
			t.Errorf("ParseHost(%q) = %q, %q, %v; want %q, %q", c.host, network, addr, err, c.network, c.addr)
		}
	}
	for _, bad := range []string{"", "/var/run/docker.sock", "unix://", "tcp://host", "tcp://host:2375/path", "ssh://me@host", "npipe:////./pipe/docker_engine"} {
		if _, _, err := ParseHost(bad); err == nil {
			t.Errorf("ParseHost(%q) accepted", bad)
		}
	}
}

func TestLessVersion(t *testing.T) {
	for _, c := range []struct {
		a, b string
		less bool
	}{
		{"1.41", "1.47", true}, {"1.47", "1.41", false}, {"1.41", "1.41", false},
		{"1.9", "1.10", true}, {"2.0", "1.99", false}, {"junk", "1.40", true}, {"1.40", "junk", false},
	} {
		if got := lessVersion(c.a, c.b); got != c.less {
			t.Errorf("lessVersion(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

// The version spoken is the lower of the client's and the Engine's, as `docker
// version` reports the Engine's; DOCKER_API_VERSION fixes it.
func TestVersionNegotiated(t *testing.T) {
	c := engine(t)
	out, err := exec.Command("docker", "version", "--format", "{{.Server.APIVersion}}").Output()
	if err != nil {
		t.Skipf("docker CLI: %v", err)
	}
	want := strings.TrimSpace(string(out))
	if lessVersion(MaxVersion, want) {
		want = MaxVersion
	}
	if got := c.Version(); got != want {
		t.Errorf("negotiated %s, want %s", got, want)
	}
	t.Setenv(EnvAPIVersion, MinVersion)
	fixed, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := fixed.Ping(context.Background()); err != nil || fixed.Version() != MinVersion {
		t.Errorf("with %s=%s: version %s, %v", EnvAPIVersion, MinVersion, fixed.Version(), err)
	}
	t.Setenv(EnvAPIVersion, "latest")
	if _, err := FromEnv(); err == nil {
		t.Error("DOCKER_API_VERSION=latest accepted")
	}
}

// An Engine that is not there is ErrUnreachable, with the cause in one line.
func TestUnreachable(t *testing.T) {
	t.Setenv(EnvHost, "unix:///nonexistent/docker.sock")
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	err = c.Ping(context.Background())
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "no such file or directory") {
		t.Errorf("ping of no Engine: %v", err)
	}
	if _, err := c.ContainerList(context.Background(), true, nil); !errors.Is(err, ErrUnreachable) {
		t.Errorf("list on no Engine: %v", err)
	}
}

// buildImage builds an image FROM scratch holding one file, which is enough to
// create containers (not to start them), and removes it at the end. The file names
// the tag: a build of the same file elsewhere on the Engine (a second test run beside
// this one) would share its cached layer, which that run's clean-up removes under
// this build ("failed to get digest").
func buildImage(t *testing.T, c *Client, tag string) *Image {
	t.Helper()
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	for name, body := range map[string]string{
		"Dockerfile": "FROM scratch\nCOPY hello.txt /hello.txt\nCMD [\"/nothing\"]\n",
		"hello.txt":  "hello from " + tag + "\n",
	} {
		_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		_, _ = tw.Write([]byte(body))
	}
	_ = tw.Close()
	ctx := context.Background()
	body, err := c.ImageBuild(ctx, &ctxTar, BuildOptions{Tags: []string{tag}, Remove: true, ForceRemove: true, Labels: map[string]string{"wick-test": "dockerapi"}})
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(body)
	var out []string
	for sc.Scan() {
		var m struct{ Stream, Error string }
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Error != "" {
			t.Fatalf("build: %s", m.Error)
		}
		out = append(out, sc.Text())
	}
	body.Close()
	img, err := c.ImageInspect(ctx, tag)
	if err != nil {
		t.Fatalf("after the build (%s): %v", strings.Join(out, " "), err)
	}
	t.Cleanup(func() {
		out, err := exec.Command("docker", "rmi", "-f", tag).CombinedOutput()
		if err != nil {
			t.Logf("docker rmi %s: %v %s", tag, err, out)
		}
	})
	return img
}

// The calls wick makes, on the real Engine: build, create, inspect, list by label,
// copy in and out, stat, remove; not found and conflict are typed.
func TestContainerCalls(t *testing.T) {
	c := engine(t)
	ctx := context.Background()
	suffix := spec.RandomID()[:8]
	tag := "wick-dockerapi-test:" + suffix
	img := buildImage(t, c, tag)
	if img.ID == "" || img.Config == nil || img.Config.Labels["wick-test"] != "dockerapi" {
		t.Errorf("image %+v", img)
	}
	name := "wick-dockerapi-" + suffix
	stop := 3
	req := &CreateRequest{
		Config: &Config{Image: tag, Hostname: "h-" + suffix, Env: []string{"A=1"}, Labels: map[string]string{"wick-test": suffix}, StopTimeout: &stop,
			ExposedPorts: map[string]struct{}{"29500/tcp": {}}},
		HostConfig: &HostConfig{RestartPolicy: RestartPolicy{Name: "on-failure", MaximumRetryCount: 2}, Memory: 64 << 20,
			PortBindings: map[string][]PortBinding{"29500/tcp": {{HostIP: "127.0.0.1"}}}},
	}
	res, err := c.ContainerCreate(ctx, name, req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.ContainerRemove(ctx, res.ID, true, true); err != nil {
			t.Error(err)
		}
		if _, err := c.ContainerInspect(ctx, res.ID); !IsNotFound(err) {
			t.Errorf("inspect after remove: %v, want not found", err)
		}
	}()
	if _, err := c.ContainerCreate(ctx, name, req); !IsConflict(err) || !strings.Contains(err.Error(), "already in use") {
		t.Errorf("second create of %s: %v, want a conflict", name, err)
	}
	info, err := c.ContainerInspect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if info.ID != res.ID || info.State == nil || info.State.Status != StateCreated || info.Config.Hostname != "h-"+suffix ||
		*info.Config.StopTimeout != 3 || info.HostConfig.RestartPolicy.MaximumRetryCount != 2 || info.HostConfig.Memory != 64<<20 ||
		info.HostConfig.PortBindings["29500/tcp"][0].HostIP != "127.0.0.1" {
		t.Errorf("inspect: %+v state %+v config %+v host %+v", info, info.State, info.Config, info.HostConfig)
	}
	list, err := c.ContainerList(ctx, true, Filters{}.Add("label", "wick-test="+suffix))
	if err != nil || len(list) != 1 || list[0].ID != res.ID || list[0].Names[0] != "/"+name || list[0].State != StateCreated || list[0].Labels["wick-test"] != suffix {
		t.Errorf("list by label: %+v, %v", list, err)
	}
	if list, err := c.ContainerList(ctx, false, Filters{}.Add("label", "wick-test="+suffix)); err != nil || len(list) != 0 {
		t.Errorf("list of running ones: %+v, %v", list, err)
	}

	// Copy a file in, stat it, copy it out.
	var in bytes.Buffer
	tw := tar.NewWriter(&in)
	mtime := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	_ = tw.WriteHeader(&tar.Header{Name: "marker", Mode: 0o444, Size: 3, ModTime: mtime, Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte("hi\n"))
	_ = tw.Close()
	if err := c.CopyToContainer(ctx, res.ID, "/", &in); err != nil {
		t.Fatal(err)
	}
	st, err := c.ContainerStatPath(ctx, res.ID, "/marker")
	if err != nil || st.Name != "marker" || st.Size != 3 || !st.Mtime.Equal(mtime) {
		t.Errorf("stat: %+v, %v", st, err)
	}
	if _, err := c.ContainerStatPath(ctx, res.ID, "/absent"); !IsNotFound(err) {
		t.Errorf("stat of a missing path: %v, want not found", err)
	}
	rc, st, err := c.CopyFromContainer(ctx, res.ID, "/hello.txt")
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(rc)
	h, err := tr.Next()
	body, _ := io.ReadAll(io.LimitReader(tr, 1<<10))
	rc.Close()
	want := "hello from " + tag + "\n" // what buildImage put there
	if err != nil || h.Name != "hello.txt" || string(body) != want || st.Size != int64(len(want)) {
		t.Errorf("copy out: %+v %q %+v %v", h, body, st, err)
	}
	if _, _, err := c.CopyFromContainer(ctx, res.ID, "/absent"); !IsNotFound(err) {
		t.Errorf("copy of a missing path: %v, want not found", err)
	}

	// Not found, on every kind of object, and a stop of a container never started.
	if err := c.ContainerStop(ctx, res.ID, &stop); err != nil {
		t.Errorf("stop of a created container: %v", err)
	}
	if err := c.ContainerKill(ctx, res.ID, "KILL"); !IsConflict(err) {
		t.Errorf("kill of a container that does not run: %v, want a conflict", err)
	}
	for what, err := range map[string]error{
		"container inspect": func() error { _, err := c.ContainerInspect(ctx, "wick-absent-"+suffix); return err }(),
		"container start":   c.ContainerStart(ctx, "wick-absent-"+suffix),
		"image inspect":     func() error { _, err := c.ImageInspect(ctx, "wick-absent-"+suffix+":x"); return err }(),
		"network inspect":   func() error { _, err := c.NetworkInspect(ctx, "wick-absent-"+suffix); return err }(),
		"network remove":    c.NetworkRemove(ctx, "wick-absent-"+suffix),
	} {
		if !IsNotFound(err) || IsConflict(err) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s of nothing: %v, want not found", what, err)
		}
	}
	if _, err := c.ContainerInspect(ctx, ""); err == nil || IsNotFound(err) {
		t.Errorf("inspect of an empty id: %v", err)
	}
}

func TestNetworkCalls(t *testing.T) {
	c := engine(t)
	ctx := context.Background()
	name := "wick-dockerapi-" + spec.RandomID()[:8]
	res, err := c.NetworkCreate(ctx, NetworkCreate{Name: name, Driver: "bridge", Labels: map[string]string{"wick-test": "dockerapi"}})
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.NetworkInspect(ctx, name)
	if err != nil || n.ID != res.ID || n.Driver != "bridge" || n.Labels["wick-test"] != "dockerapi" || n.Created.IsZero() || len(n.Containers) != 0 {
		t.Errorf("inspect: %+v, %v", n, err)
	}
	list, err := c.NetworkList(ctx, Filters{}.Add("name", name))
	if err != nil || len(list) != 1 || list[0].ID != res.ID || list[0].Name != name {
		t.Errorf("list by name: %+v, %v", list, err)
	}
	if err := c.NetworkRemove(ctx, res.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.NetworkInspect(ctx, name); !IsNotFound(err) {
		t.Errorf("inspect after remove: %v", err)
	}
}

// What is read from the Engine is bounded: an answer past its bound is an error,
// not a large allocation.
func TestDecodeBounded(t *testing.T) {
	var out map[string]string
	if err := decodeJSON(strings.NewReader(`{"a":"`+strings.Repeat("x", 100)+`"}`), &out, 64, "GET", "/x"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the bound: %v", err)
	}
	if err := decodeJSON(strings.NewReader(`{"a":"b"}`), &out, 64, "GET", "/x"); err != nil || out["a"] != "b" {
		t.Errorf("under the bound: %v %v", out, err)
	}
}
