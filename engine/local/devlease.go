package local

import (
	"path/filepath"

	"github.com/wick-dev/wick/engine/gpus"
)

func init() { gpus.RegisterKind(gpus.KindLocal, liveLease) }

// leases are the machine-wide GPU leases of this state directory
// ($WICK_HOME/local/devices): a device handed to a replica of a running app is given
// to no other app until that app ends (see gpus.Leases), local_docker's apps included.
// Like the rendezvous ports' reservations (rdzvport.go), a lease whose app has ended,
// or whose state is gone, is free: nothing has to remove it when the app ends,
// however it ends (kill -9 of its supervisor included: reconcile judges it gone).
func (s *Scheduler) leases() gpus.Leases {
	return gpus.At(s.cfg.StateDir, gpus.KindLocal)
}

// liveLease says whether the local app holding le, of the state directory stateDir,
// has not ended.
func liveLease(stateDir string, le gpus.Lease) bool {
	dir := filepath.Join(stateDir, "local", "apps", le.AppID)
	st, err := readState(dir)
	return err == nil && !reconcile(dir, st).State.Terminal()
}
