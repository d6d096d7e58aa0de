package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/wick-dev/wick/engine/sched"
)

// markerPath is the file Cancel writes into each container it stops.
//
// Docker keeps no trace of why a container stopped (a cancelled replica exits 143 or
// 137, or 0 if it handles SIGTERM, exactly like one that failed or finished), and labels
// cannot change after create. So Cancel copies this small file into every container it
// is about to stop, and Describe reads the stopped containers for it. The marker lives
// in the Engine with the container itself: it is seen by any process on any machine
// that reaches the Engine, survives Engine restarts, and goes away with the container
// on delete. Replicas that had ended before the cancel are not marked and keep their
// own state.
const markerPath = "/.wick-cancelled"

// markerTar is the tar stream that puts the marker at the container's root.
func markerTar(now time.Time) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	body := now.UTC().Format(time.RFC3339Nano) + "\n"
	_ = tw.WriteHeader(&tar.Header{Name: markerPath[1:], Mode: 0o444, Size: int64(len(body)), ModTime: now, Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte(body))
	_ = tw.Close()
	return buf.Bytes()
}

// hasMarker reports whether wick's cancel marker is in the container.
func hasMarker(ctx context.Context, cli *client.Client, id string) bool {
	_, err := cli.ContainerStatPath(ctx, id, client.ContainerStatPathOptions{Path: markerPath})
	return err == nil
}

// live reports whether a container has yet to end: it runs, restarts, is paused or was
// never started.
func live(state container.ContainerState) bool {
	switch state {
	case container.StateRunning, container.StateRestarting, container.StatePaused, container.StateCreated:
		return true
	}
	return false
}

// Cancel stops every container of the app concurrently: SIGTERM, then SIGKILL after
// the stop_timeout the app was launched with. Docker has no supervisor of ours to send
// the SIGKILL later, so Cancel returns once the Engine has stopped them all, which takes
// at most that grace period. Cancelling an app that has ended does nothing.
func (s *Scheduler) Cancel(ctx context.Context, appID string) error {
	cli, sums, _, err := s.appContainers(ctx, appID)
	if err != nil {
		return err
	}
	return s.stop(ctx, cli, sums, false)
}

// Kill is Cancel without the grace period (sched.Killer): every live container gets
// SIGKILL at once, so no TERM trap runs (a user who will not wait for a checkpoint).
// The replicas are marked cancelled as by Cancel. A container the Engine will not
// signal (one between two restarts) is stopped with a zero timeout.
func (s *Scheduler) Kill(ctx context.Context, appID string) error {
	cli, sums, _, err := s.appContainers(ctx, appID)
	if err != nil {
		return err
	}
	return s.stop(ctx, cli, sums, true)
}

// zero is a stop timeout of none: SIGKILL at once.
var zero = 0

// stop marks and stops the live containers among sums, concurrently; now kills them
// without the grace period.
func (s *Scheduler) stop(ctx context.Context, cli *client.Client, sums []container.Summary, now bool) error {
	// A listing during the stop may keep a replica as ended and not cancelled.
	defer s.forgetSums(sums)
	marker := markerTar(time.Now())
	errs := make([]error, len(sums))
	err := forEach(ctx, len(sums), func(i int) error {
		c := sums[i]
		if !live(c.State) {
			return nil
		}
		mark := func() error {
			_, err := cli.CopyToContainer(ctx, c.ID, client.CopyToContainerOptions{DestinationPath: "/", Content: bytes.NewReader(marker)})
			return err
		}
		// Mark first, so that nobody sees the stopped replica without its mark. A
		// container the Engine will not write into now (one restarting) is marked
		// once stopped.
		marked := mark()
		if c.State == container.StatePaused {
			_, _ = cli.ContainerUnpause(ctx, c.ID, client.ContainerUnpauseOptions{})
		}
		var err error
		switch {
		case now && (c.State == container.StateRunning || c.State == container.StatePaused): // unpaused above
			// SIGKILL only: ContainerStop would send the stop signal first.
			_, err = cli.ContainerKill(ctx, c.ID, client.ContainerKillOptions{Signal: "KILL"})
			if cerrdefs.IsConflict(err) { // it stopped or began restarting meanwhile
				_, err = cli.ContainerStop(ctx, c.ID, client.ContainerStopOptions{Timeout: &zero})
			}
		case now:
			_, err = cli.ContainerStop(ctx, c.ID, client.ContainerStopOptions{Timeout: &zero})
		default:
			_, err = cli.ContainerStop(ctx, c.ID, client.ContainerStopOptions{})
		}
		if err != nil && !cerrdefs.IsNotFound(err) {
			errs[i] = fmt.Errorf("stopping %s: %s", trimSlash(first(c.Names)), engineMessage(s.engineErr(err)))
			return nil
		}
		if marked != nil {
			marked = mark()
		}
		if marked != nil && !cerrdefs.IsNotFound(marked) {
			errs[i] = fmt.Errorf("%s stopped, but it could not be marked cancelled: %s", trimSlash(first(c.Names)), engineMessage(s.engineErr(marked)))
		}
		return nil
	})
	if err != nil {
		return err
	}
	return joinErrs(errs...)
}

// first returns the first name of a container, or "".
func first(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// Delete removes the app's containers, and its network when wick created it and no
// other container uses it. An app with live containers is refused with ErrRunning
// unless force, which cancels it first. Workspace images are kept: later runs reuse
// them.
func (s *Scheduler) Delete(ctx context.Context, appID string, force bool) error {
	cli, sums, _, err := s.appContainers(ctx, appID)
	if err != nil {
		return err
	}
	n := 0
	for _, c := range sums {
		if live(c.State) && c.State != container.StateCreated {
			n++
		}
	}
	if n > 0 {
		if !force {
			return fmt.Errorf("%s: %w (%d of %d containers): cancel it first, or force", appID, sched.ErrRunning, n, len(sums))
		}
		if err := s.stop(ctx, cli, sums, false); err != nil {
			return err
		}
	}
	networks := map[string]bool{}
	for _, c := range sums {
		if c.HostConfig.NetworkMode != "" {
			networks[c.HostConfig.NetworkMode] = true
		}
	}
	defer s.forgetSums(sums)
	errs := make([]error, len(sums))
	err = forEach(ctx, len(sums), func(i int) error {
		err := removeContainer(ctx, cli, sums[i].ID)
		if err != nil && !cerrdefs.IsNotFound(err) {
			errs[i] = fmt.Errorf("removing %s: %s", trimSlash(first(sums[i].Names)), engineMessage(s.engineErr(err)))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := joinErrs(errs...); err != nil {
		return err
	}
	for name := range networks {
		if err := s.removeNetworkIfUnused(ctx, cli, name); err != nil {
			return err
		}
	}
	return nil
}

// forgetSums drops the ended cache's entries of the containers sums.
func (s *Scheduler) forgetSums(sums []container.Summary) {
	ids := make([]string, len(sums))
	for i, c := range sums {
		ids[i] = c.ID
	}
	s.forgetReplicas(ids...)
}

// removeTries is how often Delete asks the Engine to remove a container whose remove
// failed on the Engine's side (a 500): under load its storage driver fails one now and
// then ("fuse-overlayfs failed to remove root filesystem: ... directory not empty",
// "did not receive an exit event") and the next passes.
const removeTries = 4

// removeContainer removes a container, force and its anonymous volumes, asking again
// after a pause when the Engine failed it on its side.
func removeContainer(ctx context.Context, cli *client.Client, id string) error {
	pause := 200 * time.Millisecond
	for try := 1; ; try++ {
		_, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err == nil || !cerrdefs.IsInternal(err) || try == removeTries {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause *= 2
	}
}
