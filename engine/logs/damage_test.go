package logs

import (
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/sched"
)

// Offsets of a record's fields (see record.encode).
const (
	fieldCombOff = 8
	fieldLength  = 24
	fieldLines   = 32
)

// fourRuns writes the lines a1 (stdout), b1 (stderr), a2 (stdout), b2 (stderr), one
// run each, and ends the logs: the index holds records 1-4 and the end mark.
func fourRuns(t *testing.T) string {
	t.Helper()
	r := newReplicaLogs(t, nil)
	r.write(sched.Stdout, "a1\n")
	r.write(sched.Stderr, "b1\n")
	r.write(sched.Stdout, "a2\n")
	r.write(sched.Stderr, "b2\n")
	r.stop()
	if err := r.w.End(); err != nil {
		t.Fatal(err)
	}
	if n := fileSize(t, filepath.Join(r.dir, IndexFile)); n != 6*recordSize {
		t.Fatalf("index of %d bytes, want a header, 4 runs and the end mark", n)
	}
	return r.dir
}

// spoil writes v over one 8-byte field of record rec (counted from 1), as a replica
// writing into its own log directory can.
func spoil(t *testing.T, dir string, rec, field int, v int64) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, IndexFile), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v))
	if _, err := f.WriteAt(b[:], int64(rec*recordSize+field)); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedIndexFallsBackToStoredBytes: a record that cannot be one the writer
// wrote (a 1 TiB length, a negative one, impossible line counts, bytes past the end of
// combined.log) is reported once and every view reads the stored bytes instead: the
// same lines, nothing allocated on the record's word.
func TestDamagedIndexFallsBackToStoredBytes(t *testing.T) {
	for _, c := range []struct {
		name  string
		field int
		v     int64
	}{
		{"length of 1 TiB", fieldLength, 1 << 40},
		{"negative length", fieldLength, -3},
		{"negative line count", fieldLines, -1},
		{"absurd line count", fieldLines, 1 << 62},
		{"offset past the end", fieldCombOff, 1 << 30},
		{"overlapping offset", fieldCombOff, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := fourRuns(t)
			spoil(t, dir, 2, c.field, c.v)
			for _, v := range []struct {
				name string
				opts sched.LogOptions
				want []string
				file string
			}{
				// Record 1 is sound: a1 keeps its stream; the rest comes from the file.
				{"all", sched.LogOptions{}, []string{"stdout:a1", "combined:b1", "combined:a2", "combined:b2"}, CombinedFile},
				{"follow", sched.LogOptions{Follow: true}, []string{"stdout:a1", "combined:b1", "combined:a2", "combined:b2"}, CombinedFile},
				{"tail", sched.LogOptions{Tail: 2}, []string{"combined:a2", "combined:b2"}, CombinedFile},
				// Whether the bisection meets the bad record first decides whether a1 still
				// comes from the index: the texts are the same.
				{"since", sched.LogOptions{Since: time.Unix(1, 0)}, []string{"a1", "b1", "a2", "b2"}, CombinedFile},
				{"regex", sched.LogOptions{Regex: regexp.MustCompile("2")}, []string{"combined:a2", "combined:b2"}, CombinedFile},
				{"stdout", sched.LogOptions{Streams: sched.Stdout}, []string{"stdout:a1", "stdout:a2"}, StdoutFile},
			} {
				var warns []string
				src := Source{Dir: dir, Role: "w", Replica: 3, Warn: func(m string) { warns = append(warns, m) }}
				got := readAll(t, src, v.opts)
				out := make([]string, len(got))
				for i, l := range got {
					out[i] = string(l.Stream) + ":" + l.Text
					if v.name == "since" {
						out[i] = l.Text
					}
				}
				if strings.Join(out, " ") != strings.Join(v.want, " ") {
					t.Errorf("%s: got %q, want %q", v.name, out, v.want)
				}
				// Reading in order finds record 2 unsound; a view that starts from the end
				// may find record 3 at odds with it first.
				if len(warns) != 1 || !strings.Contains(warns[0], "logs of w/3: ") || !strings.HasSuffix(warns[0], "; reading "+v.file+" instead") ||
					!strings.Contains(warns[0], "index damaged at record 2") && (v.opts.Tail == 0 || !strings.Contains(warns[0], "index damaged at record 3")) {
					t.Errorf("%s: warnings %q, want one saying record 2 is damaged and %s is read", v.name, warns, v.file)
				}
			}
		})
	}
}

// TestRecordAfterEndMarkIsDamage: records past the end mark are not the writer's.
func TestRecordAfterEndMarkIsDamage(t *testing.T) {
	dir := fourRuns(t)
	f, err := os.OpenFile(filepath.Join(dir, IndexFile), os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b [recordSize]byte
	(&record{time: time.Now().UnixNano(), combOff: 11, length: 1, lines: 1, stream: codeStdout}).encode(&b)
	f.Write(b[:])
	f.Close()
	var warns []string
	got := readAll(t, Source{Dir: dir, Warn: func(m string) { warns = append(warns, m) }}, sched.LogOptions{})
	if len(got) != 4 || len(warns) != 1 || !strings.Contains(warns[0], "record 6 (a record after the end mark)") {
		t.Fatalf("%d lines, warnings %q", len(got), warns)
	}
}

// TestLongLineComesCutWithBoundedMemory: a 64 MB line is yielded as its first MaxLine
// bytes with its full size, and its Full reader gives it byte for byte; reading it
// allocates a few windows, not the line.
func TestLongLineComesCutWithBoundedMemory(t *testing.T) {
	r := newReplicaLogs(t, nil)
	long := strings.Repeat("0123456789abcdef", 4<<20) // 64 MB
	r.write(sched.Stdout, "before\n")
	r.write(sched.Stdout, long+"\n")
	r.write(sched.Stdout, "after\n")
	r.stop()
	r.w.End()

	for _, opts := range []sched.LogOptions{{}, {Tail: 2}, {Regex: regexp.MustCompile("^0123|after")}} {
		it, err := Open(Source{Dir: r.dir}, opts)
		if err != nil {
			t.Fatal(err)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		var got []sched.Line
		for {
			l, err := it.Next(t.Context())
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, l)
		}
		runtime.ReadMemStats(&ms)
		if alloc := ms.TotalAlloc - before; alloc > 8<<20 {
			t.Errorf("%+v: reading a 64 MB line allocated %d MB", opts, alloc>>20)
		}
		if len(got) == 0 || got[len(got)-1].Text != "after" || len(got) > 3 {
			t.Fatalf("%+v: %d lines", opts, len(got))
		}
		l := got[len(got)-2]
		if !l.Cut || l.Size != int64(len(long)) || l.Text != long[:MaxLine] || l.Full == nil {
			t.Fatalf("%+v: the long line: cut %v, size %d, %d bytes of text", opts, l.Cut, l.Size, len(l.Text))
		}
		b, err := io.ReadAll(l.Full)
		if err != nil || string(b) != long {
			t.Fatalf("%+v: Full gave %d bytes (%v)", opts, len(b), err)
		}
		it.Close()
	}
}
