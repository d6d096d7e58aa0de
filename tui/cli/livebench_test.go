package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY returns a new pseudo-terminal: the master, read as a terminal emulator
// would, and the slave, a terminal for a child's output.
func openPTY(b testing.TB) (master, slave *os.File) {
	b.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		b.Skipf("no pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		b.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		b.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		b.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 160}); err != nil {
		b.Fatal(err)
	}
	return m, s
}

// BenchmarkPendingOnScreen measures how long a progress-bar update ("\r" and text, no
// newline) written by a replica takes to reach the terminal of an attached wick run:
// replica pipe, supervisor, log files, follower, the live printer, the pty. The
// baseline "cat" is the same replica (cat of a FIFO) writing to the terminal itself.
func BenchmarkPendingOnScreen(b *testing.B) {
	for _, name := range []string{"wick", "cat"} {
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			fifo := filepath.Join(dir, "bar")
			if err := unix.Mkfifo(fifo, 0o600); err != nil {
				b.Fatal(err)
			}
			master, slave := openPTY(b)
			defer master.Close()
			var cmd *exec.Cmd
			if name == "wick" {
				cmd = exec.Command(builtWick, "run", "utils.sh", "--", "cat", fifo)
				cmd.Env = append(os.Environ(), "WICK_HOME="+filepath.Join(dir, "state"), "HOME="+dir, "NO_COLOR=1")
			} else {
				cmd = exec.Command("cat", fifo)
			}
			cmd.Dir = dir
			cmd.Stderr, cmd.Stdout = slave, slave
			if name == "wick" {
				cmd.Stdout = nil // the handle, not on the terminal
			}
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			slave.Close()
			defer cmd.Process.Kill()
			// O_RDWR: the open does not wait for the reader.
			w, err := os.OpenFile(fifo, os.O_RDWR, 0)
			if err != nil {
				b.Fatal(err)
			}
			seen := make(chan int, 1024)
			go func() {
				buf := make([]byte, 64<<10)
				var acc []byte
				next := 0
				for {
					n, err := master.Read(buf)
					if err != nil {
						close(seen)
						return
					}
					acc = append(acc, buf[:n]...)
					for {
						mark := []byte(fmt.Sprintf("u%07d", next))
						i := bytes.Index(acc, mark)
						if i < 0 {
							break
						}
						acc = acc[i+len(mark):]
						seen <- next
						next++
					}
					if len(acc) > 1<<20 {
						acc = acc[len(acc)-64:]
					}
				}
			}()
			update := func(i int) time.Duration {
				t := time.Now()
				fmt.Fprintf(w, "\rtraining u%07d", i)
				select {
				case got, ok := <-seen:
					if !ok || got != i {
						b.Fatalf("update %d: saw %d (%v)", i, got, ok)
					}
				case <-time.After(30 * time.Second):
					b.Fatalf("update %d never reached the terminal", i)
				}
				return time.Since(t)
			}
			// The first update waits for the app to start: not part of the figure.
			update(0)
			var lat []time.Duration
			for b.Loop() {
				lat = append(lat, update(len(lat)+1))
			}
			w.WriteString("\n")
			w.Close()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				b.Fatal("the run did not end")
			}
			reportLatency(b, lat)
		})
	}
}

func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	s := append([]time.Duration(nil), lat...)
	slices.Sort(s)
	b.ReportMetric(float64(s[len(s)/2].Microseconds()), "µs-median")
	b.ReportMetric(float64(s[len(s)*99/100].Microseconds()), "µs-p99")
}
