package tui_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestManyReplicasAskFirst: the form accepted any replica count and launched it at
// once; above 64 the UI asks, and a refusal launches nothing. A million is refused by
// the dry run itself, in one line, without planning.
func TestManyReplicasAskFirst(t *testing.T) {
	e := newEnv(t)
	d := newDriver(t, e.opts, 120, 32)
	openForm(d, "utils.echo")
	d.focus("num_replicas", "tab")
	d.keys("ctrl+u")
	d.typ("100")
	d.keys("enter")
	d.contains("=== APPLICATION ===", "num_replicas: 100")
	d.keys("enter")
	d.contains("launch 100 replicas?")
	d.keys("n")
	d.lacks("launch 100 replicas?", "launched local_cwd")
	d.contains("=== APPLICATION ===")

	d.keys("esc")
	d.contains("Arguments")
	d.focus("num_replicas", "tab")
	d.keys("ctrl+u")
	d.typ("1000000")
	d.keys("enter")
	d.contains("at most 4096 replicas")
	d.lacks("=== APPLICATION ===")
}

// TestCorruptAppInTheList: an app whose state is garbage vanished from the UI with no
// word; it is a row saying why, and D deletes it.
func TestCorruptAppInTheList(t *testing.T) {
	e := newEnv(t)
	h := e.launch(shApp("broken", "echo hi", 1))
	e.wait(h)
	id := h[strings.LastIndexByte(h, '/')+1:]
	if err := os.WriteFile(filepath.Join(e.root, "state", "local", "apps", id, "state.json"), []byte("{garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := newDriver(t, e.opts, 160, 20)
	d.contains(h, "UNKNOWN (corrupt state: state.json:", "1 app ")
	d.lacks("running")
}
