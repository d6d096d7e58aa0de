package pystack

import (
	"strings"
	"testing"
)

// gdb's py-bt of rank 1 of examples/failures/hang.py (gdb 13.1, Debian's
// python3.11-dbg extension, Python 3.11), as it printed it.
const gdbHang = `__GI___clock_nanosleep (clock_id=clock_id@entry=1, flags=flags@entry=1, req=req@entry=0x7ffc52c8f850, rem=rem@entry=0x0) at ../sysdeps/unix/sysv/linux/clock_nanosleep.c:71
71	../sysdeps/unix/sysv/linux/clock_nanosleep.c: No such file or directory.
Traceback (most recent call first):
  <built-in method sleep of module object at remote 0x7f0fe17f3470>
  File "/tmp/wf/hang.py", line 22, in slow_io
    time.sleep(3600)
  File "/tmp/wf/hang.py", line 34, in main
    slow_io()
  File "/tmp/wf/hang.py", line 42, in <module>
    main()
[Inferior 1 (process 6138) detached]
`

func TestParseGDB(t *testing.T) {
	f := parseGDB([]byte(gdbHang))
	if len(f) != 3 || f[0] != (Frame{"slow_io", "/tmp/wf/hang.py", 22}) || f[2].Func != "<module>" {
		t.Fatalf("frames %+v", f)
	}
	if Top(f) != "slow_io in hang.py:22" {
		t.Errorf("top %q", Top(f))
	}
	if f := parseGDB([]byte("Undefined command: \"py-bt\".  Try \"help\".\n")); len(f) != 0 {
		t.Errorf("frames of an error: %+v", f)
	}
}

// Ranks at the same place are one group, named as ranks in order.
func TestGroupByTop(t *testing.T) {
	coll := []Frame{{"all_reduce", "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", 1541}}
	sleep := []Frame{{"slow_io", "/w/hang.py", 22}}
	g := GroupByTop([]Dump{
		{Target: Target{11, "rank 3"}, Frames: coll},
		{Target: Target{12, "rank 2"}, Frames: sleep},
		{Target: Target{10, "rank 0"}, Frames: coll},
	})
	var lines []string
	for _, x := range g {
		lines = append(lines, Label(x.Labels)+": "+x.Top)
	}
	want := "ranks 0,3: all_reduce in distributed_c10d.py:1541; rank 2: slow_io in hang.py:22"
	if got := strings.Join(lines, "; "); got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
