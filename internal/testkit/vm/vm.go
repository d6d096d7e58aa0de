// Package vm boots a small Linux machine under qemu for tests that must crash a
// machine for real: power lost mid-write, what the guest's page cache held gone with
// it. The guest is Debian's cloud kernel and busybox (scripts/vm/fetch.sh puts them in
// ~/.cache/wick/vm), an initramfs the test writes, and one virtio disk, an ext4 image
// file on this machine that outlives the guest. A test runs a program in the guest,
// reads what it prints on the serial console, kills qemu with SIGKILL (the crash),
// then boots the guest again on the same disk: the kernel's own journal recovery runs
// when it mounts, as after a real crash.
//
// Only tests import it.
package vm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Kit is what a guest is made of: qemu, the kernel, busybox and the modules the guest
// loads to see its disk.
type Kit struct {
	Qemu    string
	Kernel  string
	Busybox string
	Modules []string // paths, in load order
	// Accel is qemu's accelerator: tcg (emulation, everywhere) unless WICK_VM_ACCEL
	// says kvm. It is not chosen by /dev/kvm being there: on this project's machines
	// /dev/kvm opens but a guest under it stops after "Probing EDD" (nested
	// virtualization), and tcg boots this guest in about 2 s of its own time.
	Accel string
}

// Find locates the kit: qemu-system-x86_64 on PATH, the rest in WICK_VM_DIR or
// ~/.cache/wick/vm. The error says what is missing and how to get it.
func Find() (Kit, error) {
	var k Kit
	q, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		return k, errors.New("qemu-system-x86_64 is not installed (make setup installs qemu-system-x86)")
	}
	k.Qemu = q
	dir := os.Getenv("WICK_VM_DIR")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return k, fmt.Errorf("vm kit: %w", err)
		}
		dir = filepath.Join(home, ".cache", "wick", "vm")
	}
	if _, err := os.Stat(filepath.Join(dir, "ready")); err != nil {
		return k, fmt.Errorf("no guest kernel in %s (make setup runs scripts/vm/fetch.sh)", dir)
	}
	k.Kernel, k.Busybox = filepath.Join(dir, "vmlinuz"), filepath.Join(dir, "busybox")
	names, err := os.ReadFile(filepath.Join(dir, "modules"))
	if err != nil {
		return k, fmt.Errorf("vm kit: %w", err)
	}
	for _, n := range strings.Fields(string(names)) {
		k.Modules = append(k.Modules, filepath.Join(dir, n))
	}
	k.Accel = "tcg"
	if os.Getenv("WICK_VM_ACCEL") == "kvm" {
		k.Accel = "kvm"
	}
	return k, nil
}

// initScript is the guest's /init. It mounts what busybox needs, loads the disk's
// driver, waits (10 s at most) for /dev/vda, mounts it on /mnt and runs /run.sh, the
// test's program, with the word after wick= on the kernel's command line as its
// argument. "wick: ready" and "wick: done RC" frame the program's output; the guest
// then powers off, which ends qemu.
const initScript = `#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules); do insmod /lib/$m || echo "wick: insmod $m failed"; done
i=0; while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
mount -t ext4 /dev/vda /mnt || echo "wick: mount failed"
mode=$(sed -n 's/.*wick=\([a-z]*\).*/\1/p' /proc/cmdline)
echo "wick: ready"
sh /run.sh "$mode"
echo "wick: done $?"
umount /mnt
sync
poweroff -f
`

// File is one file of the initramfs.
type File struct {
	Name string // path in the guest, without the leading slash
	Data []byte
	Mode uint32 // permission bits
}

// Initramfs writes to path a newc cpio archive holding busybox, the modules, /init
// and files (the test's program as /run.sh and what it runs). It is not compressed:
// the kernel copies it faster than it would inflate it, emulated.
func (k Kit) Initramfs(path string, files ...File) error {
	bb, err := os.ReadFile(k.Busybox)
	if err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	all := []File{{"bin/busybox", bb, 0o755}, {"init", []byte(initScript), 0o755}}
	var names []string
	for _, m := range k.Modules {
		b, err := os.ReadFile(m)
		if err != nil {
			return fmt.Errorf("initramfs: %w", err)
		}
		all = append(all, File{"lib/" + filepath.Base(m), b, 0o644})
		names = append(names, filepath.Base(m))
	}
	all = append(all, File{"modules", []byte(strings.Join(names, "\n") + "\n"), 0o644})
	all = append(all, files...)
	var buf bytes.Buffer
	w := cpioWriter{w: &buf}
	for _, d := range []string{"bin", "dev", "lib", "mnt", "proc", "sys", "tmp"} {
		w.entry(d, 0o040755, nil)
	}
	for _, f := range all {
		w.entry(f.Name, 0o100000|f.Mode, f.Data)
	}
	w.entry("TRAILER!!!", 0, nil)
	if w.err != nil {
		return fmt.Errorf("initramfs: %w", w.err)
	}
	return os.WriteFile(path, buf.Bytes(), 0o600)
}

// cpioWriter writes the "newc" format the kernel unpacks (Documentation/driver-api/
// early-userspace/buffer-format.rst): a 110-byte ASCII header, the name, the data,
// each padded to 4 bytes.
type cpioWriter struct {
	w   io.Writer
	ino int
	err error
}

func (c *cpioWriter) entry(name string, mode uint32, data []byte) {
	if c.err != nil {
		return
	}
	c.ino++
	nlink := 1
	if mode&0o040000 != 0 {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
	var b bytes.Buffer
	b.WriteString(hdr)
	b.WriteString(name)
	b.WriteByte(0)
	for b.Len()%4 != 0 {
		b.WriteByte(0)
	}
	b.Write(data)
	for b.Len()%4 != 0 {
		b.WriteByte(0)
	}
	_, c.err = c.w.Write(b.Bytes())
}

// Disk makes path an empty ext4 file system of size MiB, as mkfs.ext4 makes them
// (journal, delayed allocation: what a user's disk has).
func Disk(ctx context.Context, path string, mib int) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("disk: %w", err)
	}
	err = f.Truncate(int64(mib) << 20)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("disk: %w", err)
	}
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		mkfs = "/sbin/mkfs.ext4"
	}
	cmd := exec.CommandContext(ctx, mkfs, "-q", "-F", path)
	cmd.WaitDelay = time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("mkfs.ext4: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// Machine is a running guest.
type Machine struct {
	cmd   *exec.Cmd
	lines chan string
	done  chan struct{}
	mu    sync.Mutex
	out   []string // every console line so far, for failure messages (bounded)
}

// maxKeep bounds the console lines a Machine keeps for its Console.
const maxKeep = 2000

// Boot starts a guest on initrd and disk, running /run.sh with mode. The guest ends
// by itself (poweroff) or when Kill is called; ctx bounds it either way.
func (k Kit) Boot(ctx context.Context, initrd, disk, mode string) (*Machine, error) {
	args := []string{
		"-machine", "q35,accel=" + k.Accel, "-m", "768", "-smp", "1",
		"-nodefaults", "-display", "none", "-no-reboot", "-monitor", "none", "-serial", "stdio",
		"-kernel", k.Kernel, "-initrd", initrd,
		// no_timer_check: on a busy host the emulated timer can miss the kernel's
		// boot-time IO-APIC check, which then panics ("IO-APIC + timer doesn't
		// work!"); virtual machines skip that check.
		"-append", "console=ttyS0 panic=-1 loglevel=3 no_timer_check wick=" + mode,
		// cache=writeback: the guest's flushes reach the image file with fdatasync, as
		// a disk's write cache is flushed by the kernel's FLUSH; what the guest had not
		// flushed is in its own page cache and dies with qemu.
		"-drive", "file=" + disk + ",format=raw,if=virtio,cache=writeback",
	}
	cmd := exec.CommandContext(ctx, k.Qemu, args...)
	cmd.WaitDelay = 2 * time.Second
	// A test binary that dies (go test's -timeout panics it) takes its guest along:
	// else a writer guest runs on, alone, a core busy, until someone kills it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stdin = nil
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("qemu: %w", err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("qemu: %w", err)
	}
	m := &Machine{cmd: cmd, lines: make(chan string, 1<<16), done: make(chan struct{})}
	go func() {
		defer close(m.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := strings.TrimRight(sc.Text(), "\r")
			m.mu.Lock()
			if len(m.out) < maxKeep {
				m.out = append(m.out, line)
			}
			m.mu.Unlock()
			select {
			case m.lines <- line:
			default: // a reader that stopped reading must not stop the guest
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(m.done) }()
	return m, nil
}

// Lines is the guest's console, a line at a time; it is closed when qemu ends.
func (m *Machine) Lines() <-chan string { return m.lines }

// Console is what the guest printed so far (its first 2,000 lines), for messages.
func (m *Machine) Console() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return strings.Join(m.out, "\n")
}

// Kill is the crash: qemu gets SIGKILL, and whatever the guest had not written to its
// disk is gone. It returns once qemu has ended.
func (m *Machine) Kill() {
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.done
}

// Wait waits for the guest to end by itself, until ctx's deadline.
func (m *Machine) Wait(ctx context.Context) error {
	select {
	case <-m.done:
		return nil
	case <-ctx.Done():
		m.Kill()
		return fmt.Errorf("guest did not power off: %w", ctx.Err())
	}
}
