package slurm

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// buildID reads a Go binary's build id, and finds it where selfScript looks for it on
// the node: in the binary's first 32 KiB.
func TestBuildID(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	id, err := buildID(self)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(id, "/") < 1 || len(id) < 20 {
		t.Errorf("build id %q", id)
	}
	f, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 32<<10)
	n, _ := f.Read(head)
	if !bytes.Contains(head[:n], []byte(id)) {
		t.Errorf("build id %q not in the binary's first 32 KiB", id)
	}
	if _, err := buildID("/bin/sh"); err == nil {
		t.Error("a C program has a Go build id")
	}
}

// selfScript runs the caller's build where the node has it at the caller's path, else
// the copy in the node's /tmp if the user owns it, never another build; with neither
// it exits noSelfCode, which RunSelf reads as "sbcast it".
func TestSelfScript(t *testing.T) {
	dir := t.TempDir()
	const id = "AbC/dEf-123/xyz"
	fake := func(name, buildID string) string {
		p := filepath.Join(dir, name)
		src := "#!/bin/sh\n# " + buildID + "\necho " + name + " \"$@\"\n"
		if err := os.WriteFile(p, []byte(src), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(self, tmp string) (string, int) {
		cmd := exec.Command("/bin/sh", "-c", selfScript, "wick-self", self, tmp, id, "__stack-node", "a b")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	same, other, copied := fake("same", id), fake("other", "AbC/dEf-124/xyz"), fake("copied", id)
	missing := filepath.Join(dir, "missing")
	for _, c := range []struct {
		self, tmp, want string
		code            int
	}{
		{same, copied, "same __stack-node a b\n", 0},
		{missing, copied, "copied __stack-node a b\n", 0},
		{other, copied, "copied __stack-node a b\n", 0},
		{other, missing, "no wick of this build at " + other, noSelfCode},
		{missing, other, "no wick of this build at " + missing, noSelfCode},
	} {
		out, code := run(c.self, c.tmp)
		if code != c.code || !strings.HasPrefix(out, c.want) {
			t.Errorf("self %s, tmp %s: exit %d %q, want %d %q", filepath.Base(c.self), filepath.Base(c.tmp), code, out, c.code, c.want)
		}
	}
	if os.Getuid() == 0 {
		// A copy in /tmp someone else owns (planted there) is not run.
		if err := os.Chown(copied, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if out, code := run(missing, copied); code != noSelfCode {
			t.Errorf("another user's copy was run: exit %d %q", code, out)
		}
	}
}

// selfScript keeps a node's copies bounded: the copy it runs is touched, and the
// user's copies of other builds unrun for an hour are removed; a fresh one (another
// wick's, of its build, maybe in use), the one it runs, another user's and other
// files are kept.
func TestSelfScriptRemovesStaleCopies(t *testing.T) {
	dir := t.TempDir()
	const id = "AbC/dEf-123/xyz"
	prefix := filepath.Join(dir, "wick-"+strconv.Itoa(os.Getuid())+"-")
	file := func(p, body string, age time.Duration) string {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n# "+body+"\necho ran\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	copied := file(prefix+"c0ffee", id, 3*time.Hour)
	stale := file(prefix+"0ld0ld", "AbC/dEf-100/xyz", 2*time.Hour)
	fresh := file(prefix+"f7e5f7", "AbC/dEf-124/xyz", 10*time.Minute)
	other := file(filepath.Join(dir, "wick-notes"), "", 2*time.Hour)
	var theirs string
	if os.Getuid() == 0 {
		theirs = file(prefix+"7e1275", "AbC/dEf-101/xyz", 2*time.Hour)
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command("/bin/sh", "-c", selfScript, "wick-self", filepath.Join(dir, "missing"), copied, id, "__stack-node").CombinedOutput()
	if err != nil || string(out) != "ran\n" {
		t.Fatalf("%v %q", err, out)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a stale copy of another build stays: %v", err)
	}
	for _, p := range []string{copied, fresh, other, theirs} {
		if _, err := os.Stat(p); p != "" && err != nil {
			t.Errorf("%s: %v", filepath.Base(p), err)
		}
	}
	if fi, err := os.Stat(copied); err != nil || time.Since(fi.ModTime()) > time.Hour {
		t.Errorf("the copy run was not touched: %v %v", fi.ModTime(), err)
	}
}

// A node without wick of the caller's build is told by srun's exit status; anything
// else is not.
func TestIsNoSelf(t *testing.T) {
	if !isNoSelf(&CommandError{Cmd: "srun", Code: noSelfCode}) || isNoSelf(&CommandError{Cmd: "srun", Code: 1}) || isNoSelf(errors.New("srun: boom")) {
		t.Error("isNoSelf")
	}
}
