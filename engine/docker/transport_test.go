package docker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// The bound of each kind of request wick and the SDK make: streams are never cut.
func TestAnswerBounds(t *testing.T) {
	tr := &boundedTransport{list: maxListAnswer, object: maxObjectAnswer}
	for _, c := range []struct {
		method, url string
		want        int64
	}{
		{"GET", "/v1.47/containers/json?all=1", maxListAnswer},
		{"GET", "/v1.47/images/json", maxListAnswer},
		{"GET", "/v1.47/networks", maxListAnswer},
		{"GET", "/v1.47/volumes", maxListAnswer},
		{"GET", "/v1.47/containers/abc/json", maxObjectAnswer},
		{"GET", "/v1.47/images/ghcr.io/me/train:1.0/json", maxObjectAnswer},
		{"GET", "/v1.47/networks/wick", maxObjectAnswer},
		{"POST", "/v1.47/containers/create?name=x", maxObjectAnswer},
		{"POST", "/v1.47/containers/abc/wait", maxObjectAnswer},
		{"GET", "/v1.47/containers/abc/stats?stream=false&one-shot=true", maxObjectAnswer},
		{"GET", "/_ping", maxObjectAnswer},
		{"GET", "/v1.47/version", maxObjectAnswer},
		{"GET", "/v1.47/containers/abc/logs?follow=1", 0},
		{"POST", "/v1.47/containers/abc/attach", 0},
		{"GET", "/v1.47/containers/abc/archive?path=/x", 0},
		{"GET", "/v1.47/containers/abc/export", 0},
		{"GET", "/v1.47/containers/abc/stats?stream=true", 0},
		{"POST", "/v1.47/build", 0},
		{"POST", "/v1.47/images/create?fromSrc=-", 0},
		{"GET", "/v1.47/images/get?names=x", 0},
		{"POST", "/v1.47/images/load", 0},
		{"POST", "/v1.47/exec/abc/start", 0},
		{"GET", "/v1.47/events", 0},
		{"GET", "/v1.47/some/new/route", maxListAnswer},
	} {
		req, err := http.NewRequest(c.method, "http://docker"+c.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := tr.bound(req); got != c.want {
			t.Errorf("%s %s: bound %d, want %d", c.method, c.url, got, c.want)
		}
	}
}

// An Engine's answer past its bound is one line naming the request, against the real
// Engine behind a proxy that inflates its answers; a container's log, a stream, is
// read whole however long. The bounds are 1 MiB here (the test reads 2.3 MB of log
// and sends 2 MiB of inflation, not 64).
func TestEngineAnswersAreBounded(t *testing.T) {
	needEngine(t)
	p := newRecordingProxy(t)
	s := newScheduler(t)
	ep := endpoint{Host: "unix://" + p.sock, From: "the test's proxy"}
	cli, tr, err := newClientBounded(ep, 1<<20, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	s.cli, s.tr, s.ep = cli, tr, ep

	const lines = 40000 // 58-61 bytes each: 2.4 MB
	appID := launch(t, s, &spec.AppDef{Name: "flood", Roles: []spec.Role{role("flood", 1, "flood", fmt.Sprint(lines))}}, nil)
	waitTerminal(t, s, appID)
	got := readLogs(t, s, appID, "flood", 0, sched.LogOptions{})
	if len(got) != lines || got[len(got)-1].Text != fmt.Sprintf("line %d of the flood, padded to look like a real log line", lines-1) {
		t.Fatalf("the log through a 1 MiB bound: %d lines, want %d whole", len(got), lines)
	}

	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(60*time.Second))
	defer cancel()
	p.setInflate(func(method, path string) int64 {
		if method == "GET" && path == "/containers/json" {
			return 2 << 20
		}
		return 0
	})
	_, err = s.List(ctx)
	if !errors.Is(err, ErrAnswerTooLarge) || !strings.Contains(err.Error(), "GET /containers/json gave more than 1 MiB") || strings.Contains(err.Error(), "\n") {
		t.Errorf("list of an inflated listing: %v", err)
	}
	p.setInflate(func(method, path string) int64 {
		if method == "GET" && strings.HasPrefix(path, "/containers/") && strings.HasSuffix(path, "/json") && path != "/containers/json" {
			return 2 << 20
		}
		return 0
	})
	_, err = s.Describe(ctx, appID)
	if !errors.Is(err, ErrAnswerTooLarge) || !strings.Contains(err.Error(), "/json gave more than 1 MiB") {
		t.Errorf("describe of an inflated inspect: %v", err)
	}
	// Under the bound, inflated answers are still read.
	p.setInflate(func(method, path string) int64 { return 512 << 10 })
	if _, err := s.Describe(ctx, appID); err != nil {
		t.Errorf("describe with 512 KiB of inflation: %v", err)
	}
	p.setInflate(nil)
}
