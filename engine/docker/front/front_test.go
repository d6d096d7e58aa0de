package front

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMissingHelperNamedOnce: the error of a wick without its helper names where it
// looked and how to build it; the scheduler's name is the caller's to add (the
// runner does), so it is not in the message twice ("local_docker: local_docker: ...").
func TestMissingHelperNamedOnce(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	self := filepath.Join(t.TempDir(), "wick")
	_, err := findHelper([]string{self})
	if err == nil {
		t.Fatal("found a helper in an empty directory")
	}
	msg := err.Error()
	if strings.Contains(msg, Name+":") {
		t.Errorf("the message names the scheduler itself: %s", msg)
	}
	for _, want := range []string{filepath.Join(filepath.Dir(self), Helper), "make build"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message lacks %q: %s", want, msg)
		}
	}
}
