package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// Networks are guarded by two file locks, since the Engine itself allows two networks
// of one name (API 1.41 without CheckDuplicate) and removes a network that created, not
// yet started, containers refer to:
//   - networks.lock: held shared from ensuring the network until the app's containers
//     are started, and exclusive to remove a network, so that no launch loses its
//     network halfway;
//   - network-create.lock: exclusive around the check-then-create of a network.

// lockDir is where the locks live: a per-user temp directory, whatever the state
// directory. The Engine's networks are the machine's: with a lock per WICK_HOME, a
// launch from one home lost the network "wick" to another home's removal between
// ensuring it and starting its containers ("network wick not found").
func (s *Scheduler) lockDir() string {
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
	// Engine 20.10 at API 1.41 lets two processes that do not share the lock (another
	// state directory, another machine) each make a network of the same name, and then
	// refuses both as ambiguous. All keep the oldest.
	keep, err := s.dedupeNetworks(ctx, cli, name)
	if err != nil {
		return false, err
	}
	return keep == res.ID, nil
}

// dedupeNetworks removes the wick-made networks named name but the oldest, when
// nothing uses them, and returns the id of the one kept.
func (s *Scheduler) dedupeNetworks(ctx context.Context, cli *client.Client, name string) (string, error) {
	res, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: client.Filters{}.Add("name", name)})
	if err != nil {
		return "", s.engineErr(err)
	}
	var same []network.Summary
	for _, n := range res.Items {
		if n.Name == name {
			same = append(same, n)
		}
	}
	if len(same) == 0 {
		return "", fmt.Errorf("network %s vanished as it was made", name)
	}
	slices.SortFunc(same, func(a, b network.Summary) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	for _, n := range same[1:] {
		if n.Labels[LabelManaged] != "true" {
			continue
		}
		users, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("network", n.ID)})
		if err != nil || len(users.Items) > 0 {
			continue
		}
		_, _ = cli.NetworkRemove(context.WithoutCancel(ctx), n.ID, client.NetworkRemoveOptions{})
	}
	return same[0].ID, nil
}

// checkNetwork reports whether the network exists, and fails when it is not a bridge.
func (s *Scheduler) checkNetwork(ctx context.Context, cli *client.Client, name string) (bool, error) {
	res, err := cli.NetworkInspect(ctx, name, client.NetworkInspectOptions{})
	if err != nil && strings.Contains(err.Error(), "ambiguous") {
		// Two networks of this name (see dedupeNetworks): keep the oldest.
		if _, derr := s.dedupeNetworks(ctx, cli, name); derr == nil {
			res, err = cli.NetworkInspect(ctx, name, client.NetworkInspectOptions{})
		}
	}
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
