package tui_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
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
	var msgs bytes.Buffer
	screen := newScreen("5 apps")
	opts.Input, opts.Output, opts.Messages = in, screen, &msgs
	opts.Width, opts.Height = 120, 30
	opts.TickInterval = 0
	done := make(chan error, 1)
	go func() { done <- tui.Run(context.Background(), opts) }()
	// The note counts the apps of the first listing: quit once it is drawn.
	screen.wait(t)
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
	screen := newScreen("No apps yet")
	opts.Input, opts.Output = in, screen
	opts.Width, opts.Height = 120, 30
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tui.Run(ctx, opts) }()
	screen.wait(t) // cancel a running program, not one still starting
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

// screen is a program's output that says when a text first appears in it.
type screen struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
}

func newScreen(want string) *screen { return &screen{want: want, seen: make(chan struct{})} }

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	if s.want != "" && strings.Contains(s.buf.String(), s.want) {
		s.want = ""
		close(s.seen)
	}
	return len(p), nil
}

// screenTimeout bounds the wait for the first frames: the app list draws within a
// second even on a loaded machine.
const screenTimeout = 20 * time.Second

// wait returns once the text was drawn, failing the test after screenTimeout.
func (s *screen) wait(t *testing.T) {
	t.Helper()
	select {
	case <-s.seen:
	case <-time.After(screenTimeout):
		s.mu.Lock()
		defer s.mu.Unlock()
		t.Fatalf("%q not drawn within %s; the output:\n%q", s.want, screenTimeout, s.buf.String())
	}
}
