// Package safefs creates and opens wick's files privately and without following
// symbolic links an attacker could plant.
//
// Everything wick creates is private: directories 0700, files 0600, whatever the
// umask (the mode is set explicitly after creation). Paths under a log directory are
// walked one component at a time from "/" with O_NOFOLLOW, and every directory on the
// way must be trusted: owned by root or by us, and writable by nobody else unless it
// is sticky (as /tmp is; its entries are then checked in turn). Log files are created
// with O_EXCL, so that wick never truncates or writes through a file it did not
// create.
package safefs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Modes of what wick creates.
const (
	DirMode  = 0o700
	FileMode = 0o600
)

// ErrUntrusted is a directory another user could change under wick: one owned by
// someone else, or writable by others without the sticky bit, or a symbolic link
// where a directory was created.
var ErrUntrusted = errors.New("not safe")

// MkdirAll creates path and its missing parents with mode 0700. Directories that
// exist are left as they are. It is for wick's own state ($WICK_HOME), whose
// location the user chose.
func MkdirAll(path string) error {
	st, err := os.Stat(path)
	if err == nil {
		if !st.IsDir() {
			return fmt.Errorf("%s: not a directory", path)
		}
		return nil
	}
	if parent := filepath.Dir(path); parent != path {
		if err := MkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(path, DirMode); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return err
	}
	return os.Chmod(path, DirMode)
}

// Tighten makes an existing directory of ours 0700, so that a state directory made
// by an older wick (0755) turns private on first use. A missing directory, or one
// owned by someone else, is left alone.
func Tighten(path string) error {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() || st.Mode&0o077 == 0 {
		return nil
	}
	if err := unix.Chmod(path, DirMode); err != nil {
		return fmt.Errorf("make %s private: %w", path, err)
	}
	return nil
}

// WriteFileAtomic replaces dir/name with data, mode 0600: readers see the old or the
// new file, never a mix, and the change survives a crash of the machine once it
// returns. The temporary file is in dir so that rename stays on one file system;
// rename replaces a symbolic link at dir/name rather than following it. The order is
// what durability needs: write the temporary file, fsync it (its data on disk before
// its name), rename it over dir/name, fsync dir (the rename on disk). Without the
// first fsync a power loss could leave dir/name empty; without the second, the old
// file.
func WriteFileAtomic(dir, name string, data []byte) error {
	return writeFileAtomic(osFS{}, dir, name, data, true)
}

// fileSys is what writeFileAtomic does to the file system: the real one (osFS), or a
// test's recorder of the order of the calls.
type fileSys interface {
	CreateTemp(dir, pattern string) (file, error)
	Rename(from, to string) error
	Remove(path string) error
	SyncDir(dir string) error
}

// file is the temporary file of writeFileAtomic.
type file interface {
	Name() string
	Write(b []byte) (int, error)
	Chmod(mode os.FileMode) error
	Sync() error
	Close() error
}

func writeFileAtomic(fsys fileSys, dir, name string, data []byte, syncDir bool) error {
	tmp, err := prepare(fsys, dir, name, data)
	if err != nil {
		return err
	}
	return commit(fsys, tmp, dir, name, syncDir)
}

// prepare writes data into a new temporary file beside dir/name and fsyncs it; it
// returns the file's path, or removes it and returns why it could not.
func prepare(fsys fileSys, dir, name string, data []byte) (string, error) {
	f, err := fsys.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(FileMode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = fsys.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// commit renames the prepared file tmp over dir/name, then fsyncs dir if syncDir.
func commit(fsys fileSys, tmp, dir, name string, syncDir bool) error {
	if err := fsys.Rename(tmp, filepath.Join(dir, name)); err != nil {
		_ = fsys.Remove(tmp)
		return err
	}
	if !syncDir {
		return nil
	}
	return fsys.SyncDir(dir)
}

// Prepared is WriteFileAtomic in two steps: the new file written and fsynced beside
// its name (PrepareFile), then renamed over it and its directory fsynced (Commit), so
// that the first step can run while what must be on disk before the new file (other
// files' fsyncs) is still being written.
type Prepared struct {
	dir, name, tmp string
}

// PrepareFile writes data into a temporary file beside dir/name and fsyncs it.
func PrepareFile(dir, name string, data []byte) (*Prepared, error) {
	tmp, err := prepare(osFS{}, dir, name, data)
	if err != nil {
		return nil, err
	}
	return &Prepared{dir: dir, name: name, tmp: tmp}, nil
}

// Commit renames the prepared file over its name and fsyncs its directory.
func (p *Prepared) Commit() error { return commit(osFS{}, p.tmp, p.dir, p.name, true) }

// Replace renames the prepared file over its name without the fsync of its directory:
// readers and a machine that crashes find the old file or the new one, never a mix,
// but the crash may take the rename back. It is for a file that a later Commit in the
// same directory makes durable before anyone is told (launch.json, then state.json).
func (p *Prepared) Replace() error { return commit(osFS{}, p.tmp, p.dir, p.name, false) }

// Discard removes the prepared file, where it is not to be put in place.
func (p *Prepared) Discard() { _ = os.Remove(p.tmp) }

// osFS is the real file system.
type osFS struct{}

func (osFS) CreateTemp(dir, pattern string) (file, error) { return os.CreateTemp(dir, pattern) }
func (osFS) Rename(from, to string) error                 { return os.Rename(from, to) }
func (osFS) Remove(path string) error                     { return os.Remove(path) }
func (osFS) SyncDir(dir string) error                     { return SyncDir(dir) }

// SyncDir fsyncs a directory: the names created, renamed or removed in it are on disk
// once it returns.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if errors.Is(err, unix.EINVAL) {
		err = nil // a file system that cannot sync a directory (some FUSE ones): nothing to do
	}
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// OpenAppend opens path for appending, creating it 0600; it does not follow a
// symbolic link at path.
func OpenAppend(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|unix.O_NOFOLLOW, FileMode)
	if err != nil {
		return nil, err
	}
	if err := fixMode(f, FileMode); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// fixMode sets a file's mode when the umask made it differ.
func fixMode(f *os.File, mode os.FileMode) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Mode().Perm() != mode {
		return f.Chmod(mode)
	}
	return nil
}

// components splits an absolute, clean path into its names.
func components(path string) ([]string, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("%s: not an absolute path", path)
	}
	path = filepath.Clean(path)
	if path == "/" {
		return nil, nil
	}
	return strings.Split(path[1:], "/"), nil
}

// checkDir tells whether the open directory fd (at path) is trusted.
func checkDir(fd int, path string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("%s: %w: not a directory", path, ErrUntrusted)
	}
	if st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s: %w: owned by another user (uid %d)", path, ErrUntrusted, st.Uid)
	}
	if st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0 {
		return fmt.Errorf("%s: %w: other users can write it (mode %#o, not sticky)", path, ErrUntrusted, st.Mode&0o7777)
	}
	return nil
}

// openDirAt opens name in the directory dirfd without following a symbolic link, and
// checks that it is trusted.
func openDirAt(dirfd int, name, path string) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			if err == unix.ELOOP || err == unix.ENOTDIR {
				return -1, fmt.Errorf("%s: %w: a symbolic link or not a directory", path, ErrUntrusted)
			}
			return -1, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		if err := checkDir(fd, path); err != nil {
			unix.Close(fd)
			return -1, err
		}
		return fd, nil
	}
}

// walk opens path one component at a time from "/", creating missing directories
// (0700) when create is set, and returns the last directory open.
func walk(path string, create bool) (*os.File, error) {
	names, err := components(path)
	if err != nil {
		return nil, err
	}
	fd, err := openDirAt(unix.AT_FDCWD, "/", "/")
	if err != nil {
		return nil, err
	}
	cur := "/"
	for _, name := range names {
		next := filepath.Join(cur, name)
		nfd, err := openDirAt(fd, name, next)
		if create && errors.Is(err, unix.ENOENT) {
			if err = mkdirAt(fd, name, next); err == nil || errors.Is(err, fs.ErrExist) {
				nfd, err = openDirAt(fd, name, next)
			}
		}
		unix.Close(fd)
		if err != nil {
			return nil, err
		}
		fd, cur = nfd, next
	}
	return os.NewFile(uintptr(fd), path), nil
}

func mkdirAt(dirfd int, name, path string) error {
	if err := unix.Mkdirat(dirfd, name, DirMode); err != nil {
		return &fs.PathError{Op: "mkdir", Path: path, Err: err}
	}
	// The umask may have taken bits away; never added any.
	if err := unix.Fchmodat(dirfd, name, DirMode, 0); err != nil {
		return &fs.PathError{Op: "chmod", Path: path, Err: err}
	}
	return nil
}

// OpenDir opens the directory at the absolute path without following symbolic links,
// checking that every directory from "/" down is trusted.
func OpenDir(path string) (*os.File, error) { return walk(path, false) }

// OpenDirIn opens the directory at path, which lies below the open directory parent
// (opened by OpenDir), as OpenDir would: the components of path past parent's name
// are opened one at a time from parent, following no symbolic link, each checked.
// Opening many directories below one parent (the replicas' log directories of a
// role) walks the parent's own path once. A path not below parent is an error.
func OpenDirIn(parent *os.File, path string) (*os.File, error) {
	base := filepath.Clean(parent.Name())
	path = filepath.Clean(path)
	rel, ok := strings.CutPrefix(path, base)
	if base == "/" {
		rel, ok = strings.TrimSuffix(path, "/"), strings.HasPrefix(path, "/")
	}
	if !ok || (rel != "" && rel[0] != '/') {
		return nil, fmt.Errorf("%s: not below %s", path, base)
	}
	fd, cur := int(parent.Fd()), base
	for _, name := range strings.Split(rel, "/")[1:] {
		if name == "." || name == ".." {
			return nil, fmt.Errorf("%s: not below %s", path, base)
		}
		next := filepath.Join(cur, name)
		nfd, err := openDirAt(fd, name, next)
		if fd != int(parent.Fd()) {
			unix.Close(fd)
		}
		if err != nil {
			return nil, err
		}
		fd, cur = nfd, next
	}
	if fd == int(parent.Fd()) {
		// path is parent itself: a descriptor of its own.
		nfd, err := openDirAt(fd, ".", path)
		if err != nil {
			return nil, err
		}
		fd = nfd
	}
	return os.NewFile(uintptr(fd), path), nil
}

// MkdirAllDir is OpenDir creating what is missing (0700) on the way.
func MkdirAllDir(path string) (*os.File, error) { return walk(path, true) }

// Mkdir creates the directory name in dir (0700) and opens it, failing if anything
// exists at that name.
func Mkdir(dir *os.File, name string) (*os.File, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	path := filepath.Join(dir.Name(), name)
	if err := mkdirAt(int(dir.Fd()), name, path); err != nil {
		return nil, err
	}
	fd, err := openDirAt(int(dir.Fd()), name, path)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// CreateExcl creates the file name in dir for reading and writing, mode 0600. It
// fails if anything exists at that name, a symbolic link included.
func CreateExcl(dir *os.File, name string) (*os.File, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	path := filepath.Join(dir.Name(), name)
	for {
		fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, FileMode)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "create", Path: path, Err: err}
		}
		f := os.NewFile(uintptr(fd), path)
		if err := fixMode(f, FileMode); err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	}
}

func validName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return fmt.Errorf("invalid file name %q", name)
	}
	return nil
}

// Resolve returns path with the symbolic links of its existing part resolved, so that
// a later OpenDir, which follows none, finds it. The part that does not exist yet is
// appended as it is.
func Resolve(path string) (string, error) {
	path = filepath.Clean(path)
	var rest []string
	for p := path; ; p = filepath.Dir(p) {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			for i := len(rest) - 1; i >= 0; i-- {
				r = filepath.Join(r, rest[i])
			}
			return r, nil
		}
		if !errors.Is(err, fs.ErrNotExist) || p == filepath.Dir(p) {
			return "", err
		}
		rest = append(rest, filepath.Base(p))
	}
}

// CheckPath checks, creating nothing, that the existing part of path is made of
// trusted directories, and that its nearest existing directory is writable by us.
func CheckPath(path string) error {
	names, err := components(path)
	if err != nil {
		return err
	}
	fd, err := openDirAt(unix.AT_FDCWD, "/", "/")
	if err != nil {
		return err
	}
	defer func() { unix.Close(fd) }()
	cur := "/"
	for _, name := range names {
		next := filepath.Join(cur, name)
		nfd, err := openDirAt(fd, name, next)
		if errors.Is(err, unix.ENOENT) {
			break
		}
		if err != nil {
			return err
		}
		unix.Close(fd)
		fd, cur = nfd, next
	}
	if err := unix.Faccessat(fd, ".", unix.W_OK|unix.X_OK, 0); err != nil {
		return fmt.Errorf("%s is not writable (%v)", cur, err)
	}
	return nil
}

// ErrTooLarge is a file larger than its reader's limit.
var ErrTooLarge = errors.New("too large")

// ReadFile reads the regular file at path, refusing anything else (a FIFO that would
// block, /dev/zero that never ends, a symbolic link) and a file larger than max bytes,
// before reading any of it.
func ReadFile(path string, max int64) ([]byte, error) {
	return readRegular(path, max, unix.O_NOFOLLOW)
}

// ReadFileHead reads the first n bytes of the regular file at path (all of it if it is
// shorter), refusing what ReadFile refuses but a file's size: for a reader that needs
// the start of a large file only.
func ReadFileHead(path string, n int64) ([]byte, error) {
	return readRegularHead(path, n, unix.O_NOFOLLOW, true)
}

// ReadUserFile reads a file the user keeps and names (their settings, a theme), with
// the limits of ReadFile, except that a symbolic link is followed (dotfiles are often
// links): what it ends at must still be a regular file.
func ReadUserFile(path string, max int64) ([]byte, error) {
	return readRegular(path, max, 0)
}

// readRegular reads the regular file at path, opened with the extra flags.
func readRegular(path string, max int64, flags int) ([]byte, error) {
	return readRegularHead(path, max, flags, false)
}

// readRegularHead is readRegular, which, given head, reads the file's first max bytes
// whatever its size.
func readRegularHead(path string, max int64, flags int, head bool) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO with no writer must not block; the type check below
	// then refuses it.
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK|flags, 0)
	if err != nil {
		if flags&unix.O_NOFOLLOW != 0 && errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("%s: a symbolic link, not a regular file", path)
		}
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, kind(st.Mode()))
	}
	if head {
		data := make([]byte, min(st.Size(), max))
		n, err := io.ReadFull(f, data)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return nil, err
		}
		return data[:n], nil
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%s: %w (%d bytes, the limit is %d)", path, ErrTooLarge, st.Size(), max)
	}
	// The file may grow while it is read: never more than max. The buffer starts at
	// the file's size, and a byte more to see it grow: io.ReadAll's starts at 512
	// bytes and doubles, copying a thousand-replica app's 2 MB of state a dozen times.
	data := make([]byte, 0, st.Size()+1)
	r := io.LimitReader(f, max+1)
	for {
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // it grew: more room, up to max+1
		}
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: %w (more than %d bytes)", path, ErrTooLarge, max)
	}
	return data, nil
}

// kind names a file type for messages.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "mode " + m.String()
}

// LockDir takes dir's flock (exclusive), waiting for it, and returns its release. The
// lock goes with the process: one killed while holding it holds it no more. dir is
// not followed if it is a symbolic link.
func LockDir(dir string) (func(), error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "flock", Path: dir, Err: err}
	}
	return func() { unix.Close(fd) }, nil
}
