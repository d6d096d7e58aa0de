package slurm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestLineFileIsWhatTheLinesPrint checks the raw reading of a replica's file against
// its line-by-line reading (fileIter), whatever the chunk boundaries: the \r before a
// newline is the line's, not its text's, and a last line without a newline ends.
func TestLineFileIsWhatTheLinesPrint(t *testing.T) {
	for _, content := range []string{
		"",
		"one\ntwo\n",
		"one\r\ntwo\r\n",
		"bar\r 50%\rdone\r\n",
		"two crs\r\r\nlast without newline",
		"ends on a cr\r",
		"\r\n\r\n\n",
		strings.Repeat("x\r\n", 50000) + "y",
	} {
		path := filepath.Join(t.TempDir(), "slurm-1-r-0.out")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		it := newFileIter(path, sched.Stdout, "r", 0, sched.LogOptions{}, nil)
		var want strings.Builder
		for {
			l, err := it.Next(t.Context())
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			want.WriteString(l.Text + "\n")
		}
		for _, chunk := range []int{1, 2, 3, readChunk} {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			lf := &lineFile{r: f, c: f, buf: make([]byte, chunk)}
			got, err := io.ReadAll(iotest.OneByteReader(lf))
			lf.Close()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != want.String() {
				t.Errorf("%q in chunks of %d:\n got %q\nwant %q", trunc(content), chunk, trunc(string(got)), trunc(want.String()))
			}
		}
	}
}

func trunc(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// pairJob makes a scheduler over a fresh state dir with a record of job 4242 whose one
// replica (r/0) wrote out to stdout and errs to stderr, with index as its .times file
// (nil: none).
func pairJob(t testing.TB, out, errs string, index *string) *Scheduler {
	t.Helper()
	dir := t.TempDir()
	s, err := New(sched.Config{Session: "test", StateDir: dir, WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, "slurm-4242-r-0")
	files := map[string]string{".out": out, ".err": errs}
	if index != nil {
		files[".times"] = *index
	}
	for ext, content := range files {
		if err := os.WriteFile(base+ext, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rec := &record{JobID: "4242", Session: "test", App: &spec.AppDef{Name: "t", Roles: []spec.Role{spec.NewRole("r", "", "true")}},
		JobDir: dir, Replicas: []Replica{{Role: "r", Stdout: base + ".out", Stderr: base + ".err", ExitFile: base + ".exit"}}}
	if err := s.(*Scheduler).saveRecord(rec); err != nil {
		t.Fatal(err)
	}
	return s.(*Scheduler)
}

// rawIsLines compares the combined stream of replica r/0 of job id as RawLog gives it
// with its lines as Logs gives them one by one, each ended by a newline (what `wick
// log` prints of them after the prefix), byte for byte. It reports whether RawLog gave
// it (false: sched.ErrNoRawLog, the lines are read one by one).
func rawIsLines(t *testing.T, s *Scheduler, id, role string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(30*time.Second))
	defer cancel()
	it, err := s.Logs(ctx, id, role, 0, sched.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, l := range readAll(t, it) {
		want.WriteString(l.Text + "\n")
	}
	it.Close()
	rc, err := s.RawLog(ctx, id, role, 0, sched.Combined)
	if errors.Is(err, sched.ErrNoRawLog) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want.String() {
		g, w := string(got), want.String()
		i := 0
		for i < len(g) && i < len(w) && g[i] == w[i] {
			i++
		}
		t.Errorf("the raw combined stream (%d bytes) is not the lines (%d bytes): from byte %d\n got %q\nwant %q",
			len(g), len(w), i, trunc(g[max(0, i-20):]), trunc(w[max(0, i-20):]))
	}
	return true
}

// TestRawMergedIsTheLines: a replica that wrote to both files is read in runs in the
// order of its lines, byte for byte, or, where runs cannot give that order, not at
// all (sched.ErrNoRawLog: `wick log` reads the lines), never in another order.
func TestRawMergedIsTheLines(t *testing.T) {
	t.Parallel()
	idx := func(s string) *string { return &s }
	future := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
	long := strings.Repeat("x", maxLine)
	for _, c := range []struct {
		name      string
		out, errs string
		index     *string
		fast      bool
	}{
		{"interleaved", "o1\no2\no3\n", "e1\ne2\n", idx("1000 3 0\n2000 6 3\n3000 9 6\n"), true},
		{"a tie goes to stdout", "o1\n", "e1\n", idx("1000 3 3\n"), true},
		{"stderr first", "o1\n", "e1\n", idx("1000 0 3\n2000 3 3\n"), true},
		{"lines split across samples", "a long line\nshort\nanother long one\n", "e1\ne2\n",
			idx("1000 4 1\n2000 14 3\n3000 20 4\n4000 35 6\n5000 35 6\n6000 35 6\n"), true},
		{"a line over several samples", "0123456789\nnext\n", "e\n", idx("1000 2 0\n2000 4 0\n3000 6 2\n4000 16 2\n"), true},
		{"samples past the files' sizes", "o1\no2\n", "e1\n", idx("1000 4 1\n2000 90 90\n"), true},
		{"crlf and bars", "a\r\nb\r\r\nbar 1\rbar 2\r\n\r\n", "w\r\nx\ry\r\n", idx("1000 3 3\n2000 9 3\n3000 29 12\n"), true},
		{"stdout unended", "o1\no2", "e1\ne2\n", idx("1000 3 3\n2000 5 6\n"), true},
		{"stderr unended, with a cr", "o1\n", "e1\nhalf\r", idx("1000 0 3\n2000 3 3\n"), true},
		{"only a line without newline", "unended", "e1\n", idx("1000 0 3\n"), true},
		{"empty lines", "\n\n\n", "\n\n", idx("1000 1 1\n2000 3 2\n"), true},
		{"clock stepped back", "o1\no2\no3\n", "e1\ne2\n", idx("5000 3 0\n1000 6 3\n3000 9 6\n"), true},
		{"garbage in the index", "o1\no2\n", "e1\n", idx("junk\n1000 3 x\n1500 3 1 9\n2000 3 3\n-\n2500 2 2\n3000 6 3\n"), true},
		{"torn last sample", "o1\no2\n", "e1\n", idx("1000 3 3\n2000 6"), true},
		{"no index", "o1\n", "e1\n", nil, false},
		{"empty index", "o1\n", "e1\n", idx(""), false},
		{"index short of stdout", "o1\no2\n", "e1\n", idx("1000 3 3\n"), true},
		{"index short of stderr", "o1\n", "e1\ne2\n", idx("1000 3 3\n"), true},
		{"an index of garbage", "o1\n", "e1\n", idx("x y z\n1 2\n"), false},
		{"an index of stdout alone", "o1\n", "e1\n", idx("1000 3 x\n"), false},
		{"both unended", "o1\nox", "e1\nex", idx("1000 5 5\n"), false},
		{"an index in the future and an unended line", "o1\nox", "e1\n", idx(future + " 5 3\n"), false},
		{"an index in the future", "o1\n", "e1\n", idx(future + " 3 3\n"), true},
		{"a line fileIter cuts", long + "\nend\n", "e1\n", idx("1000 1048581 3\n"), false},
		{"an unended line fileIter cuts", "o1\n" + long, "e1\n", idx("1000 3 3\n"), false},
		{"the longest line kept whole", long[1:] + "\nend\n", "e1\n", idx("1000 2000 0\n2000 1048580 3\n"), true},
		{"a line fileIter cuts, further on", "o1\n" + long + "\n", "e1\n", idx("1000 3 3\n"), false},
		{"the longest line kept whole, further on", "o1\n" + long[1:] + "\n", "e1\n", idx("1000 3 3\n2000 1048579 3\n"), true},
		{"one file", "o1\r\no2", "", nil, true},
		{"one file, a line fileIter cuts", "o1\n" + long + "\n", "", nil, false},
		{"one file, an unended line fileIter cuts", long + "y", "", nil, false},
		{"one file, the longest line kept whole", long[1:] + "\n" + long[1:], "", nil, true},
		{"a line over a window", "o1\n" + long[:maxLine*3/4] + "\n", "e1\n", idx("1000 3 3\n"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if fast := rawIsLines(t, pairJob(t, c.out, c.errs, c.index), "4242", "r"); fast != c.fast {
				t.Errorf("read in runs: %v, want %v", fast, c.fast)
			}
		})
	}
}

// TestRawMergedRandom compares both readings on replicas of random lines (\r's, empty
// lines, an unended last line, runs longer than a read) timed by random indexes
// (samples in the middle of lines, repeated, ties between the files, a clock stepped
// back, malformed lines).
func TestRawMergedRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(23, 5))
	fast := 0
	for n := range 300 {
		big := n%10 == 0
		out, errs := randomLog(rng, big), randomLog(rng, big)
		index := randomIndex(rng, len(out), len(errs))
		ok := true
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			if rawIsLines(t, pairJob(t, out, errs, &index), "4242", "r") {
				fast++
			}
			ok = !t.Failed()
		})
		if !ok {
			t.Logf("out %q\nerr %q\nindex %q", trunc(out), trunc(errs), trunc(index))
			break
		}
	}
	if fast < 200 {
		t.Errorf("only %d of 300 replicas were read in runs", fast)
	}
}

// randomLog is a random log file: lines of 0 to 30 bytes with \r's here and there,
// sometimes an unended last line; big, over 200 KB.
func randomLog(rng *rand.Rand, big bool) string {
	var b strings.Builder
	lines := 1 + rng.IntN(40)
	if big {
		lines = 20000
	}
	for range lines {
		for range rng.IntN(31) {
			switch rng.IntN(20) {
			case 0:
				b.WriteByte('\r')
			default:
				b.WriteByte(byte('a' + rng.IntN(26)))
			}
		}
		switch rng.IntN(8) {
		case 0:
			b.WriteString("\r\n")
		case 1:
			b.WriteString("\r\r\n")
		default:
			b.WriteByte('\n')
		}
	}
	if rng.IntN(4) == 0 {
		b.WriteString("unended")
		if rng.IntN(2) == 0 {
			b.WriteByte('\r')
		}
	}
	return b.String()
}

// randomIndex is a random .times index of files of outSize and errSize bytes whose
// last sample holds both whole, or nearly: sizes growing at random (often in a line), times
// mostly growing, some equal, a few going back; now and then a malformed line.
func randomIndex(rng *rand.Rand, outSize, errSize int) string {
	var b strings.Builder
	ms := int64(1_700_000_000_000)
	o, e := 0, 0
	// Now and then the index stops short (slurmstepd wrote the last output after
	// the last sample): those lines have their file's time.
	short := 0
	if rng.IntN(5) == 0 {
		short = rng.IntN(outSize/2 + 1)
	}
	for o < outSize-short || e < errSize {
		if rng.IntN(2) == 0 {
			o = min(outSize-short, o+rng.IntN(outSize/3+2))
		} else {
			e = min(errSize, e+rng.IntN(errSize/3+2))
		}
		switch rng.IntN(10) {
		case 0: // the same time
		case 1:
			ms -= int64(rng.IntN(500))
		default:
			ms += int64(rng.IntN(400))
		}
		if rng.IntN(15) == 0 {
			b.WriteString("date: bad format\n")
		}
		fmt.Fprintf(&b, "%d %d %d\n", ms, o, e)
	}
	return b.String()
}

// TestClusterRawMerged runs a replica that writes to stdout and stderr in turns, with
// progress bars, lines written in two goes and no newline at its end, and checks that
// `wick log` reads its combined stream in runs (RawLog), byte for byte what the lines
// read one by one give, in time order.
func TestClusterRawMerged(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// The merge orders lines by the wrapper's 200 ms samples of the files' sizes, so two
	// writes between the same two samples share a time. On a busy machine a sample can
	// come late, so each turn waits (at most 10 s) until a sample has seen the stderr
	// writes before it ends its stdout line: the order asked for is then the one the
	// samples promise.
	role := testRole("w", 1, "sh", "-c", `w="${WICK_EXIT_FILE%.exit}"
for i in 1 2 3 4 5 6; do
  seq 1 300 | sed "s/^/out $i /"; echo "err $i" >&2
  printf 'bar 10%%\r bar 50%%\r bar 100%%\r\n' >&2
  printf 'half of a line %s' "$i"
  n=0; while [ "$(tail -n 1 "$w.times" 2>/dev/null | cut -d' ' -f3)" != "$(stat -c %s "$w.err")" ] && [ $n -lt 200 ]; do sleep 0.05; n=$((n+1)); done
  sleep 0.3; echo ' and its end'
done
printf 'no newline at the end'`)
	id := h.submit(&spec.AppDef{Name: "both", Roles: []spec.Role{role}}, nil)
	if st := h.wait(id); st.State != spec.Succeeded {
		t.Fatalf("state %s", st.State)
	}
	if !rawIsLines(t, h.s, id, "w") {
		b, _ := exec.Command("sh", "-c", "cd "+h.work+" && ls -la && cat *.times && tail -c 100 *.out *.err").CombinedOutput()
		t.Fatalf("RawLog: sched.ErrNoRawLog, want the combined stream in runs\n%s", b)
	}
	rc, err := h.s.RawLog(context.Background(), id, "w", 0, sched.Combined)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(got)
	if e1, o6 := strings.Index(text, "err 1\n"), strings.Index(text, "out 6 1\n"); e1 < 0 || o6 < 0 || e1 > o6 {
		t.Errorf("err 1 at %d, out 6 1 at %d: stderr's lines are not in time order among stdout's", e1, o6)
	}
	if !strings.HasSuffix(text, "half of a line 6 and its end\nno newline at the end\n") {
		t.Errorf("the end: %q", text[max(0, len(text)-80):])
	}
}
