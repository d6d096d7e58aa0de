package dockerapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Filters select the objects of a list: each key (label, name, network, ...) with
// the values any of which an object must match, as `docker ps --filter` takes them.
type Filters map[string][]string

// Add adds values to key's and returns f.
func (f Filters) Add(key string, values ...string) Filters {
	f[key] = append(f[key], values...)
	return f
}

// encode is the Engine's form of filters: {"label": {"a=b": true}}.
func (f Filters) encode() (string, error) {
	m := make(map[string]map[string]bool, len(f))
	for k, vs := range f {
		m[k] = make(map[string]bool, len(vs))
		for _, v := range vs {
			m[k][v] = true
		}
	}
	b, err := json.Marshal(m)
	return string(b), err
}

// objectPath is path/ID/suffix with an id that is not empty.
func objectPath(kind, prefix, id, suffix string) (string, error) {
	if strings.TrimSpace(id) == "" {
		return "", fmt.Errorf("docker: invalid %s name or ID: value is empty", kind)
	}
	return prefix + id + suffix, nil
}

// ContainerList lists containers, those that have ended too when all is set.
func (c *Client) ContainerList(ctx context.Context, all bool, f Filters) ([]ContainerSummary, error) {
	q := url.Values{}
	if all {
		q.Set("all", "1")
	}
	if len(f) > 0 {
		enc, err := f.encode()
		if err != nil {
			return nil, err
		}
		q.Set("filters", enc)
	}
	var out []ContainerSummary
	err := c.call(ctx, http.MethodGet, "/containers/json", q, nil, &out)
	return out, err
}

// ContainerInspect describes one container.
func (c *Client) ContainerInspect(ctx context.Context, id string) (*Container, error) {
	p, err := objectPath("container", "/containers/", id, "/json")
	if err != nil {
		return nil, err
	}
	var out Container
	if err := c.call(ctx, http.MethodGet, p, nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ContainerCreate creates a container named name (any name when empty).
func (c *Client) ContainerCreate(ctx context.Context, name string, req *CreateRequest) (CreateResponse, error) {
	var out CreateResponse
	if req == nil || req.Config == nil || req.Image == "" {
		return out, errors.New("docker: container create: no image")
	}
	q := url.Values{}
	if name != "" {
		q.Set("name", name)
	}
	err := c.call(ctx, http.MethodPost, "/containers/create", q, req, &out)
	return out, err
}

// containerAction posts to /containers/ID/action.
func (c *Client) containerAction(ctx context.Context, id, action string, q url.Values) error {
	p, err := objectPath("container", "/containers/", id, "/"+action)
	if err != nil {
		return err
	}
	return c.call(ctx, http.MethodPost, p, q, nil, nil)
}

// ContainerStart starts a container. Starting one that runs is not an error.
func (c *Client) ContainerStart(ctx context.Context, id string) error {
	return c.containerAction(ctx, id, "start", nil)
}

// ContainerStop stops a container: its stop signal, then SIGKILL after timeout
// seconds (nil: the container's StopTimeout, else the Engine's 10 s).
func (c *Client) ContainerStop(ctx context.Context, id string, timeout *int) error {
	q := url.Values{}
	if timeout != nil {
		q.Set("t", strconv.Itoa(*timeout))
	}
	return c.containerAction(ctx, id, "stop", q)
}

// ContainerKill sends a signal ("KILL", "TERM", ...) to a running container; a
// container that does not run is a conflict.
func (c *Client) ContainerKill(ctx context.Context, id, signal string) error {
	q := url.Values{}
	if signal != "" {
		q.Set("signal", signal)
	}
	return c.containerAction(ctx, id, "kill", q)
}

// ContainerUnpause resumes a paused container.
func (c *Client) ContainerUnpause(ctx context.Context, id string) error {
	return c.containerAction(ctx, id, "unpause", nil)
}

// ContainerRemove removes a container; force kills it first when it runs, volumes
// removes its anonymous volumes.
func (c *Client) ContainerRemove(ctx context.Context, id string, force, volumes bool) error {
	p, err := objectPath("container", "/containers/", id, "")
	if err != nil {
		return err
	}
	q := url.Values{}
	if force {
		q.Set("force", "1")
	}
	if volumes {
		q.Set("v", "1")
	}
	return c.call(ctx, http.MethodDelete, p, q, nil, nil)
}

// LogsOptions select the messages of a container's log.
type LogsOptions struct {
	ShowStdout, ShowStderr bool
	Timestamps             bool
	Follow                 bool
	Since, Until           string // Unix seconds[.nanoseconds], or "" for no bound
	Tail                   string // the last N messages, or "" for all
}

// ContainerLogs opens a container's log: for a container without a TTY, frames of
// an 8-byte header (the stream, 0 and the size, big-endian) then the message; with
// one, raw text. The caller bounds what it reads of it, and closes it.
func (c *Client) ContainerLogs(ctx context.Context, id string, o LogsOptions) (io.ReadCloser, error) {
	p, err := objectPath("container", "/containers/", id, "/logs")
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	for _, kv := range []struct {
		k  string
		on bool
	}{{"stdout", o.ShowStdout}, {"stderr", o.ShowStderr}, {"timestamps", o.Timestamps}, {"follow", o.Follow}} {
		if kv.on {
			q.Set(kv.k, "1")
		}
	}
	if o.Since != "" {
		q.Set("since", o.Since)
	}
	if o.Until != "" {
		q.Set("until", o.Until)
	}
	if o.Tail != "" {
		q.Set("tail", o.Tail)
	}
	resp, err := c.request(ctx, http.MethodGet, p, q, nil, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// Streams of the log frames (and of an exec's).
const (
	StreamStdin  = 0
	StreamStdout = 1
	StreamStderr = 2
	// StreamSystemErr carries an error of the Engine in the middle of a stream.
	StreamSystemErr = 3
)

// ContainerStats reads one sample of a running container's resource use (one-shot,
// not a stream). A stopped container's sample is empty (a zero Read).
func (c *Client) ContainerStats(ctx context.Context, id string) (*Stats, error) {
	p, err := objectPath("container", "/containers/", id, "/stats")
	if err != nil {
		return nil, err
	}
	q := url.Values{"stream": {"false"}, "one-shot": {"true"}}
	var out Stats
	if err := c.callLimit(ctx, http.MethodGet, p, q, nil, &out, MaxStats); err != nil {
		return nil, err
	}
	return &out, nil
}

// maxPathStat bounds the path stat header.
const maxPathStat = 64 << 10

// pathStat decodes the X-Docker-Container-Path-Stat header.
func pathStat(h http.Header) (PathStat, error) {
	var st PathStat
	enc := h.Get("X-Docker-Container-Path-Stat")
	if len(enc) > maxPathStat {
		return st, fmt.Errorf("docker: path stat: %w", ErrTooLarge)
	}
	b, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return st, fmt.Errorf("docker: path stat: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("docker: path stat: %w", err)
	}
	return st, nil
}

// ContainerStatPath describes a path in a container; a path that does not exist
// is not found.
func (c *Client) ContainerStatPath(ctx context.Context, id, path string) (PathStat, error) {
	p, err := objectPath("container", "/containers/", id, "/archive")
	if err != nil {
		return PathStat{}, err
	}
	resp, err := c.request(ctx, http.MethodHead, p, url.Values{"path": {path}}, nil, nil)
	if err != nil {
		return PathStat{}, err
	}
	defer closeBody(resp)
	return pathStat(resp.Header)
}

// CopyToContainer extracts a tar stream into a container's directory dst.
func (c *Client) CopyToContainer(ctx context.Context, id, dst string, content io.Reader) error {
	p, err := objectPath("container", "/containers/", id, "/archive")
	if err != nil {
		return err
	}
	hdr := http.Header{"Content-Type": {"application/x-tar"}}
	resp, err := c.request(ctx, http.MethodPut, p, url.Values{"path": {dst}}, hdr, content)
	if err != nil {
		return err
	}
	closeBody(resp)
	return nil
}

// CopyFromContainer opens a tar stream of a path in a container, with what the
// Engine says of the path. The caller bounds what it reads, and closes it.
func (c *Client) CopyFromContainer(ctx context.Context, id, src string) (io.ReadCloser, PathStat, error) {
	p, err := objectPath("container", "/containers/", id, "/archive")
	if err != nil {
		return nil, PathStat{}, err
	}
	resp, err := c.request(ctx, http.MethodGet, p, url.Values{"path": {src}}, nil, nil)
	if err != nil {
		return nil, PathStat{}, err
	}
	st, err := pathStat(resp.Header)
	if err != nil {
		closeBody(resp)
		return nil, st, err
	}
	return resp.Body, st, nil
}

// ImageInspect describes an image, by name or id.
func (c *Client) ImageInspect(ctx context.Context, ref string) (*Image, error) {
	p, err := objectPath("image", "/images/", ref, "/json")
	if err != nil {
		return nil, err
	}
	var out Image
	if err := c.call(ctx, http.MethodGet, p, nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// BuildOptions are the options of an image build wick uses.
type BuildOptions struct {
	Tags        []string
	Dockerfile  string             // its path in the context
	BuildArgs   map[string]*string // ARG values
	Labels      map[string]string
	Remove      bool // remove the intermediate containers of a build that succeeds
	ForceRemove bool // and of one that fails
}

// ImageBuild builds an image from a tar stream of its context and returns the
// Engine's output: JSON messages, one a line ({"stream": ...}, {"error": ...}).
// The caller bounds what it reads of it, and closes it.
func (c *Client) ImageBuild(ctx context.Context, buildContext io.Reader, o BuildOptions) (io.ReadCloser, error) {
	q := url.Values{}
	q["t"] = o.Tags
	if o.Dockerfile != "" {
		q.Set("dockerfile", o.Dockerfile)
	}
	if !o.Remove {
		q.Set("rm", "0")
	}
	if o.ForceRemove {
		q.Set("forcerm", "1")
	}
	for k, v := range map[string]any{"buildargs": o.BuildArgs, "labels": o.Labels} {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		q.Set(k, string(b))
	}
	hdr := http.Header{
		"Content-Type": {"application/x-tar"},
		// No registry credentials: local_docker never pulls.
		"X-Registry-Config": {base64.URLEncoding.EncodeToString([]byte("{}"))},
	}
	resp, err := c.request(ctx, http.MethodPost, "/build", q, hdr, buildContext)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// NetworkCreate creates a network.
func (c *Client) NetworkCreate(ctx context.Context, req NetworkCreate) (NetworkCreateResponse, error) {
	var out NetworkCreateResponse
	err := c.call(ctx, http.MethodPost, "/networks/create", nil, req, &out)
	return out, err
}

// NetworkInspect describes a network, by name or id.
func (c *Client) NetworkInspect(ctx context.Context, name string) (*Network, error) {
	p, err := objectPath("network", "/networks/", name, "")
	if err != nil {
		return nil, err
	}
	var out Network
	if err := c.call(ctx, http.MethodGet, p, nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// NetworkList lists networks.
func (c *Client) NetworkList(ctx context.Context, f Filters) ([]Network, error) {
	q := url.Values{}
	if len(f) > 0 {
		enc, err := f.encode()
		if err != nil {
			return nil, err
		}
		q.Set("filters", enc)
	}
	var out []Network
	err := c.call(ctx, http.MethodGet, "/networks", q, nil, &out)
	return out, err
}

// NetworkRemove removes a network, by name or id.
func (c *Client) NetworkRemove(ctx context.Context, name string) error {
	p, err := objectPath("network", "/networks/", name, "")
	if err != nil {
		return err
	}
	return c.call(ctx, http.MethodDelete, p, nil, nil, nil)
}
