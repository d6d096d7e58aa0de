package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
)

// homeID identifies the WICK_HOME this scheduler works for on the containers it
// creates: the first 16 hex digits of the SHA-256 of its absolute path. The path
// itself is not written, the Engine's labels being readable by every user of it.
// "" without a state directory.
func (s *Scheduler) homeID() string { return homeIDOf(s.cfg.StateDir) }

// homeIDOf is the homeID of the state directory stateDir.
func homeIDOf(stateDir string) string {
	if stateDir == "" {
		return ""
	}
	dir, err := filepath.Abs(stateDir)
	if err != nil {
		dir = stateDir
	}
	sum := sha256.Sum256([]byte(filepath.Clean(dir)))
	return hex.EncodeToString(sum[:8])
}
