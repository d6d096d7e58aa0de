package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/wick-dev/wick/engine/gpus"
	"github.com/wick-dev/wick/engine/spec"
)

// leaseKind is the kind of local_docker's device leases (gpus.Leases).
const leaseKind = "docker"

func init() { gpus.RegisterKind(leaseKind, liveLease) }

// launchGrace is how long a lease of an app that has no container yet holds its
// devices: the launch that took it is creating them (callTimeout bounds the creates;
// a launch that fails releases its leases at once).
const launchGrace = callTimeout + time.Minute

// liveTimeout bounds the Engine call that tells whether a lease's app still runs.
const liveTimeout = 10 * time.Second

// leases are the machine-wide GPU leases of this state directory, shared with the
// local schedulers ($WICK_HOME/local/devices): a GPU handed to a container of a
// running app is given to no other app of this machine, docker or local, until every
// container of that app has exited or is gone.
func (s *Scheduler) leases() gpus.Leases {
	return gpus.At(s.cfg.StateDir, leaseKind)
}

// engineHere says whether the Engine wick talks to runs on this machine (a Unix
// socket): only then are the GPUs it hands out this machine's, leased with the local
// schedulers'. Another machine's Engine gets device counts or its pool as asked.
func engineHere() bool {
	ep, err := resolveEndpoint(os.Getenv)
	return err == nil && (ep.Host == "" || strings.HasPrefix(ep.Host, "unix://"))
}

// liveLease says whether the docker app holding le, of the state directory stateDir,
// still runs: one of its containers (of that WICK_HOME) has not exited, or it has no
// container yet and the lease is younger than launchGrace (its launch is creating
// them). An Engine that is not there runs nothing; one that does not answer in time
// is taken to run the app.
func liveLease(stateDir string, le gpus.Lease) bool {
	ep, err := resolveEndpoint(os.Getenv)
	if err != nil {
		return true
	}
	cli, tr, err := newClient(ep)
	if err != nil {
		return true
	}
	defer func() {
		cli.Close()
		tr.CloseIdleConnections()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), liveTimeout)
	defer cancel()
	f := client.Filters{}.Add("label", LabelAppID+"="+le.AppID)
	if home := homeIDOf(stateDir); home != "" {
		f.Add("label", LabelHome+"="+home)
	}
	res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return !engineAbsent(err)
	}
	for _, c := range res.Items {
		switch c.State {
		case container.StateExited, container.StateDead, container.StateRemoving:
		default:
			return true
		}
	}
	return len(res.Items) == 0 && time.Since(le.Taken) < launchGrace
}

// engineAbsent says whether err is the Engine's socket missing or refusing: no
// Engine runs there, so no container does.
func engineAbsent(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) ||
		strings.Contains(err.Error(), "no such file or directory") || strings.Contains(err.Error(), "connection refused")
}

// assignGPUs decides the GPUs of each container: role -> replica -> its devices,
// and the devices to lease to the app at launch. An app given its pool (a sweep's
// queue) hands it out, every container its own slice (gpus.Replicas). Otherwise,
// when the Engine is this machine's and the app's roles ask for GPUs, each replica
// gets resource.gpu devices of its own from this machine's pool (gpus.Pool: the
// launcher's CUDA_VISIBLE_DEVICES entries, else nvidia-smi's GPUs) less those other
// running apps hold, as the local schedulers do with auto_set_cuda_visible_devices:
// a device request for those very devices, where a count gives every container the
// same first GPUs. A pool too small for the app, or an Engine elsewhere, keeps
// TorchX's counts, with warnings; too few free devices is an error naming who holds
// them. Devices another running app holds are a *gpus.BusyError.
func (s *Scheduler) assignGPUs(ctx context.Context, appID string, app *spec.AppDef, given []string) (map[string][][]string, []string, []string, error) {
	here := s.cfg.StateDir != "" && engineHere() // no state directory: nowhere to lease
	if len(given) > 0 {
		devs, err := gpus.Replicas(app, given)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("local_docker: %w", err)
		}
		if !here {
			return devs, nil, nil, nil
		}
		if err := s.leases().Busy(appID, given); err != nil {
			return nil, nil, nil, err
		}
		return devs, given, nil, nil
	}
	want := 0
	var need []int
	for _, r := range app.Roles {
		for range r.NumReplicas {
			if r.Resource.GPU > 0 {
				need = append(need, r.Resource.GPU)
				want += r.Resource.GPU
			}
		}
	}
	if want == 0 {
		return nil, nil, nil, nil
	}
	if !here {
		return nil, nil, gpuWarnings(ctx, app), nil
	}
	pool := gpus.Pool(ctx)
	if _, ok := gpus.Split(pool, need); !ok {
		return nil, nil, gpuWarnings(ctx, app), nil
	}
	free := s.leases().Free(pool)
	parts, ok := gpus.Split(free, need)
	if !ok {
		return nil, nil, nil, fmt.Errorf("the app asks for %d GPUs and %d of this machine's %d are free (wait for those apps to end): %w",
			want, len(free), len(pool), s.leases().Busy(appID, pool))
	}
	out := map[string][][]string{}
	var leased []string
	i := 0
	for _, r := range app.Roles {
		if r.Resource.GPU <= 0 {
			continue
		}
		for range r.NumReplicas {
			out[r.Name] = append(out[r.Name], parts[i])
			leased = append(leased, parts[i]...)
			i++
		}
	}
	return out, leased, nil, nil
}
