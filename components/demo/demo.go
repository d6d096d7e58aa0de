// Package demo is the make-believe training program behind the demo.train component:
// what wick runs (as its hidden verb __demo-train) to show a multi-replica job at work
// without Python or GPUs. Each replica prints what a real trainer prints: per-rank loss
// lines on stdout, tqdm-style progress bars redrawn with '\r' and an occasional
// UserWarning on stderr, at a chosen line rate; one rank may fail on purpose, with a
// Python-style traceback and a torchelastic error file.
package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Verb is the hidden wick verb that runs Train with the flags ParseFlags reads.
const Verb = "__demo-train"

// Environment variables Train's flags fall back on.
const (
	// EnvReplicaID holds the replica's index; demo.train sets it from ${replica_id}.
	EnvReplicaID = "WICK_REPLICA_ID"
	// EnvErrorFile is where torchelastic expects a failing worker's error report.
	EnvErrorFile = "TORCHELASTIC_ERROR_FILE"
)

// tick is how often Train writes: lines due since the last tick are formatted into
// buffers and flushed together, and progress bars are redrawn (tqdm's default refresh
// is also 0.1 s). Ten flushes a second keep 10k lines/s per replica cheap.
const tick = 100 * time.Millisecond

// maxRate bounds the line rate: a million lines a second is beyond any real trainer
// and any terminal.
const maxRate = 1_000_000

// Options configure one replica of the demo training.
type Options struct {
	// Rank is this replica's index, WorldSize the number of replicas.
	Rank, WorldSize int
	// Duration is how long to train; 0 means until Steps are done.
	Duration time.Duration
	// Rate is the number of training steps, one stdout line each, per second.
	Rate float64
	// Steps stops training after this many steps; 0 means run for Duration.
	Steps int
	// StepsPerEpoch is the length of an epoch, and of its progress bar.
	StepsPerEpoch int
	// Progress draws a tqdm-style progress bar on stderr.
	Progress bool
	// Warnings prints an occasional UserWarning on stderr.
	Warnings bool
	// FailRank is the rank that fails on purpose, or -1 for none.
	FailRank int
	// FailAfter is when FailRank fails; 0 means halfway through the run.
	FailAfter time.Duration
	// ExitCode is the failing rank's exit status (1 to 255).
	ExitCode int
	// ErrorFile receives a torchelastic-style JSON error report when this rank
	// fails; "" writes none.
	ErrorFile string
}

// DefaultOptions returns a 30-second, 20-lines-a-second run of rank 0 of 1.
func DefaultOptions() Options {
	return Options{
		WorldSize: 1, Duration: 30 * time.Second, Rate: 20, StepsPerEpoch: 200,
		Progress: true, Warnings: true, FailRank: -1, ExitCode: 1,
	}
}

// Validate checks the options' ranges.
func (o Options) Validate() error {
	switch {
	case o.WorldSize < 1:
		return fmt.Errorf("world size must be at least 1 (got %d)", o.WorldSize)
	case o.Rank < 0:
		return fmt.Errorf("rank must not be negative (got %d)", o.Rank)
	case !(o.Rate > 0) || o.Rate > maxRate:
		return fmt.Errorf("rate must be a positive number of lines per second, at most %d (got %v)", maxRate, o.Rate)
	case o.Duration < 0:
		return fmt.Errorf("duration must not be negative (got %v)", o.Duration)
	case o.Steps < 0:
		return fmt.Errorf("steps must not be negative (got %d)", o.Steps)
	case o.Duration == 0 && o.Steps == 0:
		return errors.New("give a duration or a number of steps")
	case o.StepsPerEpoch < 1:
		return fmt.Errorf("steps per epoch must be at least 1 (got %d)", o.StepsPerEpoch)
	case o.FailRank < -1:
		return fmt.Errorf("fail rank must be a rank, or -1 for none (got %d)", o.FailRank)
	case o.FailAfter < 0:
		return fmt.Errorf("fail after must not be negative (got %v)", o.FailAfter)
	case o.ExitCode < 1 || o.ExitCode > 255:
		return fmt.Errorf("exit code must be between 1 and 255 (got %d)", o.ExitCode)
	}
	return nil
}

// Args writes the options as the flags ParseFlags reads (without the verb). Rank and
// ErrorFile are left out: each replica takes them from its environment.
func (o Options) Args() []string {
	args := []string{
		"--world-size", strconv.Itoa(o.WorldSize),
		"--duration", o.Duration.String(),
		"--rate", strconv.FormatFloat(o.Rate, 'g', -1, 64),
		"--steps", strconv.Itoa(o.Steps),
		"--steps-per-epoch", strconv.Itoa(o.StepsPerEpoch),
		"--progress=" + strconv.FormatBool(o.Progress),
		"--warnings=" + strconv.FormatBool(o.Warnings),
	}
	if o.FailRank >= 0 {
		args = append(args, "--fail-rank", strconv.Itoa(o.FailRank), "--exit-code", strconv.Itoa(o.ExitCode))
		if o.FailAfter > 0 {
			args = append(args, "--fail-after", o.FailAfter.String())
		}
	}
	return args
}

// ParseFlags reads the verb's flags. Without --rank the rank comes from
// $WICK_REPLICA_ID (then $RANK, else 0); without --error-file the error file is
// $TORCHELASTIC_ERROR_FILE.
func ParseFlags(args []string) (Options, error) { return parseFlags(args, os.Getenv) }

func parseFlags(args []string, getenv func(string) string) (Options, error) {
	o := DefaultOptions()
	fs := pflag.NewFlagSet(Verb, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	rank := fs.Int("rank", -1, "this replica's rank (default $WICK_REPLICA_ID, then $RANK)")
	fs.IntVar(&o.WorldSize, "world-size", o.WorldSize, "number of replicas")
	duration := fs.String("duration", o.Duration.String(), "how long to train (e.g. 30s; a bare number is seconds)")
	fs.Float64Var(&o.Rate, "rate", o.Rate, "steps (stdout lines) per second")
	fs.IntVar(&o.Steps, "steps", o.Steps, "stop after this many steps (0: run for --duration)")
	fs.IntVar(&o.StepsPerEpoch, "steps-per-epoch", o.StepsPerEpoch, "steps per epoch")
	fs.BoolVar(&o.Progress, "progress", o.Progress, "draw progress bars on stderr")
	fs.BoolVar(&o.Warnings, "warnings", o.Warnings, "print occasional warnings on stderr")
	fs.IntVar(&o.FailRank, "fail-rank", o.FailRank, "the rank that fails (-1: none)")
	failAfter := fs.String("fail-after", "", "when the failing rank fails (default: halfway)")
	fs.IntVar(&o.ExitCode, "exit-code", o.ExitCode, "the failing rank's exit code")
	errorFile := fs.String("error-file", "", "torchelastic error file (default $TORCHELASTIC_ERROR_FILE)")
	if err := fs.Parse(args); err != nil {
		return Options{}, fmt.Errorf("%s: %w", Verb, err)
	}
	if fs.NArg() > 0 {
		return Options{}, fmt.Errorf("%s: unexpected argument %q", Verb, fs.Arg(0))
	}
	var err error
	if o.Duration, err = ParseDuration(*duration); err != nil {
		return Options{}, fmt.Errorf("%s: --duration: %w", Verb, err)
	}
	if *failAfter != "" {
		if o.FailAfter, err = ParseDuration(*failAfter); err != nil {
			return Options{}, fmt.Errorf("%s: --fail-after: %w", Verb, err)
		}
	}
	o.Rank = *rank
	if o.Rank < 0 {
		o.Rank = 0
		for _, k := range []string{EnvReplicaID, "RANK"} {
			if v := getenv(k); v != "" {
				if o.Rank, err = strconv.Atoi(v); err != nil {
					return Options{}, fmt.Errorf("%s: $%s=%q is not a rank", Verb, k, v)
				}
				break
			}
		}
	}
	o.ErrorFile = *errorFile
	if o.ErrorFile == "" {
		o.ErrorFile = getenv(EnvErrorFile)
	}
	if err := o.Validate(); err != nil {
		return Options{}, fmt.Errorf("%s: %w", Verb, err)
	}
	return o, nil
}

// ParseDuration reads a Go duration ("90s", "1m30s") or a bare number of seconds.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 || f > 1e9 || math.IsNaN(f) {
			return 0, fmt.Errorf("%q is out of range", s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (e.g. 30s, 2m, or a number of seconds)", s)
	}
	return d, nil
}

// ExitError is Train's result for the rank that fails on purpose: the process should
// exit with Code.
type ExitError struct {
	Code int    // the exit status, 1 to 255
	Msg  string // which rank failed, and when
}

// ExitCode is the status the process should exit with.
func (e *ExitError) ExitCode() int { return e.Code }

// Error says which rank failed and the exit code.
func (e *ExitError) Error() string { return fmt.Sprintf("%s (exit code %d)", e.Msg, e.Code) }

// Train runs one replica: it writes loss lines to stdout and progress bars and
// warnings to stderr for the configured duration or number of steps, and returns nil;
// an *ExitError when this rank fails on purpose; ctx.Err() when ctx is cancelled.
// Output is buffered and flushed once per tick.
func Train(ctx context.Context, stdout, stderr io.Writer, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	t := &trainer{
		o:     o,
		out:   bufio.NewWriterSize(stdout, 64<<10),
		err:   bufio.NewWriterSize(stderr, 16<<10),
		start: time.Now(),
	}
	t.total = o.Steps
	if o.Duration > 0 {
		n := int(o.Rate * o.Duration.Seconds())
		if t.total == 0 || n < t.total {
			t.total = n
		}
	}
	failAt := time.Duration(-1)
	if o.FailRank == o.Rank {
		failAt = o.FailAfter
		if failAt == 0 {
			failAt = time.Duration(float64(t.total) / o.Rate / 2 * float64(time.Second))
		}
	}
	t.header()
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		elapsed := time.Since(t.start)
		due := min(int(o.Rate*elapsed.Seconds()), t.total)
		for t.step < due {
			t.lossLine()
		}
		t.bar(false)
		if failAt >= 0 && elapsed >= failAt {
			return t.fail()
		}
		if t.step >= t.total {
			return t.finish()
		}
		if err := t.flush(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			t.endBar()
			fmt.Fprintf(t.out, "[rank %d] interrupted at epoch %d step %d\n", o.Rank, t.step/o.StepsPerEpoch, t.step)
			_ = t.flush()
			return ctx.Err()
		case <-ticker.C:
		}
	}
}

// trainer is the state of one Train run.
type trainer struct {
	o        Options
	out, err *bufio.Writer
	start    time.Time
	step     int  // steps done
	total    int  // steps to do
	barOpen  bool // a progress bar line is drawn but not ended
	buf      []byte
	epochSum float64 // sum of this epoch's losses
	epochN   int
	warnIdx  int
}

func (t *trainer) flush() error {
	if err := t.out.Flush(); err != nil {
		return err
	}
	return t.err.Flush()
}

func (t *trainer) header() {
	o := t.o
	fmt.Fprintf(t.out, "[rank %d] initializing process group: backend=gloo world_size=%d rank=%d\n", o.Rank, o.WorldSize, o.Rank)
	fmt.Fprintf(t.out, "[rank %d] model: TinyTransformer, 124.4M parameters, dtype=bfloat16\n", o.Rank)
	fmt.Fprintf(t.out, "[rank %d] dataset: 1,000,000 samples, %d steps per epoch, %d steps to run\n", o.Rank, o.StepsPerEpoch, t.total)
	if o.Warnings {
		t.warn(0)
	}
	_ = t.flush()
}

// warning returns one of a few real PyTorch warnings, printed the way Python prints
// them.
func warning(i int) string {
	switch i % 3 {
	case 0:
		return "/opt/conda/lib/python3.11/site-packages/torch/utils/data/dataloader.py:557: UserWarning: This DataLoader will create 8 worker processes in total. Our suggested max number of worker in current system is 4, which is smaller than what this DataLoader is going to create. Please be aware that excessive worker creation might get DataLoader running slow or even freeze, lower the worker number to avoid potential slowness/freeze if necessary.\n  warnings.warn("
	case 1:
		return "/opt/conda/lib/python3.11/site-packages/torch/optim/lr_scheduler.py:143: UserWarning: Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, you should call them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping the first value of the learning rate schedule. See more details at https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate\n  warnings.warn(\"Detected call of `lr_scheduler.step()` before `optimizer.step()`. \""
	}
	return "/opt/conda/lib/python3.11/site-packages/torch/autograd/graph.py:825: UserWarning: Grad strides do not match bucket view strides. This may indicate grad was not created according to the gradient layout contract, or that the param's strides changed since DDP was constructed.  This is not an error, but may impair performance.\n  return Variable._execution_engine.run_backward("
}

func (t *trainer) warn(i int) {
	t.endBar()
	t.err.WriteString(warning(i))
	t.err.WriteByte('\n')
}

// noise is deterministic per rank and step, uniform in [-0.5, 0.5).
func (t *trainer) noise(step int) float64 {
	x := uint64(step)*0x9E3779B97F4A7C15 ^ uint64(t.o.Rank+1)*0xBF58476D1CE4E5B9
	x ^= x >> 31
	x *= 0x94D049BB133111EB
	x ^= x >> 29
	return float64(x>>11)/float64(1<<53) - 0.5
}

// loss is a plausible, deterministic training curve with per-rank noise.
func (t *trainer) loss(step int) float64 {
	return 0.35 + 2.6*math.Exp(-float64(step)/600) + 0.08*t.noise(step)
}

// lr is a linear warm-up then cosine decay from 3e-4.
func (t *trainer) lr(step int) float64 {
	const peak, warmup = 3e-4, 100
	if step < warmup {
		return peak * float64(step+1) / warmup
	}
	p := float64(step-warmup) / float64(max(1, t.total-warmup))
	return peak * 0.5 * (1 + math.Cos(math.Pi*min(p, 1)))
}

// lossLine writes the next step's line, "[rank 1] epoch 0 step 120 loss 2.3412 lr
// 3.0e-04 grad_norm 1.23 tok/s 48213", and ends the epoch when it is complete.
func (t *trainer) lossLine() {
	o := t.o
	step := t.step
	l := t.loss(step)
	b := t.buf[:0]
	b = append(b, "[rank "...)
	b = strconv.AppendInt(b, int64(o.Rank), 10)
	b = append(b, "] epoch "...)
	b = strconv.AppendInt(b, int64(step/o.StepsPerEpoch), 10)
	b = append(b, " step "...)
	b = strconv.AppendInt(b, int64(step), 10)
	b = append(b, " loss "...)
	b = strconv.AppendFloat(b, l, 'f', 4, 64)
	b = append(b, " lr "...)
	b = strconv.AppendFloat(b, t.lr(step), 'e', 1, 64)
	b = append(b, " grad_norm "...)
	b = strconv.AppendFloat(b, 0.6+l*0.4, 'f', 2, 64)
	b = append(b, " tok/s "...)
	b = strconv.AppendInt(b, int64(48000+int(l*97)%500), 10)
	b = append(b, '\n')
	t.buf = b
	t.out.Write(b)
	t.step++
	t.epochSum += l
	t.epochN++
	if t.step%o.StepsPerEpoch == 0 {
		t.endEpoch()
	}
}

func (t *trainer) endEpoch() {
	o := t.o
	epoch := t.step/o.StepsPerEpoch - 1
	t.bar(true)
	avg := t.epochSum / float64(max(1, t.epochN))
	// The eval loss sits above the train loss by a gap that widens as the model
	// starts to overfit, with its own noise (a different batch of held-out data).
	eval := avg*(1.03+0.005*float64(epoch)) + 0.03*t.noise(-1-epoch)
	fmt.Fprintf(t.out, "[rank %d] epoch %d done: train loss %.4f, eval loss %.4f, %.1fs elapsed\n",
		o.Rank, epoch, avg, eval, time.Since(t.start).Seconds())
	if o.Rank == 0 {
		fmt.Fprintf(t.out, "[rank 0] saved checkpoint to checkpoints/epoch_%03d.pt\n", epoch)
	}
	t.epochSum, t.epochN = 0, 0
	if o.Warnings && (epoch+1)%2 == 0 && t.step < t.total {
		t.warnIdx++
		t.warn(t.warnIdx)
	}
}

// bar redraws the progress bar of the current epoch, tqdm style:
// "\rEpoch 0:  45%|████▌     | 90/200 [00:04<00:05, 20.01it/s, loss=2.3100]". final
// draws the finished bar and ends its line.
func (t *trainer) bar(final bool) {
	o := t.o
	if !o.Progress {
		return
	}
	epoch := t.step / o.StepsPerEpoch
	n := t.step % o.StepsPerEpoch
	if final {
		epoch, n = epoch-1, o.StepsPerEpoch
	}
	if n == 0 && !t.barOpen {
		return
	}
	size := min(o.StepsPerEpoch, t.total-epoch*o.StepsPerEpoch)
	if size <= 0 {
		return
	}
	frac := float64(n) / float64(size)
	const width = 10
	blocks := []string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}
	full := int(frac * width)
	var b strings.Builder
	fmt.Fprintf(&b, "\rEpoch %d: %3d%%|", epoch, int(frac*100))
	b.WriteString(strings.Repeat("█", full))
	if full < width {
		// The partial cell is a space when no eighth of it is filled: the bar always
		// takes width cells.
		part := blocks[int(frac*width*8)%8]
		if part == "" {
			part = " "
		}
		b.WriteString(part)
		b.WriteString(strings.Repeat(" ", width-full-1))
	}
	rate := o.Rate
	// The count is padded to the total's digits so that the line keeps its width as
	// it is redrawn.
	fmt.Fprintf(&b, "| %*d/%d [%s<%s, %.2fit/s, loss=%.4f]",
		len(strconv.Itoa(size)), n, size, clock(time.Duration(float64(n)/rate*float64(time.Second))),
		clock(time.Duration(float64(size-n)/rate*float64(time.Second))), rate, t.loss(max(0, t.step-1)))
	t.err.WriteString(b.String())
	t.barOpen = true
	if final || n >= size {
		t.endBar()
	}
}

// endBar ends a partly drawn progress bar line.
func (t *trainer) endBar() {
	if t.barOpen {
		t.err.WriteByte('\n')
		t.barOpen = false
	}
}

func clock(d time.Duration) string {
	s := int(d.Seconds())
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%02d:%02d", s/60, s%60)
}

func (t *trainer) finish() error {
	t.endBar()
	o := t.o
	fmt.Fprintf(t.out, "[rank %d] training done: %d steps in %.1fs, final loss %.4f\n",
		o.Rank, t.step, time.Since(t.start).Seconds(), t.loss(max(0, t.step-1)))
	return t.flush()
}

// fail makes this rank fail as a crashed PyTorch worker does: a traceback on stderr,
// a torchelastic error file, and an ExitError.
func (t *trainer) fail() error {
	t.endBar()
	o := t.o
	msg := fmt.Sprintf("RuntimeError: CUDA error: an illegal memory access was encountered (simulated: wick demo.train failed rank %d at step %d)", o.Rank, t.step)
	stack := "Traceback (most recent call last):\n" +
		"  File \"/workspace/train.py\", line 214, in <module>\n    main()\n" +
		"  File \"/workspace/train.py\", line 187, in main\n    loss.backward()\n" +
		"  File \"/opt/conda/lib/python3.11/site-packages/torch/_tensor.py\", line 581, in backward\n    torch.autograd.backward(\n" +
		msg + "\n"
	t.err.WriteString(stack)
	if o.ErrorFile != "" {
		if err := writeErrorFile(o.ErrorFile, msg, stack, time.Now()); err != nil {
			fmt.Fprintf(t.err, "[rank %d] could not write the error file: %v\n", o.Rank, err)
		}
	}
	_ = t.flush()
	return &ExitError{Code: o.ExitCode, Msg: fmt.Sprintf("rank %d failed on purpose at step %d", o.Rank, t.step)}
}

// writeErrorFile writes torchelastic's error report, atomically:
// {"message": {"message": "...", "extraInfo": {"py_callstack": "...", "timestamp": "..."}}}.
func writeErrorFile(path, msg, stack string, now time.Time) error {
	type extra struct {
		PyCallstack string `json:"py_callstack"`
		Timestamp   string `json:"timestamp"`
	}
	type message struct {
		Message   string `json:"message"`
		ExtraInfo extra  `json:"extraInfo"`
	}
	data, err := json.Marshal(struct {
		Message message `json:"message"`
	}{message{msg, extra{stack, strconv.FormatInt(now.Unix(), 10)}}})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".error-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
