package wall_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestLayoutFileIsARegularFile: the wall's saved layout of an app that is a FIFO, or a
// link to /dev/zero, is ignored (the wall opens with its defaults and shows the logs)
// instead of hanging the UI or filling its memory.
func TestLayoutFileIsARegularFile(t *testing.T) {
	for _, plant := range []struct {
		name string
		make func(path string) error
	}{
		{"FIFO", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
		{"/dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }},
	} {
		t.Run(plant.name, func(t *testing.T) {
			e := newEnv(t)
			h := e.run(shApp("layout", 1, "echo layout-line-1"))
			e.wait(h)
			path := filepath.Join(e.home, "ui", "wall", h.Scheduler+"_"+h.Session+"_"+h.AppID+".json")
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := plant.make(path); err != nil {
				t.Fatal(err)
			}
			opened := make(chan *driver, 1)
			go func() { opened <- e.open(h, 100, 20, nil) }()
			select {
			case d := <-opened:
				d.waitFor("layout-line-1")
			case <-time.After(20 * time.Second):
				t.Fatalf("the wall is still opening after 20 s with a %s layout file", plant.name)
			}
		})
	}
}
