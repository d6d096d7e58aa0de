package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// Networks are guarded by two file locks, since the Engine itself allows two networks
// of one name (API 1.41 without CheckDuplicate) and removes a network that created, not
// yet started, containers refer to:
//   - networks.lock: held shared from ensuring the network until the app's containers
//     are started, and exclusive to remove a network, so that no launch loses its
//     network halfway;
//   - network-create.lock: exclusive around the check-then-create of a network.

// lockDir is where the locks live: the state directory, or a per-user temp directory.
func (s *Scheduler) lockDir() string {
	if s.cfg.StateDir != "" {
		return filepath.Join(s.cfg.StateDir, "docker")
	}
	return filepath.Join(os.TempDir(), "wick-docker-"+strconv.Itoa(os.Getuid()))
}

// lockNetworks takes networks.lock, shared for launches, exclusive for removals.
func (s *Scheduler) lockNetworks(ctx context.Context, exclusive bool) (func(), error) {
	return lockFile(ctx, filepath.Join(s.lockDir(), "networks.lock"), exclusive)
}

// ensureNetwork checks that the network exists and is a user-defined bridge, creating
// it when missing. It reports whether it created it. The caller holds networks.lock.
func (s *Scheduler) ensureNetwork(ctx context.Context, cli *client.Client, name string) (bool, error) {
	switch name {
	case "bridge", "default":
		return false, fmt.Errorf("network %q is Docker's default bridge, on which replicas cannot reach each other by name: choose a user-defined network (-cfg network=NAME, default %s)", name, DefaultNetwork)
	}
	if ok, err := s.checkNetwork(ctx, cli, name); ok || err != nil {
		return false, err
	}
	unlock, err := lockFile(ctx, filepath.Join(s.lockDir(), "network-create.lock"), true)
	if err != nil {
		return false, err
	}
	defer unlock()
	if ok, err := s.checkNetwork(ctx, cli, name); ok || err != nil {
		return false, err
	}
	res, err := cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{
		Driver: "bridge",
		Labels: map[string]string{LabelManaged: "true", LabelVersion: version()},
	})
	if err != nil {
		return false, fmt.Errorf("creating network %s: %s", name, engineMessage(s.engineErr(err)))
	}
	for _, w := range res.Warning {
		if strings.Contains(w, "already exists") {
			// Someone else made it at the same moment: keep theirs.
			_, _ = cli.NetworkRemove(context.WithoutCancel(ctx), res.ID, client.NetworkRemoveOptions{})
			_, err := s.checkNetwork(ctx, cli, name)
			return false, err
		}
	}
	return true, nil
}

// checkNetwork reports whether the network exists, and fails when it is not a bridge.
func (s *Scheduler) checkNetwork(ctx context.Context, cli *client.Client, name string) (bool, error) {
	res, err := cli.NetworkInspect(ctx, name, client.NetworkInspectOptions{})
	switch {
	case cerrdefs.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("network %s: %s", name, engineMessage(s.engineErr(err)))
	}
	if d := res.Network.Driver; d != "bridge" {
		return false, fmt.Errorf("network %s has driver %q, but local_docker needs a bridge network: remove it or choose another with -cfg network=NAME", name, d)
	}
	return true, nil
}

// removeNetworkIfUnused removes a network wick created once no container refers to it.
func (s *Scheduler) removeNetworkIfUnused(ctx context.Context, cli *client.Client, name string) error {
	unlock, err := s.lockNetworks(ctx, true)
	if err != nil {
		return err
	}
	defer unlock()
	res, err := cli.NetworkInspect(ctx, name, client.NetworkInspectOptions{})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil
		}
		return s.engineErr(err)
	}
	if res.Network.Labels[LabelManaged] != "true" || len(res.Network.Containers) > 0 {
		return nil
	}
	users, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("network", res.Network.ID)})
	if err != nil {
		return s.engineErr(err)
	}
	if len(users.Items) > 0 {
		return nil
	}
	if _, err := cli.NetworkRemove(ctx, res.Network.ID, client.NetworkRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("removing network %s: %s", name, engineMessage(s.engineErr(err)))
	}
	return nil
}
