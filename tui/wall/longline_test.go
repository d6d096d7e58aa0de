package wall_test

import "testing"

// TestWallCommittedLongLine: a 3 MB line shows its start on one row, marked, with its
// full length (rounded down to KiB: 2,999,296 bytes).
func TestWallCommittedLongLine(t *testing.T) {
	e := newEnv(t)
	h := e.run(shApp("long", 1, `echo before; head -c 3000000 /dev/zero | tr '\0' y; echo; echo after`))
	e.wait(h)
	d := e.open(h, 120, 30, nil)
	d.waitFor("end of logs", "after", "yyyyyyyy", "[line of 2.86MiB: the rest is in the logs]")
}
