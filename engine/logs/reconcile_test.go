package logs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/sched"
)

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// After a writer dies mid-write (kill -9 of its supervisor), MarkEnd brings
// combined.log and the index in line with the stream files: bytes combined.log got
// without a record are cut, bytes of a stream file no record covers are added, and a
// torn last line is one partial line. Every way of reading then agrees.
func TestMarkEndReconcilesATornWriter(t *testing.T) {
	r := newReplicaLogs(t, nil)
	r.write(sched.Stdout, "out 1\n")
	r.write(sched.Stderr, "err 1\n")
	r.stop()
	if err := r.w.Close(); err != nil { // no end mark: as if it had died
		t.Fatal(err)
	}
	// What the dead writer left: read and written to the stream files, but not (or
	// half) copied to combined.log and the index.
	appendFile(t, filepath.Join(r.dir, StdoutFile), "out 2\nout 3\ntorn")
	appendFile(t, filepath.Join(r.dir, StderrFile), "err 2\n")
	appendFile(t, filepath.Join(r.dir, CombinedFile), "out 2\nou")
	appendFile(t, filepath.Join(r.dir, IndexFile), "half a record")
	if err := MarkEnd(r.dir); err != nil {
		t.Fatal(err)
	}
	comb := readFile(t, filepath.Join(r.dir, CombinedFile))
	if comb != "out 1\nerr 1\nout 2\nout 3\ntorn\nerr 2\n" {
		t.Errorf("combined.log %q", comb)
	}
	all := readAll(t, Source{Dir: r.dir}, sched.LogOptions{})
	eq(t, plain(all), strings.Split(strings.TrimSuffix(comb, "\n"), "\n"))
	for _, l := range all {
		if l.Partial != (l.Text == "torn") {
			t.Errorf("%q partial %v", l.Text, l.Partial)
		}
	}
	out := readAll(t, Source{Dir: r.dir}, sched.LogOptions{Streams: sched.Stdout})
	eq(t, plain(out), []string{"out 1", "out 2", "out 3", "torn"})
	errs := readAll(t, Source{Dir: r.dir}, sched.LogOptions{Streams: sched.Stderr})
	eq(t, plain(errs), []string{"err 1", "err 2"})
	tail := readAll(t, Source{Dir: r.dir}, sched.LogOptions{Tail: 2})
	eq(t, plain(tail), []string{"torn", "err 2"})
	// Once is enough: a second MarkEnd changes nothing.
	if err := MarkEnd(r.dir); err != nil {
		t.Fatal(err)
	}
	if again := readFile(t, filepath.Join(r.dir, CombinedFile)); again != comb {
		t.Errorf("second MarkEnd: %q", again)
	}
}
