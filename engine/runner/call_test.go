package runner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/wick-dev/wick/components"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// TestComponentCallRecorded: a planned component call names the component (a user
// file by its absolute path) and keeps the arguments; recorded at launch, it reads
// back (0600) until forgotten; a handle that is not made of names is refused.
func TestComponentCallRecorded(t *testing.T) {
	r := newRunner(t)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "comps.yaml"), []byte(`
hello:
  params:
    - {name: who, default: world}
  app:
    name: hello
    roles:
      - name: hello
        image: img
        entrypoint: echo
        args: ["${{ who }}"]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--who", "you"}
	info, err := r.DryRunComponent(context.Background(), "comps.yaml:hello", args, "local_cwd", nil, "",
		components.Lookup{Find: components.FindOptions{WorkDir: work}})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(work, "comps.yaml") + ":hello"
	if info.Call == nil || info.Call.Component != want || !slices.Equal(info.Call.Args, args) {
		t.Fatalf("call: %+v, want %s %q", info.Call, want, args)
	}

	r.recordCall(info)
	h := info.Handle()
	got, err := r.Call(h)
	if err != nil || got == nil || got.Component != want || !slices.Equal(got.Args, args) {
		t.Fatalf("recorded call: %+v, %v", got, err)
	}
	dir, name, _ := r.callPath(h)
	if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the record: %v %v", fi, err)
	}
	r.forgetCall(h)
	if got, err := r.Call(h); got != nil || err != nil {
		t.Fatalf("after forgetting: %+v, %v", got, err)
	}
	if _, err := r.Call(spec.Handle{Scheduler: "local_cwd", Session: "wick", AppID: "../x"}); err == nil {
		t.Fatal("a handle with a path in it was accepted")
	}
	r.recordCall(&sched.DryRunInfo{Scheduler: "local_cwd", Submission: sched.Submission{AppID: "../../x", Session: "wick"}, Call: info.Call})
	if _, err := os.Stat(filepath.Join(r.cfg.StateDir, "calls", "x.json")); err == nil {
		t.Fatal("a record was written outside the calls folder")
	}
}
