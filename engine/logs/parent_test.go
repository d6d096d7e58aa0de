package logs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/safefs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestOpenBelowParent: a replica's logs opened from its role's open directory
// (Source.Parent) read as those walked from "/", a replica directory swapped for a
// link is refused alike, and a pending stream, opened while Open runs, opens in the
// same directory.
func TestOpenBelowParent(t *testing.T) {
	role := filepath.Join(t.TempDir(), "sh")
	dir := filepath.Join(role, "0")
	if err := writeRunsLog(dir, 20, 3, func(j int) (int64, bool) { return int64(j) * int64(time.Millisecond), j%4 == 0 }); err != nil {
		t.Fatal(err)
	}
	parent, err := safefs.OpenDir(role)
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	for _, opts := range []sched.LogOptions{{}, {Streams: sched.Stderr}, {Tail: 5}} {
		want := texts(readAll(t, Source{Dir: dir, Role: "sh"}, opts))
		got := texts(readAll(t, Source{Dir: dir, Role: "sh", Parent: parent}, opts))
		if len(want) == 0 {
			t.Fatalf("%+v: no lines", opts)
		}
		eq(t, got, want)
	}
	it, err := Open(Source{Dir: dir, Role: "sh", Parent: parent}, sched.LogOptions{Follow: true, Pending: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(it.pend) != 2 || it.dir != nil {
		t.Errorf("pending streams %d, directory still held %v", len(it.pend), it.dir != nil)
	}
	it.Close()

	if err := os.Rename(dir, dir+".real"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir+".real", dir); err != nil {
		t.Fatal(err)
	}
	for _, src := range []Source{{Dir: dir}, {Dir: dir, Parent: parent}} {
		if it, err := Open(src, sched.LogOptions{}); !errors.Is(err, safefs.ErrUntrusted) {
			if err == nil {
				it.Close()
			}
			t.Errorf("a replica directory that is a link, parent %v: %v, want %v", src.Parent != nil, err, safefs.ErrUntrusted)
		}
	}
	if _, err := Open(Source{Dir: filepath.Join(t.TempDir(), "0"), Parent: parent}, sched.LogOptions{}); err == nil {
		t.Error("a directory outside the parent opened")
	}
}

// BenchmarkOpenMany times opening the iterators of 256 replicas of a role whose log
// directories lie deep (as ~/.wick/logs/SESSION/APP/ROLE/K do), each walked from "/"
// (what `wick log` did) beside each opened from the role's directory, opened once
// (Source.Parent), interleaved; the median of each, and their ratio.
func BenchmarkOpenMany(b *testing.B) {
	const reps = 256
	role := filepath.Join(b.TempDir(), "home", "user", ".wick", "logs", "0123456789abcdef", "app-0123456789", "sh")
	dirs := make([]string, reps)
	for k := range dirs {
		dirs[k] = filepath.Join(role, strconv.Itoa(k))
		if err := writeRunsLog(dirs[k], 50, 1, func(j int) (int64, bool) { return int64(j) * int64(time.Millisecond), false }); err != nil {
			b.Fatal(err)
		}
	}
	open := func(parent bool) time.Duration {
		start := time.Now()
		var p *os.File
		if parent {
			var err error
			if p, err = safefs.OpenDir(role); err != nil {
				b.Fatal(err)
			}
		}
		its := make([]*Iterator, reps)
		for k, d := range dirs {
			it, err := Open(Source{Dir: d, Role: "sh", Replica: k, Parent: p}, sched.LogOptions{})
			if err != nil {
				b.Fatal(err)
			}
			its[k] = it
		}
		if p != nil {
			p.Close()
		}
		for _, it := range its {
			it.Close()
		}
		return time.Since(start)
	}
	var walk, below []time.Duration
	open(false)
	open(true)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			walk = append(walk, open(false))
			below = append(below, open(true))
		} else {
			below = append(below, open(true))
			walk = append(walk, open(false))
		}
	}
	slices.Sort(walk)
	slices.Sort(below)
	w, p := walk[len(walk)/2], below[len(below)/2]
	b.ReportMetric(float64(w.Microseconds())/1000, "walk-ms/op")
	b.ReportMetric(float64(p.Microseconds())/1000, "parent-ms/op")
	b.ReportMetric(float64(p)/float64(w), "parent/walk")
	b.ReportMetric(testkit.Load(), "load")
}
