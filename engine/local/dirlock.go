package local

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// lockApp takes the lock of an app's directory (flock, exclusive) and returns its
// release. It is held by the supervisor while it takes the app over (reads whether
// the app is still its launcher's, saves itself as its owner) and by a reader that
// would save the verdict of a dead launch (endLaunch) while it reads the state again
// and saves: the verdict is never saved over a supervisor that took the app over, and
// a supervisor never takes over an app judged dead. The lock goes with the process:
// one killed holding it holds it no more.
func lockApp(appDir string) (func(), error) {
	fd, err := unix.Open(appDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("lock app: %w", err)
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("lock app %s: %w", appDir, os.NewSyscallError("flock", err))
	}
	return func() { unix.Close(fd) }, nil
}
