package components

import (
	"fmt"
	"os"

	"github.com/wick-dev/wick/components/demo"
	"github.com/wick-dev/wick/engine/spec"
)

// wickBinary is the program demo.train runs: self if given, else this very binary,
// which has the hidden verb demo.Verb; "wick" (from $PATH) if the executable cannot
// be found.
func wickBinary(self string) string {
	if self != "" {
		return self
	}
	if exe, err := os.Executable(); err == nil {
		return exe
	}
	return "wick"
}

func demoTrain(self string) *Component {
	d := demo.DefaultOptions()
	return &Component{
		Name:    "demo.train",
		Summary: "A make-believe multi-replica training job (no Python needed): try wick with it.",
		Help: "Each replica is the wick binary pretending to train: it prints per-rank loss lines\n" +
			"on stdout, tqdm-style progress bars and an occasional UserWarning on stderr, at\n" +
			"--rate lines per second for --duration. --fail_rank makes one rank crash with\n" +
			"--exit_code (and a torchelastic error file) after --fail_after.",
		Params: []Param{
			{Name: "replicas", Short: "r", Type: Int, Default: "2", Help: "number of replicas (num_replicas)"},
			{Name: "duration", Type: String, Default: d.Duration.String(), Help: "how long each replica trains, e.g. 30s or 2m (a bare number is seconds)"},
			{Name: "rate", Type: Float, Default: "20", Help: "training steps (stdout lines) per second per replica"},
			{Name: "steps", Type: Int, Default: "0", Help: "stop after this many steps (0: run for --duration)"},
			{Name: "steps_per_epoch", Type: Int, Default: fmt.Sprint(d.StepsPerEpoch), Help: "steps per epoch (and per progress bar)"},
			{Name: "progress", Type: Bool, Default: "true", Help: "draw tqdm-style progress bars on stderr"},
			{Name: "warnings", Type: Bool, Default: "true", Help: "print occasional UserWarnings on stderr"},
			{Name: "fail_rank", Type: Int, Optional: true, Help: "the rank that fails on purpose"},
			{Name: "fail_after", Type: String, Optional: true, Help: "when --fail_rank fails, e.g. 10s (default: halfway)"},
			{Name: "exit_code", Type: Int, Default: "1", Help: "the exit code of the failing rank"},
		},
		Example: []string{"--replicas", "4", "--fail_rank", "2"},
		Build: func(a Args) (*spec.AppDef, error) {
			o := demo.DefaultOptions()
			o.WorldSize = a.Int("replicas")
			var err error
			if o.Duration, err = demo.ParseDuration(a.String("duration")); err != nil {
				return nil, fmt.Errorf("--duration: %w", err)
			}
			o.Rate = a.Float("rate")
			o.Steps = a.Int("steps")
			o.StepsPerEpoch = a.Int("steps_per_epoch")
			o.Progress = a.Bool("progress")
			o.Warnings = a.Bool("warnings")
			o.ExitCode = a.Int("exit_code")
			if a.Has("fail_rank") {
				o.FailRank = a.Int("fail_rank")
				if o.FailRank < 0 || o.FailRank >= o.WorldSize {
					return nil, fmt.Errorf("--fail_rank %d: want a rank between 0 and %d", o.FailRank, o.WorldSize-1)
				}
			}
			if a.Has("fail_after") {
				if o.FailAfter, err = demo.ParseDuration(a.String("fail_after")); err != nil {
					return nil, fmt.Errorf("--fail_after: %w", err)
				}
			}
			if o.WorldSize < 1 {
				return nil, fmt.Errorf("--replicas must be at least 1 (got %d)", o.WorldSize)
			}
			if err := o.Validate(); err != nil {
				return nil, err
			}
			r := spec.NewRole("trainer", spec.None, wickBinary(self), append([]string{demo.Verb}, o.Args()...)...)
			r.NumReplicas = o.WorldSize
			r.Env = map[string]string{demo.EnvReplicaID: "${" + spec.MacroReplicaID + "}"}
			r.Resource = spec.Resource{CPU: 1, GPU: 0, MemMB: 256}
			return app("demo-train", r), nil
		},
	}
}
