package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/sched"
)

// TestLogLongLinesByteExact: lines longer than what a reader holds (3 MB, and 1.5 MB
// of progress bar redrawn with \r) are printed as stored by every plain view, the
// file copy and the line iterator alike; --json gives the start, cut, with the size.
func TestLogLongLinesByteExact(t *testing.T) {
	h := newHarness(t)
	script := `echo a; head -c 3000000 /dev/zero | tr '\0' y; echo; printf 'p1\r'; head -c 1500000 /dev/zero | tr '\0' z; printf '\rp3\r\n'; echo b`
	r := h.exec("run", "utils.sh", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	handle := strings.TrimSpace(r.stdout)
	ys, zs := strings.Repeat("y", 3000000), strings.Repeat("z", 1500000)
	// The prefix stays in place when a line is redrawn with \r (the last \r redraws
	// nothing and goes).
	want := "sh/0 a\nsh/0 " + ys + "\nsh/0 p1\rsh/0 " + zs + "\rsh/0 p3\nsh/0 b\n"
	for _, args := range [][]string{
		{handle + "/sh/0"},             // the stored file, copied
		{"--since", "1h", handle},      // the line iterator
		{"--regex", "^[apyb]", handle}, // the line iterator, filtered
	} {
		got := h.exec(append([]string{"log"}, args...)...)
		if got.code != 0 || got.stdout != want {
			t.Errorf("wick log %s: exit %d, %d bytes, want %d (stderr %s)", strings.Join(args, " "), got.code, len(got.stdout), len(want), got.stderr)
		}
	}
	js := h.exec("log", "--json", handle)
	var lines []sched.Line
	for _, s := range strings.Split(strings.TrimSpace(js.stdout), "\n") {
		var l sched.Line
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatalf("--json line of %d bytes: %v", len(s), err)
		}
		lines = append(lines, l)
	}
	if len(lines) != 4 || !lines[1].Cut || lines[1].Size != 3000000 || lines[1].Text != ys[:logs.MaxLine] ||
		!lines[2].Cut || lines[2].Size != int64(len("p1\r"+zs+"\rp3\r")) || lines[0].Cut || lines[3].Text != "b" {
		t.Fatalf("--json: %d lines", len(lines))
	}
}
