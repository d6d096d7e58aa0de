// Package gpus tells how many GPUs this machine has, for the schedulers' warnings
// (fewer GPUs than a role asks for, replicas sharing GPUs).
package gpus

import (
	"bytes"
	"context"
	"os/exec"
	"time"

	"github.com/wick-dev/wick/engine/execx"
)

// timeout bounds nvidia-smi: a wedged driver must not hang a launch.
const timeout = 10 * time.Second

// Count counts the lines of `nvidia-smi -L`: zero when it is missing or fails.
func Count(ctx context.Context) int {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nvidia-smi", "-L")
	execx.Bound(cmd)
	out, err := cmd.Output()
	if err != nil {
		return 0
	}
	n := 0
	for _, line := range bytes.Split(out, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) > 0 {
			n++
		}
	}
	return n
}
