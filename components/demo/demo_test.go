package demo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/wick-dev/wick/internal/testkit"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestParseFlagsRoundTrip(t *testing.T) {
	o := DefaultOptions()
	o.WorldSize, o.Duration, o.Rate, o.Steps, o.StepsPerEpoch = 4, 90*time.Second, 12.5, 1000, 50
	o.Progress, o.Warnings = false, false
	o.FailRank, o.FailAfter, o.ExitCode = 2, 3*time.Second, 9
	got, err := parseFlags(o.Args(), env(map[string]string{EnvReplicaID: "3", EnvErrorFile: "/tmp/err.json"}))
	if err != nil {
		t.Fatal(err)
	}
	o.Rank, o.ErrorFile = 3, "/tmp/err.json"
	if !reflect.DeepEqual(got, o) {
		t.Errorf("round trip\n got %+v\nwant %+v", got, o)
	}
}

func TestParseFlagsRank(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		rank int
	}{
		{nil, nil, 0},
		{nil, map[string]string{"RANK": "2"}, 2},
		{nil, map[string]string{"RANK": "2", EnvReplicaID: "1"}, 1},
		{[]string{"--rank", "5", "--world-size", "6"}, map[string]string{EnvReplicaID: "1"}, 5},
	} {
		o, err := parseFlags(tc.args, env(tc.env))
		if err != nil || o.Rank != tc.rank {
			t.Errorf("%q %v: rank %d, %v; want %d", tc.args, tc.env, o.Rank, err, tc.rank)
		}
	}
	for _, tc := range []struct {
		args []string
		env  map[string]string
		err  string
	}{
		{nil, map[string]string{EnvReplicaID: "x"}, `$WICK_REPLICA_ID="x" is not a rank`},
		{[]string{"--duration", "abc"}, nil, `--duration: "abc" is not a duration`},
		{[]string{"--duration", "-1"}, nil, `--duration: "-1" is out of range`},
		{[]string{"--rate", "-3"}, nil, "rate must be a positive number"},
		{[]string{"--duration", "0"}, nil, "give a duration or a number of steps"},
		{[]string{"--exit-code", "256"}, nil, "exit code must be between 1 and 255"},
		{[]string{"--nope"}, nil, "unknown flag: --nope"},
		{[]string{"extra"}, nil, `unexpected argument "extra"`},
		{[]string{"--fail-after", "x"}, nil, `--fail-after: "x" is not a duration`},
	} {
		if _, err := parseFlags(tc.args, env(tc.env)); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: err = %v, want %q", tc.args, err, tc.err)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"30": 30 * time.Second, "1.5": 1500 * time.Millisecond, "2m": 2 * time.Minute, " 1h2m ": time.Hour + 2*time.Minute} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v", in, got, err)
		}
	}
}

// lines counts the stdout lines that are loss lines.
func lossLines(out string) int {
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " loss ") && strings.Contains(l, " step ") {
			n++
		}
	}
	return n
}

func TestTrainOutput(t *testing.T) {
	o := DefaultOptions()
	o.Rank, o.WorldSize = 1, 2
	o.Rate, o.Duration, o.StepsPerEpoch = 2000, 300*time.Millisecond, 250
	var stdout, stderr bytes.Buffer
	if err := Train(context.Background(), &stdout, &stderr, o); err != nil {
		t.Fatal(err)
	}
	out := stdout.String()
	if n := lossLines(out); n != 600 {
		t.Errorf("%d loss lines, want 600 (rate x duration)", n)
	}
	for _, want := range []string{
		"[rank 1] initializing process group: backend=gloo world_size=2 rank=1\n",
		"[rank 1] epoch 0 step 0 loss ",
		"[rank 1] epoch 1 step 250 loss ",
		"[rank 1] epoch 0 done: train loss ",
		"[rank 1] training done: 600 steps in ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if strings.Contains(out, "saved checkpoint") {
		t.Error("only rank 0 saves checkpoints")
	}
	if !strings.HasSuffix(out, "\n") {
		t.Error("stdout does not end with a newline")
	}
	errOut := stderr.String()
	if !strings.Contains(errOut, "UserWarning: This DataLoader will create") {
		t.Errorf("no warning on stderr:\n%s", errOut)
	}
	// Progress bars are redrawn with \r and each is ended by a newline.
	if !strings.Contains(errOut, "\rEpoch 0: 100%|██████████| 250/250 [") || !strings.Contains(errOut, "\rEpoch 2: 100%|██████████| 100/100 [") {
		t.Errorf("no finished progress bars on stderr:\n%q", errOut)
	}
	// Every frame of one epoch's bar has the same width: a bar redrawn in place
	// leaves no debris and does not jump.
	for _, line := range strings.Split(errOut, "\n") {
		if !strings.HasPrefix(line, "\rEpoch 0:") {
			continue
		}
		frames := strings.Split(line[1:], "\r")
		for _, f := range frames {
			bar := f[strings.Index(f, "|")+1 : strings.LastIndex(f, "|")]
			if n := utf8.RuneCountInString(bar); n != 10 {
				t.Errorf("bar %q is %d cells, want 10", bar, n)
			}
			if w0, w := utf8.RuneCountInString(frames[0]), utf8.RuneCountInString(f); w != w0 {
				t.Errorf("frame %q is %d cells wide, the first was %d", f, w, w0)
			}
		}
	}
	if !strings.HasSuffix(errOut, "\n") || strings.Contains(errOut, "\r\n") {
		t.Errorf("progress bars not ended properly: %q", errOut[max(0, len(errOut)-200):])
	}
	// A loss line looks like real training output.
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "[rank 1] epoch 0 step 120 ") {
			fields := strings.Fields(l)
			if len(fields) != 14 || fields[6] != "loss" || fields[8] != "lr" || !strings.Contains(fields[9], "e-0") {
				t.Errorf("loss line %q", l)
			}
		}
	}
}

func TestTrainQuiet(t *testing.T) {
	o := DefaultOptions()
	o.Rate, o.Duration, o.Steps = 1000, time.Hour, 50
	o.Progress, o.Warnings = false, false
	var stdout, stderr bytes.Buffer
	start := time.Now()
	if err := Train(context.Background(), &stdout, &stderr, o); err != nil {
		t.Fatal(err)
	}
	if lossLines(stdout.String()) != 50 || stderr.Len() != 0 {
		t.Errorf("steps: %d lines, stderr %q", lossLines(stdout.String()), stderr.String())
	}
	if time.Since(start) > testkit.Scale(10*time.Second) {
		t.Error("--steps did not end the run")
	}
}

func TestTrainFail(t *testing.T) {
	errFile := filepath.Join(t.TempDir(), "error.json")
	o := DefaultOptions()
	o.Rank, o.WorldSize, o.FailRank, o.ExitCode = 1, 2, 1, 3
	o.Rate, o.Duration, o.FailAfter = 100, time.Minute, 150*time.Millisecond
	o.ErrorFile = errFile
	var stdout, stderr bytes.Buffer
	err := Train(context.Background(), &stdout, &stderr, o)
	var exit *ExitError
	if !errors.As(err, &exit) || exit.Code != 3 || exit.ExitCode() != 3 {
		t.Fatalf("err = %v, want exit code 3", err)
	}
	if !strings.Contains(stderr.String(), "Traceback (most recent call last):\n") ||
		!strings.Contains(stderr.String(), "RuntimeError: CUDA error: an illegal memory access was encountered") {
		t.Errorf("no traceback:\n%s", stderr.String())
	}
	data, err := os.ReadFile(errFile)
	if err != nil {
		t.Fatal(err)
	}
	var report struct {
		Message struct {
			Message   string `json:"message"`
			ExtraInfo struct {
				PyCallstack string `json:"py_callstack"`
				Timestamp   string `json:"timestamp"`
			} `json:"extraInfo"`
		} `json:"message"`
	}
	if err := json.Unmarshal(data, &report); err != nil {
		t.Fatal(err)
	}
	m := report.Message
	if !strings.HasPrefix(m.Message, "RuntimeError: ") || !strings.HasPrefix(m.ExtraInfo.PyCallstack, "Traceback") || m.ExtraInfo.Timestamp == "" {
		t.Errorf("error file %s", data)
	}
	// Other ranks do not fail.
	o.Rank, o.Duration = 0, 200*time.Millisecond
	if err := Train(context.Background(), io.Discard, io.Discard, o); err != nil {
		t.Errorf("rank 0: %v", err)
	}
}

func TestTrainCancel(t *testing.T) {
	o := DefaultOptions()
	o.Duration = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	var stdout bytes.Buffer
	if err := Train(ctx, &stdout, io.Discard, o); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v", err)
	}
	if !strings.Contains(stdout.String(), "[rank 0] interrupted at epoch 0 step ") {
		t.Errorf("stdout %q", stdout.String())
	}
}

func TestTrainRejectsBadOptions(t *testing.T) {
	o := DefaultOptions()
	o.Rate = 0
	if err := Train(context.Background(), io.Discard, io.Discard, o); err == nil {
		t.Error("rate 0 accepted")
	}
}

// countWriter counts bytes and newlines, like a pipe to a log collector.
type countWriter struct{ bytes, lines int }

func (w *countWriter) Write(p []byte) (int, error) {
	w.bytes += len(p)
	w.lines += bytes.Count(p, []byte("\n"))
	return len(p), nil
}

// BenchmarkTrain10k measures one replica at 10k lines/s: b.N runs of 0.2 s each, to
// show that the output costs little CPU (compare the reported CPU time with the
// wall time).
func BenchmarkTrain10k(b *testing.B) {
	o := DefaultOptions()
	o.Rate, o.Duration = 10000, 200*time.Millisecond
	for b.Loop() {
		var w countWriter
		if err := Train(context.Background(), &w, io.Discard, o); err != nil {
			b.Fatal(err)
		}
		if w.lines < 2000 {
			b.Fatalf("%d lines", w.lines)
		}
	}
}

// BenchmarkLossLine measures formatting one loss line.
func BenchmarkLossLine(b *testing.B) {
	o := DefaultOptions()
	tr := &trainer{o: o, out: newDiscard(), err: newDiscard(), total: 1 << 30}
	o.StepsPerEpoch = 1 << 30
	tr.o = o
	for b.Loop() {
		tr.lossLine()
	}
}

func newDiscard() *bufio.Writer { return bufio.NewWriter(io.Discard) }
