package tui_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/tui"
)

// TestRunQuitsAndSaysAppsKeepRunning runs the real program on pipes: q quits, and the
// note about running apps goes to Messages.
func TestRunQuitsAndSaysAppsKeepRunning(t *testing.T) {
	e := newEnv(t)
	seed(e)
	opts := e.opts
	in, feed := io.Pipe()
	var out, msgs bytes.Buffer
	opts.Input, opts.Output, opts.Messages = in, &out, &msgs
	opts.TickInterval = 0
	done := make(chan error, 1)
	go func() { done <- tui.Run(context.Background(), opts) }()
	// Give the first listing time to arrive, so that the note can count the apps.
	time.Sleep(300 * time.Millisecond)
	if _, err := feed.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after q")
	}
	feed.Close()
	if !strings.Contains(msgs.String(), "2 apps are still running and keep running") {
		t.Fatalf("messages = %q", msgs.String())
	}
}

func TestRunCancelledContext(t *testing.T) {
	opts := newEnv(t).opts
	in, feed := io.Pipe()
	defer feed.Close()
	opts.Input, opts.Output = in, io.Discard
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tui.Run(ctx, opts) }()
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
	}
}
