package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestStatusOfAnAppWhoseStateCouldNotBeWritten: when the app's state directory turns
// unwritable before the app ends, `wick status` says the supervisor could not write
// the state, why, and how the app ended, rather than "supervisor died".
func TestStatusOfAnAppWhoseStateCouldNotBeWritten(t *testing.T) {
	h := newHarness(t)
	gate := filepath.Join(t.TempDir(), "go")
	r := h.exec("run", "--detach", "utils.sh", "--", "sh", "-c",
		`i=0; while [ ! -e "$0" ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i+1)); done`, gate)
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	h.waitState(handle, spec.Running)
	id, err := spec.ParseHandle(handle)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(h.home, "local", "apps", id.AppID)
	why := "permission denied"
	if os.Geteuid() == 0 {
		// Mode bits do not stop root: a read-only bind mount of the directory.
		err := unix.Mount(dir, dir, "", unix.MS_BIND, "")
		if err == nil {
			t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
			err = unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, "")
		}
		if err != nil {
			h.exec("cancel", handle)
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI must be able to bind-mount a directory read-only: %v", err)
			}
			t.Skipf("needs a read-only bind mount: %v", err)
		}
		why = "read-only file system"
	} else {
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var st spec.AppStatus
	for deadline := time.Now().Add(testkit.Scale(30 * time.Second)); ; time.Sleep(20 * time.Millisecond) {
		if st = h.status(handle); st.State.Terminal() || time.Now().After(deadline) {
			break
		}
	}
	text := h.exec("status", handle)
	want := "supervisor could not write its state: " + why + " (the app had ended SUCCEEDED; exit codes: sh/0 0)"
	if st.State != spec.Failed || text.code != 0 ||
		!regexp.MustCompile(`(?m)^state: +FAILED$`).MatchString(text.stdout) ||
		!regexp.MustCompile(`(?m)^error: +`+regexp.QuoteMeta(want)+`$`).MatchString(text.stdout) ||
		!regexp.MustCompile(`(?m)^sh/0 +SUCCEEDED +0 `).MatchString(text.stdout) {
		t.Errorf("wick status (exit %d):\n%s%s\nwant FAILED, error %q, sh/0 SUCCEEDED 0", text.code, text.stdout, text.stderr, want)
	}
}
