package local

import (
	"fmt"

	"github.com/wick-dev/wick/engine/safefs"
)

// lockApp takes the lock of an app's directory (flock, exclusive) and returns its
// release. It is held by the supervisor while it takes the app over (reads whether
// the app is still its launcher's, saves itself as its owner) and by a reader that
// would save the verdict of a dead launch (endLaunch) while it reads the state again
// and saves: the verdict is never saved over a supervisor that took the app over, and
// a supervisor never takes over an app judged dead. The lock goes with the process:
// one killed holding it holds it no more.
func lockApp(appDir string) (func(), error) {
	unlock, err := safefs.LockDir(appDir)
	if err != nil {
		return nil, fmt.Errorf("lock app: %w", err)
	}
	return unlock, nil
}
