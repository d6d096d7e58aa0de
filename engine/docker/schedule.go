package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/wick-dev/wick/engine/ranks/watch"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// maxParallel bounds the Engine calls in flight for one app: enough to start a large app
// at once without flooding the daemon.
const maxParallel = 16

// callTimeout bounds the creates and starts of a launch, which are not cancelled with
// the caller's context: an Engine that hangs longer than this is not coming back.
const callTimeout = 5 * time.Minute

// cleanupTimeout bounds the removal of a half-launched app, which runs even when the
// caller's context is cancelled (Ctrl-C during a launch must not leave containers).
const cleanupTimeout = 60 * time.Second

// lateCreate is how long a rollback watches for the container of a create whose answer
// never came (the connection broke, the call timed out): the Engine may have made it
// all the same, after the rollback began.
const lateCreate = 10 * time.Second

// rollbackPause is the first pause between two rounds of a rollback; it doubles up to
// a second.
const rollbackPause = 50 * time.Millisecond

// Schedule launches the app: it builds the workspace image if there is one, checks that
// every image is present, ensures the network, then creates and starts every
// container, concurrently. On any failure it removes what it created: no half-launched
// app is left behind.
func (s *Scheduler) Schedule(ctx context.Context, info *sched.DryRunInfo, progress sched.Progress) error {
	if info == nil {
		return errors.New("local_docker: nothing to schedule")
	}
	req, ok := info.Request.(*Request)
	if !ok || req == nil || req.AppID != info.AppID {
		var err error
		if req, err = s.plan(ctx, info.Submission); err != nil {
			return err
		}
	}
	progress = serialize(progress)
	for _, w := range req.Warnings {
		progress.Report("warning: %s", w)
	}
	cli, err := s.engine(ctx)
	if err != nil {
		return err
	}
	containers := req.Containers
	if req.Build != nil {
		tag, err := s.buildWorkspace(ctx, cli, req.Build, info.Cfg.String(OptImageRepo), progress)
		if err != nil {
			return err
		}
		if tag != req.Build.Tag {
			containers = retag(containers, req.Build.Role, tag)
		}
	}
	users, err := s.checkImages(ctx, cli, containers)
	if err != nil {
		return err
	}
	if err := checkMountSources(cli, containers); err != nil {
		return err
	}
	if err := s.checkNames(ctx, cli, containers); err != nil {
		return err
	}
	// Its GPUs, under the leases' lock: a device another app took since the plan
	// fails the launch (a sweep's queue waits and tries others). A launch that fails
	// gives them back, unless containers of it are left behind (the lease holds
	// until they exit).
	if err := s.leases().Take(req.AppID, req.GPUs); err != nil {
		return err
	}
	keep := false
	defer func() {
		if !keep {
			// A lease that cannot be removed frees itself once launchGrace passes.
			_ = s.leases().Release(req.AppID, req.GPUs)
		}
	}()

	unlock, err := s.lockNetworks(ctx, false)
	if err != nil {
		return err
	}
	defer unlock()
	created, err := s.ensureNetwork(ctx, cli, req.Network)
	if err != nil {
		return err
	}
	if created {
		progress.Report("created network %s", req.Network)
	}

	if unsure, err := s.launch(ctx, cli, req, containers, users, progress); err != nil {
		// Unlock first: removing the network we created takes the lock exclusively.
		unlock()
		if left := s.rollback(ctx, cli, req.AppID, unsure, req.Network, created); left != nil {
			keep = true
			return &sched.LeftBehindError{Err: err, Left: left}
		}
		return err
	}
	keep = true
	return nil
}

// retag points the containers of role at image.
func retag(cs []Container, role, image string) []Container {
	out := make([]Container, len(cs))
	for i, c := range cs {
		if c.Role == role {
			c.Image = image
			env := make(map[string]string, len(c.Env))
			for k, v := range c.Env {
				env[k] = v
			}
			env["TORCHX_IMAGE"] = image
			c.Env = env
		}
		out[i] = c
	}
	return out
}

// launch creates and starts every container, concurrently, each started as soon as it
// is created, as eight `docker run`s at once would: a barrier between the creates and
// the starts made every replica wait for the slowest create. Should one create or
// start fail, the caller removes every container of the app, the started ones too.
// The calls themselves are not cancelled halfway (a create the Engine finishes after
// we gave up would escape the cleanup); ctx is checked between them. It returns the
// names of the containers whose create got no answer of the Engine (the connection
// broke, callTimeout passed): the Engine may have made them, or may yet.
func (s *Scheduler) launch(ctx context.Context, cli *client.Client, req *Request, cs []Container, users map[string]string, progress sched.Progress) (unsure []string, err error) {
	calls, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	progress.Report("creating %s", spec.Count(len(cs), "container"))
	var mu sync.Mutex
	started := 0
	err = forEach(ctx, len(cs), func(i int) error {
		c := &cs[i]
		if unanswered, err := s.createStart(ctx, calls, cli, c, req.record, users[c.Image]); err != nil {
			if unanswered {
				mu.Lock()
				unsure = append(unsure, c.Name)
				mu.Unlock()
			}
			return err
		}
		mu.Lock()
		started++
		n := started
		mu.Unlock()
		progress.Report("started %s (%d/%d)", c.Name, n, len(cs))
		return nil
	})
	if err != nil {
		return unsure, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err // cancelled while the last ones started: the caller gave up
	}
	progress.Report("launched %s: %s", req.AppID, spec.Count(len(cs), "container"))
	return nil, nil
}

// createStart creates and starts the container c of an app whose record is record;
// user is its image's user. unanswered is set when the Engine did not answer the
// create: the container may exist all the same. A container
// whose command is the sampler's wrapper (see watch.go) and whose image has no
// /bin/sh (the Engine's stat of it in the created container finds none) is made
// again with its command alone, and is not watched.
func (s *Scheduler) createStart(ctx, calls context.Context, cli *client.Client, c *Container, record, user string) (unanswered bool, err error) {
	opts, err := createOptions(c, record)
	if err != nil {
		return false, err
	}
	if home := s.homeID(); home != "" {
		opts.Config.Labels[LabelHome] = home // not in the dry run: it differs per home
	}
	res, err := cli.ContainerCreate(calls, opts)
	if err != nil {
		return !answered(err), s.createErr(err, c)
	}
	if argv, ok := watch.Unwrap(errorDir, c.Command); ok {
		// The Engine's init, not the runtime, execs the entrypoint: a missing
		// /bin/sh would not fail the start, but end the container with 127.
		_, err := cli.ContainerStatPath(calls, res.ID, client.ContainerStatPathOptions{Path: "/bin/sh"})
		if err != nil && cerrdefs.IsNotFound(err) {
			if _, err := cli.ContainerRemove(calls, res.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
				return false, fmt.Errorf("removing container %s to make it again without /bin/sh, which its image lacks: %s", c.Name, engineMessage(s.engineErr(err)))
			}
			plain := *c
			plain.Command = argv
			return s.createStart(ctx, calls, cli, &plain, record, user)
		}
	}
	if c.Env[envErrorFile] == errorFile && !rootUser(user) {
		// A new volume belongs to root: let the image's user write its error file.
		if _, err := cli.CopyToContainer(calls, res.ID, client.CopyToContainerOptions{DestinationPath: path.Dir(errorDir), Content: bytes.NewReader(errorDirTar())}); err != nil {
			return false, fmt.Errorf("preparing container %s: %s", c.Name, engineMessage(s.engineErr(err)))
		}
	}
	if err := ctx.Err(); err != nil {
		return false, err // cancelled: created, not started
	}
	if _, err := cli.ContainerStart(calls, res.ID, client.ContainerStartOptions{}); err != nil {
		return false, fmt.Errorf("starting container %s: %s", c.Name, engineMessage(s.engineErr(err)))
	}
	return false, nil
}

// forEach runs f(0..n-1) at most maxParallel at a time and returns the first error.
// Once an error occurs or ctx is done, calls not yet begun are skipped. It returns when
// every call it began has returned.
func forEach(ctx context.Context, n int, f func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, maxParallel)
	failed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return first != nil
	}
	for i := range n {
		if failed() {
			break
		}
		if err := ctx.Err(); err != nil {
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if failed() {
				return
			}
			if err := f(i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// rollback removes every container of the app, and the network when this launch made
// it and nothing else uses it, within cleanupTimeout even when ctx is cancelled. It
// finds the containers by wick's labels for the app, not by the ids the creates
// answered, and lists them again until a listing finds none: a remove the Engine
// fails (under load: a kill whose exit event comes late, a mount still busy) is tried
// again, and the container of a create that got no answer (unsure, by name) may still
// appear, so it is watched for until seen or lateCreate has passed. It returns what
// it could not remove, by name, or nil.
func (s *Scheduler) rollback(ctx context.Context, cli *client.Client, appID string, unsure []string, netName string, createdNet bool) error {
	limit := cleanupTimeout
	if s.cleanupTimeout > 0 {
		limit = s.cleanupTimeout
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limit)
	defer cancel()
	watch := map[string]bool{}
	for _, name := range unsure {
		watch[name] = true
	}
	lateUntil := time.Now().Add(lateCreate)
	var left error // what the last round could not remove, or list
	// The Engine's last reason for each container it would not remove, by name: a
	// round cut short by the deadline (on a loaded machine, likely mid-call) learns
	// nothing, and must not replace what the rounds before it learned.
	said := map[string]error{}
	for pause := rollbackPause; ; pause = min(2*pause, time.Second) {
		sums, _, err := s.containers(ctx, cli, appID)
		if err != nil {
			if ctx.Err() == nil || left == nil {
				left = fmt.Errorf("listing the containers of %s to remove them: %w", appID, err)
			}
			if errors.Is(err, ErrUnreachable) {
				return left // gone, not slow: asking again would only wait
			}
		} else {
			for _, c := range sums {
				delete(watch, trimSlash(first(c.Names)))
			}
			left = s.removeAll(ctx, cli, sums, said)
			if len(sums) == 0 && (len(watch) == 0 || time.Now().After(lateUntil)) {
				break
			}
		}
		select {
		case <-ctx.Done():
			// Out of time: the network stays, with what may still be on it.
			for name := range watch {
				left = joinErrs(left, fmt.Errorf("container %s, whose create got no answer, may yet appear (docker rm -f %[1]s)", name))
			}
			return left
		case <-time.After(pause):
		}
	}
	return s.rollbackNetwork(ctx, cli, netName, createdNet)
}

// removeAll removes the containers, concurrently, each whatever befalls the others;
// it returns those it could not remove, with the Engine's reason. said holds the
// reason an earlier round got for a container, by name: a remove that ctx cut short
// says it (or, with none, that time ran out); the reasons of this round replace
// theirs.
func (s *Scheduler) removeAll(ctx context.Context, cli *client.Client, sums []container.Summary, said map[string]error) error {
	errs := make([]error, len(sums))
	answered := make([]bool, len(sums))
	for i, c := range sums {
		// Until its remove answers: forEach skips the rest once ctx is done.
		name := trimSlash(first(c.Names))
		errs[i] = said[name]
		if errs[i] == nil {
			errs[i] = fmt.Errorf("could not remove container %s in time (docker rm -f %[1]s)", name)
		}
	}
	_ = forEach(ctx, len(sums), func(i int) error {
		_, err := cli.ContainerRemove(ctx, sums[i].ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		switch {
		case err == nil || cerrdefs.IsNotFound(err):
			errs[i] = nil
		case ctx.Err() == nil:
			name := trimSlash(first(sums[i].Names))
			errs[i] = fmt.Errorf("could not remove container %s (docker rm -f %s): %s", name, name, engineMessage(s.engineErr(err)))
			answered[i] = true
		}
		return nil // the others are removed all the same
	})
	for i, c := range sums {
		if answered[i] {
			said[trimSlash(first(c.Names))] = errs[i]
		}
	}
	return joinErrs(errs...)
}

// rollbackNetwork removes the network a failed launch made, unless something uses it.
func (s *Scheduler) rollbackNetwork(ctx context.Context, cli *client.Client, name string, created bool) error {
	if !created {
		return nil
	}
	return s.removeNetworkIfUnused(ctx, cli, name)
}

// createOptions translates a planned container into the Engine's create request.
// The app record goes into the labels here, so that the request prints short.
func createOptions(c *Container, record string) (client.ContainerCreateOptions, error) {
	if len(c.Command) == 0 || c.Command[0] == "" {
		return client.ContainerCreateOptions{}, fmt.Errorf("container %s: no command", c.Name)
	}
	env := make([]string, 0, len(c.Env))
	for _, k := range spec.SortedKeys(c.Env) {
		env = append(env, k+"="+c.Env[k])
	}
	labels := make(map[string]string, len(c.Labels)+1)
	for k, v := range c.Labels {
		labels[k] = v
	}
	if record != "" {
		labels[LabelApp] = record
	}
	stop := c.StopTimeout
	initOn := c.Init
	cfg := &container.Config{
		Hostname: c.Hostname,
		Image:    c.Image,
		// The entrypoint replaces the image's, whose CMD then does not apply.
		Entrypoint:  c.Command[:1],
		Cmd:         c.Command[1:],
		Env:         env,
		Labels:      labels,
		StopTimeout: &stop,
	}
	host := &container.HostConfig{
		NetworkMode:   container.NetworkMode(c.Network),
		RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyMode(c.Restart.Policy), MaximumRetryCount: c.Restart.MaxRetries},
		Privileged:    c.Privileged,
		LogConfig:     container.LogConfig{Type: c.Log.Driver, Config: c.Log.Options},
		ShmSize:       c.Resources.ShmBytes,
		Init:          &initOn,
		Resources: container.Resources{
			NanoCPUs: c.Resources.NanoCPUs,
			Memory:   c.Resources.MemoryBytes,
		},
	}
	switch {
	case len(c.GPUDevices) > 0:
		// Exactly these devices (docker run --gpus '"device=1,2"'); inside, CUDA
		// numbers them from 0.
		host.DeviceRequests = []container.DeviceRequest{{DeviceIDs: c.GPUDevices, Capabilities: [][]string{{"compute", "utility"}}}}
	case c.Resources.GPUs > 0:
		host.DeviceRequests = []container.DeviceRequest{{Count: c.Resources.GPUs, Capabilities: [][]string{{"compute", "utility"}}}}
	}
	for _, m := range c.Mounts {
		host.Mounts = append(host.Mounts, mount.Mount{Type: mount.Type(m.Type), Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly})
	}
	for _, d := range c.Devices {
		host.Devices = append(host.Devices, container.DeviceMapping{PathOnHost: d.Host, PathInContainer: d.Container, CgroupPermissions: d.Permissions})
	}
	if len(c.Ports) > 0 {
		cfg.ExposedPorts = network.PortSet{}
		host.PortBindings = network.PortMap{}
		for _, p := range c.Ports {
			port, ok := network.PortFrom(uint16(p.ContainerPort), network.TCP)
			if !ok {
				return client.ContainerCreateOptions{}, fmt.Errorf("container %s: bad port %d", c.Name, p.ContainerPort)
			}
			cfg.ExposedPorts[port] = struct{}{}
			hostPort := ""
			if p.HostPort > 0 {
				hostPort = strconv.Itoa(p.HostPort)
			}
			// Loopback only: a published port (a c10d store) must not be open to the
			// whole network.
			host.PortBindings[port] = append(host.PortBindings[port], network.PortBinding{HostIP: netip.AddrFrom4([4]byte{127, 0, 0, 1}), HostPort: hostPort})
		}
	}
	return client.ContainerCreateOptions{
		Name:       c.Name,
		Config:     cfg,
		HostConfig: host,
		NetworkingConfig: &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			c.Network: {Aliases: []string{c.Hostname}},
		}},
	}, nil
}

// checkImages makes sure every image is on the Engine before anything is created:
// local_docker never pulls. It returns the user each image runs as.
func (s *Scheduler) checkImages(ctx context.Context, cli *client.Client, cs []Container) (map[string]string, error) {
	var images []string
	seen := map[string]bool{}
	for _, c := range cs {
		if !seen[c.Image] {
			seen[c.Image] = true
			images = append(images, c.Image)
		}
	}
	errs := make([]error, len(images))
	users := make([]string, len(images))
	err := forEach(ctx, len(images), func(i int) error {
		res, err := cli.ImageInspect(ctx, images[i])
		if err != nil {
			errs[i] = s.imageErr(err, images[i])
		} else if res.Config != nil {
			users[i] = res.Config.User
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(images))
	for i, img := range images {
		out[img] = users[i]
	}
	return out, joinErrs(errs...)
}

// imageErr explains a failed image lookup.
func (s *Scheduler) imageErr(err error, image string) error {
	if cerrdefs.IsNotFound(err) {
		return fmt.Errorf("image %q is not on the Docker Engine (local_docker does not pull: run `docker pull %s` or build it first)", image, image)
	}
	return fmt.Errorf("image %q: %w", image, s.engineErr(err))
}

// checkMountSources checks bind and device sources when the Engine runs on this machine
// (a unix socket), since a missing source fails only at create time.
func checkMountSources(cli *client.Client, cs []Container) error {
	if !strings.HasPrefix(cli.DaemonHost(), "unix://") {
		return nil
	}
	seen := map[string]bool{}
	var errs []error
	check := func(role, kind, p string) {
		if seen[p] {
			return
		}
		seen[p] = true
		if _, err := os.Stat(p); err != nil {
			errs = append(errs, fmt.Errorf("role %q: %s mount source %s: %w", role, kind, p, errors.Unwrap(err)))
		}
	}
	for _, c := range cs {
		for _, m := range c.Mounts {
			if m.Type == "bind" {
				check(c.Role, "bind", m.Source)
			}
		}
		for _, d := range c.Devices {
			check(c.Role, "device", d.Host)
		}
	}
	return joinErrs(errs...)
}

// checkNames fails when a container of one of the planned names exists already.
func (s *Scheduler) checkNames(ctx context.Context, cli *client.Client, cs []Container) error {
	f := client.Filters{}
	want := map[string]bool{}
	for _, c := range cs {
		f.Add("name", "^/"+regexp.QuoteMeta(c.Name)+"$")
		want[c.Name] = true
	}
	res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return s.engineErr(err)
	}
	var errs []error
	for _, c := range res.Items {
		for _, n := range c.Names {
			if n = strings.TrimPrefix(n, "/"); want[n] {
				errs = append(errs, nameClash(n, c.ID, c.Labels[LabelAppID]))
			}
		}
	}
	return joinErrs(errs...)
}

func nameClash(name, id, app string) error {
	owner := "another container"
	if app != "" {
		owner = "app " + app
	}
	return fmt.Errorf("container name %s is taken by %s (%.12s): remove it with `docker rm -f %s` or use another app name", name, owner, id, name)
}

// answered reports whether err is an answer of the Engine (an HTTP status it sent),
// not a call that broke or ran out of time before the Engine answered: the SDK
// returns those as a failed connection, a *url.Error or a context's error.
func answered(err error) bool {
	var uerr *url.Error
	var nerr net.Error
	return !client.IsErrConnectionFailed(err) && !errors.As(err, &uerr) && !errors.As(err, &nerr) &&
		!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
}

// createErr explains a failed container create.
func (s *Scheduler) createErr(err error, c *Container) error {
	if cerrdefs.IsConflict(err) {
		return nameClash(c.Name, "", "")
	}
	if cerrdefs.IsNotFound(err) && strings.Contains(err.Error(), "image") {
		return s.imageErr(err, c.Image)
	}
	return fmt.Errorf("creating container %s: %s", c.Name, engineMessage(s.engineErr(err)))
}

// joinErrs joins errors into one error of one line ("a; b"), each still found by
// errors.Is and errors.As; nil when there is none.
func joinErrs(errs ...error) error {
	var list []any
	for _, err := range errs {
		if err != nil {
			list = append(list, err)
		}
	}
	switch len(list) {
	case 0:
		return nil
	case 1:
		return list[0].(error)
	}
	return fmt.Errorf(strings.TrimSuffix(strings.Repeat("%w; ", len(list)), "; "), list...)
}

// engineMessage drops the client's "Error response from daemon: " prefix.
func engineMessage(err error) string {
	return strings.TrimPrefix(err.Error(), "Error response from daemon: ")
}

// serialize makes a progress callback safe to call from several goroutines.
func serialize(p sched.Progress) sched.Progress {
	if p == nil {
		return nil
	}
	var mu sync.Mutex
	return func(step string) {
		mu.Lock()
		defer mu.Unlock()
		p(step)
	}
}
