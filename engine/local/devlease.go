package local

import (
	"path/filepath"

	"github.com/wick-dev/wick/engine/gpus"
)

// leases are the machine-wide GPU leases of this state directory
// ($WICK_HOME/local/devices): a device handed to a replica of a running app is given
// to no other app until that app ends (see gpus.Leases). Like the rendezvous ports'
// reservations (rdzvport.go), a lease whose app has ended, or whose state is gone, is
// free: nothing has to remove it when the app ends, however it ends (kill -9 of its
// supervisor included: reconcile judges it gone).
func (s *Scheduler) leases() gpus.Leases {
	return gpus.Leases{
		Dir: filepath.Join(s.cfg.StateDir, "local", "devices"),
		Live: func(appID string) bool {
			if appID != filepath.Base(appID) {
				return false
			}
			dir := filepath.Join(s.appsDir(), appID)
			st, err := readState(dir)
			return err == nil && !reconcile(dir, st).State.Terminal()
		},
	}
}
