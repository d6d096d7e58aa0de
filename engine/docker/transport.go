package docker

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// The bounds of what wick reads of one answer of the Engine. The SDK decodes its JSON
// answers with no bound of its own (a json.Decoder holds the whole value in memory):
// an Engine, or whatever answers at DOCKER_HOST, that sends without end would take
// the process's memory. Streams are not bounded: a container's logs, an archive, a
// build's or a pull's progress are as long as they are.
const (
	// maxListAnswer bounds a listing (containers, images, networks, volumes): an
	// Engine's container listing is about 2 KB a container with wick's labels, so
	// 64 MiB is more than 30,000 containers.
	maxListAnswer = 64 << 20
	// maxObjectAnswer bounds the answer about one thing (an inspect, a create, a
	// wait, one stats sample, the version, the info): tens of kilobytes, more with
	// a very large environment or many labels.
	maxObjectAnswer = 8 << 20
)

// ErrAnswerTooLarge is wrapped by the error of a read past the bound of its answer.
var ErrAnswerTooLarge = errors.New("the Docker Engine's answer is too large")

// boundedTransport wraps each answer's body in a reader that fails past the bound of
// its kind of request (answerBound).
type boundedTransport struct {
	base *http.Transport
	// list and object are the bounds (maxListAnswer and maxObjectAnswer outside
	// tests).
	list, object int64
}

// RoundTrip sends req on the base transport and bounds the answer's body.
func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if n := t.bound(req); n > 0 {
		resp.Body = &boundedBody{rc: resp.Body, left: n, max: n, what: req.Method + " " + apiPath(req.URL.Path)}
	}
	return resp, nil
}

// CloseIdleConnections closes the base transport's idle connections (http.Client's
// CloseIdleConnections reaches it through this).
func (t *boundedTransport) CloseIdleConnections() { t.base.CloseIdleConnections() }

// apiPath is path without the API version prefix (/v1.47/containers/json ->
// /containers/json).
func apiPath(path string) string {
	if v, rest, ok := strings.Cut(strings.TrimPrefix(path, "/"), "/"); ok && strings.HasPrefix(v, "v1.") {
		return "/" + rest
	}
	return path
}

// bound is how many bytes of the answer to req are read: 0 for a stream, the object
// bound for the answer about one thing, else the list bound (the larger one, for
// whatever this table does not know). The routes are the Engine API's
// (moby/moby daemon/server/router/*/ *_routes.go; docs/api/v1.47.yaml).
func (t *boundedTransport) bound(req *http.Request) int64 {
	segs := strings.Split(strings.Trim(apiPath(req.URL.Path), "/"), "/")
	last := segs[len(segs)-1]
	switch segs[0] {
	case "build", "events", "session", "grpc":
		return 0 // progress, events, hijacked sessions
	case "_ping", "info", "version", "auth":
		return t.object
	case "containers":
		switch {
		case len(segs) < 3:
			if last == "json" {
				return t.list
			}
			return t.object // create, prune
		case last == "logs", last == "attach", last == "archive", last == "export":
			return 0
		case last == "stats":
			if s := req.URL.Query().Get("stream"); s == "0" || s == "false" {
				return t.object // one sample
			}
			return 0
		}
		return t.object // inspect, wait, top, changes, update, exec create
	case "images":
		switch {
		case last == "create", last == "load", last == "get", last == "push":
			return 0 // pull/import progress, tarballs, push progress
		case len(segs) == 2 && last == "json", last == "search", last == "history", last == "prune":
			return t.list
		case len(segs) > 2 && last == "json":
			return t.object // inspect (names may hold '/')
		}
	case "exec":
		if last == "start" {
			return 0
		}
		return t.object
	case "plugins":
		if last == "pull" || last == "push" || last == "upgrade" {
			return 0
		}
	case "networks", "volumes":
		if len(segs) == 2 && last != "prune" {
			return t.object // inspect, create
		}
	case "commit", "distribution":
		return t.object
	}
	return t.list
}

// boundedBody is an answer's body that fails once more than max bytes came.
type boundedBody struct {
	rc   io.ReadCloser
	mu   sync.Mutex
	left int64
	max  int64
	what string
}

func (b *boundedBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.left <= 0 {
		// Past the bound: one more byte means the answer is longer.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("%w: %s gave more than %d MiB, where wick stops reading", ErrAnswerTooLarge, b.what, b.max>>20)
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }
