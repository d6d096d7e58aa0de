package docker

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/wick-dev/wick/engine/gpus"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// These tests need no Engine: they feed the log parser the Engine's wire format.

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)

// frame writes one multiplexed frame: "TIMESTAMP TEXT" on a stream.
func frame(buf *bytes.Buffer, st stdcopy.StdType, at time.Duration, text string) {
	payload := t0.Add(at).Format("2006-01-02T15:04:05.000000000Z07:00") + " " + text
	var hdr [8]byte
	hdr[0] = byte(st)
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(payload)))
	buf.Write(hdr[:])
	buf.WriteString(payload)
}

// parseAll runs the parser over a stream and returns the lines it yields.
func parseAll(t *testing.T, body io.Reader, opts sched.LogOptions, tty bool) ([]sched.Line, error) {
	t.Helper()
	ctx := context.Background()
	q := newLineQueue()
	r := &logReader{role: "r", replica: 1, opts: opts, q: q, tty: tty}
	if opts.Tail > 0 {
		r.ring = newTailRing(opts.Tail)
	}
	err := r.parse(ctx, body)
	if err == nil {
		err = r.flush(ctx)
	}
	var tail []sched.Line
	if r.ring != nil {
		tail = r.ring.all()
	}
	for _, l := range tail {
		if err := q.put(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	q.end(io.EOF)
	return drain(t, q), err
}

// drain takes every line of a queue that has ended.
func drain(t *testing.T, q *lineQueue) []sched.Line {
	t.Helper()
	var lines []sched.Line
	for {
		batch, err := q.take(context.Background(), nil)
		if err == io.EOF {
			return lines
		}
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, batch...)
	}
}

func TestParseLogStream(t *testing.T) {
	var buf bytes.Buffer
	frame(&buf, stdcopy.Stdout, 0, "one\n")
	frame(&buf, stdcopy.Stderr, time.Millisecond, "warn\n")
	// Docker splits a long line into 16 KiB messages, each with its own timestamp.
	frame(&buf, stdcopy.Stdout, 2*time.Millisecond, strings.Repeat("a", 16384))
	frame(&buf, stdcopy.Stderr, 3*time.Millisecond, "between\n")
	frame(&buf, stdcopy.Stdout, 4*time.Millisecond, strings.Repeat("b", 100)+"\n")
	frame(&buf, stdcopy.Stdout, 5*time.Millisecond, "  spaced\twhite  \r\n")
	frame(&buf, stdcopy.Stdout, 6*time.Millisecond, "\n")
	frame(&buf, stdcopy.Stderr, 7*time.Millisecond, "no newline at the end")
	lines, err := parseAll(t, &buf, sched.LogOptions{}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []sched.Line{
		{Time: t0, Stream: sched.Stdout, Text: "one"},
		{Time: t0.Add(time.Millisecond), Stream: sched.Stderr, Text: "warn"},
		// A line's time is its first fragment's: lines come in time order.
		{Time: t0.Add(2 * time.Millisecond), Stream: sched.Stdout, Text: strings.Repeat("a", 16384) + strings.Repeat("b", 100)},
		{Time: t0.Add(3 * time.Millisecond), Stream: sched.Stderr, Text: "between"},
		{Time: t0.Add(5 * time.Millisecond), Stream: sched.Stdout, Text: "  spaced\twhite  \r"},
		{Time: t0.Add(6 * time.Millisecond), Stream: sched.Stdout, Text: ""},
		{Time: t0.Add(7 * time.Millisecond), Stream: sched.Stderr, Text: "no newline at the end", Partial: true},
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d: %q", len(lines), len(want), texts(lines))
	}
	for i, w := range want {
		w.Role, w.Replica = "r", 1
		if lines[i] != w {
			t.Errorf("line %d: got %+v, want %+v", i, short(lines[i]), short(w))
		}
	}
}

func short(l sched.Line) sched.Line {
	if len(l.Text) > 40 {
		l.Text = l.Text[:20] + "..." + l.Text[len(l.Text)-20:]
	}
	return l
}

func TestParseLogFilters(t *testing.T) {
	var buf bytes.Buffer
	for i := range 10 {
		st := stdcopy.Stdout
		if i%2 == 1 {
			st = stdcopy.Stderr
		}
		frame(&buf, st, time.Duration(i)*time.Second, "line "+string(rune('0'+i))+"\n")
	}
	data := buf.Bytes()
	for _, c := range []struct {
		name string
		opts sched.LogOptions
		want []string
	}{
		{"all", sched.LogOptions{}, []string{"line 0", "line 1", "line 2", "line 3", "line 4", "line 5", "line 6", "line 7", "line 8", "line 9"}},
		{"stderr", sched.LogOptions{Streams: sched.Stderr}, []string{"line 1", "line 3", "line 5", "line 7", "line 9"}},
		{"since inclusive, until exclusive", sched.LogOptions{Since: t0.Add(2 * time.Second), Until: t0.Add(5 * time.Second)}, []string{"line 2", "line 3", "line 4"}},
		{"regex", sched.LogOptions{Regex: regexp.MustCompile(`[37]$`)}, []string{"line 3", "line 7"}},
		{"tail after filters", sched.LogOptions{Tail: 2, Streams: sched.Stdout}, []string{"line 6", "line 8"}},
		{"tail of 3 after a regex", sched.LogOptions{Tail: 3, Regex: regexp.MustCompile(`[^4]$`)}, []string{"line 7", "line 8", "line 9"}},
		{"tail longer than the log", sched.LogOptions{Tail: 20, Streams: sched.Stderr}, []string{"line 1", "line 3", "line 5", "line 7", "line 9"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			lines, err := parseAll(t, bytes.NewReader(data), c.opts, false)
			if err != nil {
				t.Fatal(err)
			}
			if got := texts(lines); !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestParseLogResume(t *testing.T) {
	// Two lines share a timestamp; a follower that resumes after the first must not
	// repeat it, nor drop the second.
	var first, again bytes.Buffer
	frame(&first, stdcopy.Stdout, 0, "a\n")
	frame(&first, stdcopy.Stdout, time.Second, "b\n")
	frame(&again, stdcopy.Stdout, time.Second, "b\n")
	frame(&again, stdcopy.Stdout, time.Second, "c\n")
	frame(&again, stdcopy.Stdout, 2*time.Second, "d\n")
	if got := texts(resumed(t, sched.LogOptions{}, &first, &again)); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("got %q", got)
	}
}

// resumed reads first, then again as a read resumed after it, and returns the lines.
func resumed(t *testing.T, opts sched.LogOptions, first, again io.Reader) []sched.Line {
	t.Helper()
	ctx := context.Background()
	q := newLineQueue()
	r := &logReader{role: "r", q: q, opts: opts, live: opts.Follow && opts.Pending}
	if err := r.parse(ctx, first); err != nil {
		t.Fatal(err)
	}
	var req client.ContainerLogsOptions
	r.resume(&req)
	if want := engineTime(r.at.Add(-resumeSlack)); r.seen > 0 && req.Since != want {
		t.Errorf("resumed since %s, want %s (a little before the cursor)", req.Since, want)
	}
	if err := r.parse(ctx, again); err != nil {
		t.Fatal(err)
	}
	if err := r.flush(ctx); err != nil {
		t.Fatal(err)
	}
	q.end(io.EOF)
	return drain(t, q)
}

// Issue 15 item 2: a run that ended without a newline does not swallow the first line
// of the next run when a follower resumes; item 4: nor does a plain read glue them.
func TestParseLogRunBoundary(t *testing.T) {
	var first, again bytes.Buffer
	frame(&first, stdcopy.Stdout, 0, "run 1\n")
	frame(&first, stdcopy.Stdout, time.Millisecond, "end 1")
	// The follower's stream ends here; Docker restarts the container.
	frame(&again, stdcopy.Stdout, 0, "run 1\n")
	frame(&again, stdcopy.Stdout, time.Millisecond, "end 1")
	frame(&again, stdcopy.Stdout, time.Second, "run 2\n")
	frame(&again, stdcopy.Stdout, time.Second+time.Millisecond, "end 2")
	want := []string{"run 1", "end 1", "run 2", "end 2"}
	lines := resumed(t, sched.LogOptions{Follow: true}, bytes.NewReader(first.Bytes()), bytes.NewReader(again.Bytes()))
	if got := texts(lines); !slices.Equal(got, want) {
		t.Fatalf("follow: got %q, want %q", got, want)
	}
	if !lines[1].Partial || !lines[3].Partial || lines[0].Partial || lines[2].Partial {
		t.Errorf("partial flags: %+v", lines)
	}
	plain, err := parseAll(t, bytes.NewReader(again.Bytes()), sched.LogOptions{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(plain); !slices.Equal(got, want) {
		t.Errorf("plain read: got %q, want %q", got, want)
	}
}

// Issue 15 item 8: the wall clock steps back. Lines of one stream keep their order,
// and a resumed read drops none of the lines stamped before the cursor's latest time.
func TestParseLogClockStep(t *testing.T) {
	var first, again bytes.Buffer
	msgs := []struct {
		st   stdcopy.StdType
		at   time.Duration
		text string
	}{
		{stdcopy.Stdout, 10 * time.Second, "out a"},
		{stdcopy.Stdout, 11 * time.Second, "out b"},
		{stdcopy.Stdout, 5 * time.Second, "out c"}, // the clock stepped back 6 s
		{stdcopy.Stderr, 5500 * time.Millisecond, "err e"},
	}
	for _, m := range msgs {
		frame(&first, m.st, m.at, m.text+"\n")
		frame(&again, m.st, m.at, m.text+"\n")
	}
	frame(&again, stdcopy.Stdout, 6*time.Second, "out d\n")
	lines := resumed(t, sched.LogOptions{Follow: true}, &first, &again)
	var out []string
	for _, l := range lines {
		if l.Stream == sched.Stdout {
			out = append(out, l.Text)
		}
	}
	if want := []string{"out a", "out b", "out c", "out d"}; !slices.Equal(out, want) || len(lines) != 5 {
		t.Errorf("stdout %q, want %q; all %q", out, want, texts(lines))
	}
}

// A long line joined from fragments is announced as pending while it is written, and
// committed whole; a line of endless \r redraws is bounded.
func TestParseLogPending(t *testing.T) {
	var first, again bytes.Buffer
	bar := func(from, to int) string {
		var b strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&b, "\rstep %06d", i)
		}
		return b.String()
	}
	chunk := bar(0, fragmentSize/12+1)[:fragmentSize] // a 16 KiB fragment, cut mid-redraw
	frame(&first, stdcopy.Stdout, 0, chunk)
	frame(&again, stdcopy.Stdout, 0, chunk)
	frame(&again, stdcopy.Stdout, 0, "\rdone\n")
	lines := resumed(t, sched.LogOptions{Follow: true, Pending: true}, bytes.NewReader(first.Bytes()), bytes.NewReader(again.Bytes()))
	if len(lines) != 2 {
		t.Fatalf("got %d lines: %+v", len(lines), lines)
	}
	lastSeg := chunk[strings.LastIndexByte(chunk, '\r')+1:]
	if p := lines[0]; !p.Pending || p.Text != lastSeg || !p.Time.Equal(t0) {
		t.Errorf("pending line %+v, want %q", short(p), lastSeg)
	}
	if c := lines[1]; c.Pending || c.Partial || c.Text != chunk+"\rdone" {
		t.Errorf("committed line %+v", short(c))
	}
	// Without Pending, no pending lines.
	lines = resumed(t, sched.LogOptions{Follow: true}, bytes.NewReader(first.Bytes()), bytes.NewReader(again.Bytes()))
	if len(lines) != 1 || lines[0].Pending {
		t.Errorf("without Pending: %+v", lines)
	}

	// Megabytes of redraws with no newline: memory stays bounded.
	var huge bytes.Buffer
	n := 3 * maxLineBytes / fragmentSize
	for i := range n {
		frame(&huge, stdcopy.Stdout, 0, bar(i*2000, i*2000+2000)[:fragmentSize])
	}
	frame(&huge, stdcopy.Stdout, 0, "\rfinished\n")
	ctx := context.Background()
	q := newLineQueue()
	r := &logReader{role: "r", q: q}
	go func() {
		if err := r.parse(ctx, &huge); err != nil {
			t.Error(err)
		}
		q.end(io.EOF)
	}()
	lines = drain(t, q)
	if len(lines) != 1 || !strings.HasSuffix(lines[0].Text, "\rfinished") || len(lines[0].Text) > maxLineBytes+fragmentSize {
		t.Errorf("redraws: %d lines, last of %d bytes", len(lines), len(lines[len(lines)-1].Text))
	}
}

// The queue wakes Next for a batch or after coalesce, puts the streams in time order, and
// holds the reader back when Next does not keep up.
func TestLineQueue(t *testing.T) {
	ctx := context.Background()
	q := newLineQueue()
	start := time.Now()
	if err := q.put(ctx, sched.Line{Text: "late", Stream: sched.Stdout, Time: t0.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	if err := q.put(ctx, sched.Line{Text: "early", Stream: sched.Stderr, Time: t0}); err != nil {
		t.Fatal(err)
	}
	lines, err := q.take(ctx, nil)
	if err != nil || !slices.Equal(texts(lines), []string{"early", "late"}) || time.Since(start) > testkit.Scale(time.Second) {
		t.Fatalf("take: %q %v after %v", texts(lines), err, time.Since(start))
	}
	// Nothing waits: take blocks until its context ends.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := q.take(short, lines); err != context.DeadlineExceeded {
		t.Errorf("empty take: %v", err)
	}
	// A reader that runs ahead waits for room, and gives up with its context.
	full, cancel2 := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel2()
	n := 0
	for ; n <= maxPending; n++ {
		if err := q.put(full, sched.Line{Time: t0}); err != nil {
			break
		}
	}
	if n != maxPending {
		t.Errorf("put %d lines before waiting, want %d", n, maxPending)
	}
	q.end(io.EOF)
	if got := len(drain(t, q)); got != maxPending {
		t.Errorf("drained %d lines", got)
	}
}

func TestParseLogErrors(t *testing.T) {
	var buf bytes.Buffer
	frame(&buf, stdcopy.Stdout, 0, "ok\n")
	var hdr [8]byte
	hdr[0] = byte(stdcopy.Systemerr)
	binary.BigEndian.PutUint32(hdr[4:], 4)
	buf.Write(hdr[:])
	buf.WriteString("boom")
	if _, err := parseAll(t, &buf, sched.LogOptions{}, false); err == nil || err.Error() != "boom" {
		t.Errorf("system error frame: %v", err)
	}
	buf.Reset()
	frame(&buf, stdcopy.Stdout, 0, "truncated\n")
	if _, err := parseAll(t, bytes.NewReader(buf.Bytes()[:buf.Len()-3]), sched.LogOptions{}, false); err == nil {
		t.Error("a truncated frame parsed")
	}
}

func TestParseLogTTY(t *testing.T) {
	stamp := t0.Format(time.RFC3339Nano)
	body := stamp + " first\n" + stamp + " second\n" + stamp + " tail"
	lines, err := parseAll(t, strings.NewReader(body), sched.LogOptions{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(lines); !slices.Equal(got, []string{"first", "second", "tail"}) || !lines[2].Partial || lines[0].Stream != sched.Stdout || !lines[0].Time.Equal(t0) {
		t.Errorf("tty lines %+v", lines)
	}
}

func TestParseStamp(t *testing.T) {
	for _, s := range []string{
		"2026-01-02T03:04:05.123456789Z", "2026-01-02T03:04:05.1Z", "2026-01-02T03:04:05.000000000Z",
		"2026-01-02T04:04:05.123456789+01:00", "2026-01-02T03:04:05Z",
	} {
		want, _ := time.Parse(time.RFC3339Nano, s)
		got, ok := parseStamp([]byte(s))
		if !ok || !got.Equal(want) {
			t.Errorf("parseStamp(%s) = %v %v, want %v", s, got, ok, want)
		}
	}
	if _, ok := parseStamp([]byte("yesterday")); ok {
		t.Error("parsed a word")
	}
}

func TestReplicaStatus(t *testing.T) {
	at := "2026-01-02T03:04:05.5Z"
	mk := func(status container.ContainerState, code int, cancelled bool) *replica {
		return &replica{
			sum: container.Summary{ID: "abc", Names: []string{"/app-r-0"}, Labels: map[string]string{LabelRole: "r", LabelReplicaID: "0"}},
			info: &container.InspectResponse{RestartCount: 1, Config: &container.Config{Hostname: "app-r-0"},
				State: &container.State{Status: status, ExitCode: code, StartedAt: at, FinishedAt: at}},
			cancelled: cancelled,
		}
	}
	for _, c := range []struct {
		name      string
		r         *replica
		state     spec.AppState
		exit      *int
		errSubstr string
	}{
		{"created", mk(container.StateCreated, 0, false), spec.Submitted, nil, ""},
		{"running", mk(container.StateRunning, 0, false), spec.Running, nil, ""},
		{"restarting", mk(container.StateRestarting, 1, false), spec.Pending, nil, ""},
		{"paused", mk(container.StatePaused, 0, false), spec.Pending, nil, ""},
		{"succeeded", mk(container.StateExited, 0, false), spec.Succeeded, spec.IntPtr(0), ""},
		{"failed", mk(container.StateExited, 2, false), spec.Failed, spec.IntPtr(2), ""},
		{"cancelled", mk(container.StateExited, 143, true), spec.Cancelled, spec.IntPtr(143), ""},
		{"cancelled cleanly", mk(container.StateExited, 0, true), spec.Cancelled, spec.IntPtr(0), ""},
		{"cancelled before start", mk(container.StateCreated, 0, true), spec.Cancelled, nil, ""},
		{"dead", mk(container.StateDead, 0, false), spec.Failed, nil, "dead"},
		{"removed", &replica{sum: container.Summary{ID: "abc", Names: []string{"/app-r-0"}, Labels: map[string]string{LabelRole: "r", LabelReplicaID: "0"}}}, spec.Failed, nil, "removed outside wick"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := replicaStatus(c.r)
			if got.State != c.state || (got.ExitCode == nil) != (c.exit == nil) || c.exit != nil && *got.ExitCode != *c.exit ||
				!strings.Contains(got.StructuredError, c.errSubstr) || got.Role != "r" || got.Hostname != "app-r-0" || got.ContainerID != "abc" ||
				c.r.info != nil && got.Started.IsZero() {
				t.Errorf("got %+v, want %s exit %v", got, c.state, c.exit)
			}
		})
	}
	fast := mk(container.StateExited, 0, false)
	fast.info.State.FinishedAt = "2026-01-02T03:04:05.4Z" // Docker stamped the start late
	if got := replicaStatus(fast); !got.Started.Equal(got.Ended) || got.Ended.IsZero() {
		t.Errorf("fast replica: started %v ended %v", got.Started, got.Ended)
	}
	oom := mk(container.StateExited, 137, false)
	oom.info.State.OOMKilled = true
	if got := replicaStatus(oom); got.State != spec.Failed || !strings.Contains(got.StructuredError, "out of memory") {
		t.Errorf("oom: %+v", got)
	}
}

func TestAppState(t *testing.T) {
	r := func(s spec.AppState) spec.ReplicaStatus { return spec.ReplicaStatus{State: s, Role: "r"} }
	for _, c := range []struct {
		reps []spec.ReplicaStatus
		want spec.AppState
	}{
		{[]spec.ReplicaStatus{r(spec.Succeeded), r(spec.Succeeded)}, spec.Succeeded},
		{[]spec.ReplicaStatus{r(spec.Succeeded), r(spec.Failed)}, spec.Failed},
		{[]spec.ReplicaStatus{r(spec.Running), r(spec.Failed)}, spec.Running},
		{[]spec.ReplicaStatus{r(spec.Pending), r(spec.Submitted)}, spec.Pending},
		{[]spec.ReplicaStatus{r(spec.Submitted)}, spec.Submitted},
		{[]spec.ReplicaStatus{r(spec.Cancelled), r(spec.Failed), r(spec.Succeeded)}, spec.Cancelled},
		{[]spec.ReplicaStatus{r(spec.UnknownState), r(spec.Succeeded)}, spec.UnknownState},
	} {
		var st spec.AppStatus
		appState(&st, c.reps, nil)
		if st.State != c.want {
			t.Errorf("%v: got %s, want %s", c.reps, st.State, c.want)
		}
	}
}

// Describe shows the plan's warnings (the GPU ones among them) from the app record,
// and rebuilds no more than spec.MaxReplicas replicas from labels when the record is
// not wick's.
func TestDescribeRecord(t *testing.T) {
	s := &Scheduler{}
	at := "2026-01-02T03:04:05.5Z"
	rep := func(labels map[string]string) *replica {
		return &replica{sum: container.Summary{ID: "abc", Names: []string{"/x"}, Labels: labels},
			info: &container.InspectResponse{Config: &container.Config{}, State: &container.State{Status: container.StateRunning, Running: true, StartedAt: at}}}
	}
	app := &spec.AppDef{Name: "gpu", Roles: []spec.Role{spec.NewRole("r", "img", "python")}}
	app.Roles[0].Resource.GPU = 2
	req, err := s.plan(context.Background(), sched.Submission{AppID: "gpu-abc", Session: "s", App: app, Cfg: spec.Cfg{}})
	if err != nil {
		t.Fatal(err)
	}
	labels := maps.Clone(req.Containers[0].Labels)
	labels[LabelApp] = req.record
	d := s.describe("gpu-abc", []*replica{rep(labels)})
	if gpus.Count(context.Background()) < 2 && (len(d.Status.Warnings) == 0 || !strings.Contains(d.Status.Warnings[0], "GPUs")) {
		t.Errorf("describe warnings %q, want the plan's GPU warning", d.Status.Warnings)
	}

	// A record that claims 10^9 replicas is not wick's: the labels are used, bounded.
	bad := maps.Clone(labels)
	bad[LabelApp] = `{"app":{"name":"gpu","roles":[{"name":"r","image":"img","entrypoint":"python","num_replicas":1000000000}]}}`
	bad[LabelReplicaID] = strconv.Itoa(spec.MaxReplicas - 1)
	d = s.describe("gpu-abc", []*replica{rep(bad)})
	if n := d.App.Roles[0].NumReplicas; n != spec.MaxReplicas {
		t.Errorf("rebuilt %d replicas, want %d", n, spec.MaxReplicas)
	}
}

// The iterator is a sched.Readier: Ready says whether Next would return at once.
func TestLogIterReady(t *testing.T) {
	ctx := context.Background()
	q := newLineQueue()
	it := &logIter{q: q, cancel: func() {}, done: make(chan struct{})}
	close(it.done)
	var r sched.Readier = it
	if r.Ready() {
		t.Error("ready with nothing read")
	}
	for _, text := range []string{"a", "b"} {
		if err := q.put(ctx, sched.Line{Text: text, Time: t0}); err != nil {
			t.Fatal(err)
		}
	}
	if !r.Ready() {
		t.Error("not ready with two lines waiting (before the coalescing timer fired)")
	}
	if l, err := it.Next(ctx); err != nil || l.Text != "a" || !r.Ready() {
		t.Errorf("first line %q %v, ready %v", l.Text, err, r.Ready())
	}
	if l, err := it.Next(ctx); err != nil || l.Text != "b" || r.Ready() {
		t.Errorf("second line %q %v, ready %v", l.Text, err, r.Ready())
	}
	q.end(io.EOF)
	if !r.Ready() {
		t.Error("not ready once the lines ended")
	}
	if _, err := it.Next(ctx); err != io.EOF {
		t.Errorf("after the end: %v", err)
	}
	it.Close()
}

// The app's error is the oldest error file of a failed replica (TorchX's choice), and
// its message names that replica; a cancelled replica's file does not count.
func TestAppStateOldestError(t *testing.T) {
	code := spec.IntPtr(1)
	reps := []spec.ReplicaStatus{
		{Role: "a", ID: 0, State: spec.Failed, ExitCode: code, StructuredError: `{"message": {"message": "RuntimeError: Connection closed by peer"}}`},
		{Role: "b", ID: 0, State: spec.Failed, ExitCode: code, StructuredError: `{"message": {"message": "ValueError: bad batch\nmore"}}`},
		{Role: "c", ID: 0, State: spec.Succeeded},
	}
	errAt := []time.Time{t0.Add(time.Millisecond), t0, {}}
	var st spec.AppStatus
	appState(&st, reps, errAt)
	if st.State != spec.Failed || spec.ErrorMessage(st.StructuredError) != "ValueError: bad batch\nmore" ||
		st.Msg != "replica b/0 exited with code 1: ValueError: bad batch (and 1 more failed)" {
		t.Errorf("status %q %q %q", st.State, st.Msg, st.StructuredError)
	}
	// Cancelled: no error file makes the headline.
	reps[1].State = spec.Cancelled
	st = spec.AppStatus{}
	appState(&st, reps, errAt)
	if st.State != spec.Cancelled || strings.Contains(st.StructuredError, "ValueError") {
		t.Errorf("cancelled: %q %q", st.State, st.StructuredError)
	}
}
