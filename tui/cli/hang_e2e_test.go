package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// TestHangAlarm: rank 1 of a real 1x2 DDP job (torch, gloo) sleeps for ever before
// its step 3 (examples/failures/hang.py) while rank 0 logs step 3 and waits in
// all_reduce. With --hang-after 6s, wick status, describe (text and --json) and wick
// list raise the hang alarm and name rank 1, and not before the app was quiet that long.
func TestHangAlarm(t *testing.T) {
	t.Parallel()
	h := failuresHarness(t)
	const after = 6 * time.Second
	r := h.exec(append([]string{"run", "--detach", "--hang-after", after.String()}, failArgs("1x2", "hang.py")[1:]...)...)
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := handleOf(t, r)
	defer h.exec("cancel", handle)

	const want = "rank 1 stopped first, at step 2 (the others at 3)"
	deadline := time.Now().Add(testkit.Scale(ddpTimeout) + after)
	var out string
	// On a busy machine torch's start alone can be quiet for the hang time: that
	// alarm (no rank named: all stopped together) is right, and ends with the first
	// step. The one asked for comes once rank 0 logged step 3 and rank 1 did not.
	for {
		out = h.exec("status", handle).stdout
		if strings.Contains(out, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no hang alarm naming rank 1 in wick status:\n%s", out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !strings.Contains(out, "alarm:    hang: no output or new step for ") || !strings.Contains(out, "(alarm after 6s); "+want) {
		t.Errorf("wick status:\n%s", out)
	}
	if !strings.Contains(out, "RUNNING") {
		t.Errorf("a hung app is still RUNNING:\n%s", out)
	}
	if out := h.exec("describe", handle).stdout; !strings.Contains(out, want) {
		t.Errorf("wick describe:\n%s", out)
	}
	var d struct {
		Status spec.AppStatus `json:"status"`
	}
	r = h.exec("describe", "--json", handle)
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("describe --json: %v\n%s", err, r.stdout)
	}
	hg := d.Status.Hang
	if hg == nil || !slices.Equal(hg.Ranks, []string{"rank 1"}) || hg.Step != 2 || hg.Ahead != 3 || hg.After != after {
		t.Fatalf("describe --json hang: %+v\n%s", hg, r.stdout)
	}
	if !strings.Contains(r.stdout, `"kind": "hang"`) {
		t.Errorf("describe --json has no kind: %s", r.stdout)
	}
	// It was raised after the app was quiet for the hang time, not before.
	if quiet := time.Since(hg.Since); quiet < after {
		t.Errorf("raised after %v of quiet, want %v or more", quiet, after)
	}
	if out := h.exec("list").stdout; !strings.Contains(out, "hang: no output") {
		t.Errorf("wick list has no hang in its error column:\n%s", out)
	}
}

// TestAttachedRunSaysHang: an attached `wick run` says the hang alarm among the logs,
// once, when its app stops printing and stepping for its hang time.
func TestAttachedRunSaysHang(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(2*time.Minute))
	defer cancel()
	cmd := h.wickCmd(ctx, "run", "--hang-after", "2s", "utils.sh", "--", "sh", "-c", `echo "step 1 loss 2.5"; echo "step 2 loss 2.4"; sleep 120`)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGINT) // cancels the app
		_ = cmd.Wait()
	}()
	sc := bufio.NewScanner(stderr)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.HasPrefix(sc.Text(), "wick: hang: ") {
			break
		}
	}
	got := ""
	if len(seen) > 0 {
		got = seen[len(seen)-1]
	}
	if !strings.HasPrefix(got, "wick: hang: no output or new step for ") || !strings.HasSuffix(got, "(alarm after 2s); every rank stopped at step 2 (wick stack shows where)") {
		t.Fatalf("no hang line in the attached run's output:\n%s", strings.Join(seen, "\n"))
	}
	if !slices.Contains(seen, "sh/0 step 2 loss 2.4") {
		t.Errorf("the logs were not streamed before it:\n%s", strings.Join(seen, "\n"))
	}
}
