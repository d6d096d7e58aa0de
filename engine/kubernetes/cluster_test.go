package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/wick-dev/wick/engine/logs"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// The echo of utils.echo on two replicas: each replica's macro is its own completion
// index, a $(VAR) of the user's stays as written (the kubelet expands $(...) unless
// escaped), and the app succeeds with each replica's log its one line.
func TestEchoTwoReplicas(t *testing.T) {
	needCluster(t)
	t.Parallel()
	s := newScheduler(t)
	role := spec.NewRole("echo", env.image, "echo", "hello", "${replica_id}", "$(HOME)", "${app_id}")
	role.NumReplicas = 2
	id := launch(t, s, &spec.AppDef{Name: "echo", Roles: []spec.Role{role}}, nil)
	st := waitState(t, s, id, 2*time.Minute, terminal)
	if st.State != spec.Succeeded {
		t.Fatalf("state %s (%s), want SUCCEEDED", st.State, st.Msg)
	}
	for k := range 2 {
		// The node's log of a container that just ended may lag its end by a moment
		// (containerd writes it asynchronously): read again until it holds the line.
		want := []string{"hello " + string(rune('0'+k)) + " $(HOME) " + id}
		testkit.Wait(t, 20*time.Second, fmt.Sprintf("replica %d's log line", k), func() (bool, string) {
			got := texts(readLog(t, s, id, "echo", k, sched.LogOptions{}))
			return slices.Equal(got, want), fmt.Sprintf("%q, want %q", got, want)
		})
		r := st.Roles[0].Replicas[k]
		if r.State != spec.Succeeded || r.ExitCode == nil || *r.ExitCode != 0 {
			t.Errorf("replica %d: %+v, want SUCCEEDED with exit 0", k, r)
		}
	}
	if st.Handle != "kubernetes://"+env.session+"/"+id {
		t.Errorf("handle %q", st.Handle)
	}
}

// A replica that exits 3 fails the app; its exit code is in the status, and its error
// is named as on the other schedulers ("fail/0: exit code 3", ranks.RootCause), not by
// its termination message (the log's last lines, the kubelet's fallback: "exiting with
// 3").
func TestFailingReplica(t *testing.T) {
	needCluster(t)
	t.Parallel()
	s := newScheduler(t)
	role := spec.NewRole("fail", env.image, "exit", "3")
	id := launch(t, s, &spec.AppDef{Name: "fail", Roles: []spec.Role{role}}, nil)
	st := waitState(t, s, id, 2*time.Minute, terminal)
	if st.State != spec.Failed {
		t.Fatalf("state %s, want FAILED", st.State)
	}
	r := st.Roles[0].Replicas[0]
	if r.ExitCode == nil || *r.ExitCode != 3 {
		t.Errorf("exit code %v, want 3", r.ExitCode)
	}
	const want = "fail/0: exit code 3"
	if st.Msg != want || spec.ErrorMessage(st.StructuredError) != want || spec.ErrorMessage(r.StructuredError) != want {
		t.Errorf("message %q, errors %q / %q, want %q", st.Msg, spec.ErrorMessage(r.StructuredError), spec.ErrorMessage(st.StructuredError), want)
	}
}

// A replica that fails once and then succeeds, with max_retries 2 per replica: the
// app succeeds, the replica shows one restart, and its log holds both attempts. The
// count of runs is kept on a bind mount (hostPath), since each attempt is a new pod.
func TestRetryReplica(t *testing.T) {
	needCluster(t)
	t.Parallel()
	s := newScheduler(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	role := spec.NewRole("retry", env.image, "failtimes", "1", "/data/count")
	role.MaxRetries = 2
	role.RetryPolicy = spec.RetryReplica
	role.Mounts = []spec.Mount{{Type: spec.MountBind, Src: dir, Dst: "/data"}}
	id := launch(t, s, &spec.AppDef{Name: "retry", Roles: []spec.Role{role}}, nil)
	st := waitState(t, s, id, 3*time.Minute, terminal)
	if st.State != spec.Succeeded {
		t.Fatalf("state %s (%s), want SUCCEEDED after a retry", st.State, st.Msg)
	}
	r := st.Roles[0].Replicas[0]
	if r.Restarts != 1 || len(r.Attempts) != 1 || r.Attempts[0].ExitCode == nil || *r.Attempts[0].ExitCode != 1 {
		t.Errorf("restarts %d, attempts %+v: want one earlier attempt that exited 1", r.Restarts, r.Attempts)
	}
	lines := readLog(t, s, id, "retry", 0, sched.LogOptions{})
	if len(lines) < 2 || lines[0].Attempt != 0 || lines[len(lines)-1].Attempt != 1 || lines[0].Text != "run 1 fails" {
		t.Errorf("log %+v: want attempt 0's 'run 1 fails', then attempt 1's lines", lines)
	}
}

// Two roles: each is a Job of its own, owned by the first, and both run.
func TestTwoRoles(t *testing.T) {
	needCluster(t)
	t.Parallel()
	s := newScheduler(t)
	a := spec.NewRole("a", env.image, "echo", "from a")
	b := spec.NewRole("b", env.image, "echo", "from b")
	b.NumReplicas = 2
	id := launch(t, s, &spec.AppDef{Name: "two", Roles: []spec.Role{a, b}}, nil)
	st := waitState(t, s, id, 2*time.Minute, terminal)
	if st.State != spec.Succeeded || len(st.Roles) != 2 || len(st.Roles[1].Replicas) != 2 {
		t.Fatalf("status %+v, want SUCCEEDED with roles a (1) and b (2)", st)
	}
	if got := texts(readLog(t, s, id, "b", 1, sched.LogOptions{})); !slices.Equal(got, []string{"from b"}) {
		t.Errorf("b/1 log %q", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	jobs, err := env.cs.BatchV1().Jobs(env.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector(id)})
	if err != nil {
		t.Fatal(err)
	}
	owned := 0
	for _, j := range jobs.Items {
		if len(j.OwnerReferences) == 1 && j.OwnerReferences[0].Kind == "Job" {
			owned++
		}
	}
	if len(jobs.Items) != 2 || owned != 1 {
		t.Errorf("%d Jobs, %d owned by another: want 2 and 1", len(jobs.Items), owned)
	}
}

// Cancel stops a running app: CANCELLED, each replica CANCELLED, and its pods stay,
// with their logs (the kubelet stopped them: activeDeadlineSeconds), until delete.
func TestCancelRunning(t *testing.T) {
	needCluster(t)
	t.Parallel()
	s := newScheduler(t)
	role := spec.NewRole("srv", env.image, "serve", "29501", "0")
	role.NumReplicas = 2
	id := launch(t, s, &spec.AppDef{Name: "cancel", Roles: []spec.Role{role}}, nil)
	for k := range 2 {
		testkit.Wait(t, 2*time.Minute, "replica "+strconv.Itoa(k)+" listening", func() (bool, string) {
			got := texts(readLog(t, s, id, "srv", k, sched.LogOptions{}))
			return len(got) > 0, fmt.Sprintf("%q", got)
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(2*time.Minute))
	defer cancel()
	// The list counts the running replicas from the Jobs alone (their ready pods).
	testkit.Wait(t, time.Minute, "the list to count 2 of 2 replicas running", func() (bool, string) {
		apps, err := s.List(ctx)
		if err != nil {
			return false, err.Error()
		}
		for _, a := range apps {
			if a.AppID == id {
				running, total := a.Replicas()
				return running == 2 && total == 2, fmt.Sprintf("%d of %d", running, total)
			}
		}
		return false, "not listed"
	})
	if err := s.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	st, err := s.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != spec.Cancelled {
		t.Fatalf("state %s, want CANCELLED", st.State)
	}
	for k, r := range st.Roles[0].Replicas {
		if r.State != spec.Cancelled || r.StructuredError != "" {
			t.Errorf("replica %d: %s %q, want CANCELLED and no error", k, r.State, r.StructuredError)
		}
		if got := texts(readLog(t, s, id, "srv", k, sched.LogOptions{})); len(got) == 0 || !strings.HasPrefix(got[0], "listening on") {
			t.Errorf("replica %d's log after the cancel: %q, want its lines", k, got)
		}
	}
	if err := s.Delete(ctx, id, false); err != nil {
		t.Fatalf("delete of a cancelled app: %v", err)
	}
	if _, err := s.Describe(ctx, id); !errors.Is(err, sched.ErrNotFound) {
		t.Errorf("describe after delete: %v, want ErrNotFound", err)
	}
	testkit.Wait(t, 2*time.Minute, "the deleted app's pods to go", func() (bool, string) {
		pl, err := env.cs.CoreV1().Pods(env.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector(id)})
		if err != nil {
			return false, err.Error()
		}
		return len(pl.Items) == 0, spec.Count(len(pl.Items), "pod")
	})
}

// Cancel asks and returns, as wick cancel --no-wait does: with a replica that ignores
// SIGTERM (only the SIGKILL at the end of its 30 s grace period ends it), Cancel
// returns while the pod still runs, released from its Job; the cluster finishes the
// stop with nobody watching, and a later wick's Wait sees it: CANCELLED, the pod killed
// (137), its log kept, and no pod started again.
func TestCancelReturnsAtOnce(t *testing.T) {
	needCluster(t)
	t.Parallel()
	s := newScheduler(t)
	id := launch(t, s, &spec.AppDef{Name: "nowait", Roles: []spec.Role{spec.NewRole("stub", env.image, "stubborn")}}, nil)
	testkit.Wait(t, 2*time.Minute, "the replica ignoring SIGTERM", func() (bool, string) {
		got := texts(readLog(t, s, id, "stub", 0, sched.LogOptions{}))
		return len(got) > 0, fmt.Sprintf("%q", got)
	})
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(2*time.Minute))
	defer cancel()
	pods := func() []corev1.Pod {
		pl, err := env.cs.CoreV1().Pods(env.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector(id)})
		if err != nil {
			t.Fatal(err)
		}
		return pl.Items
	}
	start := time.Now()
	if err := s.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	t.Logf("Cancel returned in %v", time.Since(start))
	// The Job controller may sync the Job between seeing the pod released and seeing
	// it suspended (a sync batched from an earlier pod event): it then makes a
	// replacement, which the suspension deletes before it starts. Such a pod is no
	// attempt (status leaves it out); one that ran would be the program started again.
	ran := func(ps []corev1.Pod) (started []corev1.Pod, others int) {
		for i := range ps {
			if ok, _ := containerStarted(&ps[i]); ok {
				started = append(started, ps[i])
			} else {
				others++
			}
		}
		return started, others
	}
	ps, others := ran(pods())
	if len(ps) != 1 || podEnded(&ps[0]) || metav1.GetControllerOf(&ps[0]) != nil {
		t.Fatalf("when Cancel returned: %d pods that ran (want 1, still in its grace period, no longer its Job's)", len(ps))
	}
	t.Logf("when Cancel returned: %d pods that never started beside it", others)
	st, err := newScheduler(t).Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	r := st.Roles[0].Replicas[0]
	if st.State != spec.Cancelled || r.State != spec.Cancelled || r.Restarts != 0 || r.ExitCode == nil || *r.ExitCode != 137 {
		t.Errorf("status %s, replica %s, %d restarts, exit %v; want CANCELLED, CANCELLED, 0, 137 (SIGKILL after the grace)", st.State, r.State, r.Restarts, r.ExitCode)
	}
	if got := texts(readLog(t, s, id, "stub", 0, sched.LogOptions{})); len(got) == 0 || got[0] != "ignoring SIGTERM" {
		t.Errorf("log after the cancel: %q, want its line", got)
	}
	if ps, _ := ran(pods()); len(ps) != 1 || !podEnded(&ps[0]) {
		t.Errorf("%d pods that ran after the stop, want the one, ended (nothing started again)", len(ps))
	}
	testkit.Wait(t, time.Minute, "the pods that never started to go", func() (bool, string) {
		ps := pods()
		return len(ps) == 1, spec.Count(len(ps), "pod")
	})
}

// Cancel of an app with per-replica retries (backoffLimitPerIndex, immutable: the hold
// is maxFailedIndexes): CANCELLED, no retry started, the log kept.
func TestCancelWithReplicaRetries(t *testing.T) {
	needCluster(t)
	t.Parallel()
	s := newScheduler(t)
	role := spec.NewRole("srv", env.image, "serve", "29504", "0")
	role.RetryPolicy, role.MaxRetries = spec.RetryReplica, 2
	id := launch(t, s, &spec.AppDef{Name: "cancelr", Roles: []spec.Role{role}}, nil)
	testkit.Wait(t, 2*time.Minute, "the replica listening", func() (bool, string) {
		got := texts(readLog(t, s, id, "srv", 0, sched.LogOptions{}))
		return len(got) > 0, fmt.Sprintf("%q", got)
	})
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(2*time.Minute))
	defer cancel()
	if err := s.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	st, err := s.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if r := st.Roles[0].Replicas[0]; st.State != spec.Cancelled || r.State != spec.Cancelled || r.Restarts != 0 {
		t.Fatalf("status %s, replica %s with %d restarts; want CANCELLED, no retry", st.State, r.State, r.Restarts)
	}
	if got := texts(readLog(t, s, id, "srv", 0, sched.LogOptions{})); len(got) == 0 || !strings.HasPrefix(got[0], "listening on") {
		t.Errorf("log after the cancel: %q", got)
	}
}

// A role that fails fails the app and stops the others, as TorchX's gang does: Wait
// returns FAILED with the failed replica's exit code, the other role's replica is
// CANCELLED (stopped, not failed) and keeps its log.
func TestFailedRoleStopsTheOthers(t *testing.T) {
	needCluster(t)
	t.Parallel()
	s := newScheduler(t)
	bad := spec.NewRole("bad", env.image, "exit", "3")
	srv := spec.NewRole("srv", env.image, "serve", "29502", "0")
	id := launch(t, s, &spec.AppDef{Name: "gang", Roles: []spec.Role{srv, bad}}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(3*time.Minute))
	defer cancel()
	st, err := s.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != spec.Failed || len(st.Roles) != 2 {
		t.Fatalf("status %s %q, want FAILED", st.State, st.Msg)
	}
	if r := st.Roles[1].Replicas[0]; r.State != spec.Failed || r.ExitCode == nil || *r.ExitCode != 3 {
		t.Errorf("bad/0: %s exit %v, want FAILED with 3", r.State, r.ExitCode)
	}
	if r := st.Roles[0].Replicas[0]; r.State != spec.Cancelled {
		t.Errorf("srv/0: %s, want CANCELLED (stopped by the other role's failure)", r.State)
	}
	if got := texts(readLog(t, s, id, "srv", 0, sched.LogOptions{})); len(got) == 0 || !strings.HasPrefix(got[0], "listening on") {
		t.Errorf("srv/0's log: %q, want its lines", got)
	}
}

// An app no node can hold stays PENDING, and says why: the scheduler's Unschedulable
// reason. An image the node lacks (pull policy Never) says ErrImageNeverPull.
func TestPendingSaysWhy(t *testing.T) {
	needCluster(t)
	t.Parallel()
	s := newScheduler(t)
	big := spec.NewRole("big", env.image, "true")
	big.Resource = spec.Resource{CPU: 10000, GPU: -1, MemMB: -1}
	id := launch(t, s, &spec.AppDef{Name: "big", Roles: []spec.Role{big}}, nil)
	var st spec.AppStatus
	testkit.Wait(t, 2*time.Minute, "the reason of a pending app", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		d, err := s.Describe(ctx, id)
		if err != nil {
			return false, err.Error()
		}
		st = d.Status
		return st.State == spec.Pending && strings.Contains(st.Msg, "Unschedulable") && strings.Contains(st.Msg, "Insufficient cpu"), st.State.String() + " " + st.Msg
	})
	missing := spec.NewRole("missing", "wick.local/no-such-image:none", "true")
	id2 := launch(t, s, &spec.AppDef{Name: "missing", Roles: []spec.Role{missing}}, nil)
	testkit.Wait(t, 2*time.Minute, "the reason of an app without its image", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		d, err := s.Describe(ctx, id2)
		if err != nil {
			return false, err.Error()
		}
		return d.Status.State == spec.Pending && strings.Contains(d.Status.Msg, "ErrImageNeverPull"), d.Status.State.String() + " " + d.Status.Msg
	})
	// No pod at all: the Job's controller cannot make one (no such service account);
	// only the Job's events say so.
	id3 := launch(t, s, &spec.AppDef{Name: "nosa", Roles: []spec.Role{spec.NewRole("nosa", env.image, "true")}}, spec.Cfg{OptServiceAccount: "no-such-account"})
	testkit.Wait(t, 2*time.Minute, "the reason of an app whose pods cannot be made", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		d, err := s.Describe(ctx, id3)
		if err != nil {
			return false, err.Error()
		}
		st := d.Status
		return st.State == spec.Pending && strings.Contains(st.Msg, "FailedCreate") && strings.Contains(st.Msg, "no-such-account") && slices.Contains(st.Warnings, st.Msg), fmt.Sprintf("%s %q %q", st.State, st.Msg, st.Warnings)
	})
}

// List shows the tests' apps, with this $WICK_HOME's marked as its own.
func TestListShowsApp(t *testing.T) {
	needCluster(t)
	t.Parallel()
	s := newScheduler(t)
	id := launch(t, s, &spec.AppDef{Name: "listed", Roles: []spec.Role{spec.NewRole("r", env.image, "true")}}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	apps, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range apps {
		if a.AppID == id {
			if a.Foreign || a.Name != "listed" {
				t.Errorf("listed %+v: want name listed, not foreign", a)
			}
			if _, total := a.Replicas(); total != 1 {
				t.Errorf("listed with %d replicas, want 1", total)
			}
			return
		}
	}
	t.Errorf("app %s not in the list of %d apps", id, len(apps))
}

// A Job's lists of indexes, as its status has them ("1,3-5,7").
func TestParseIndexes(t *testing.T) {
	got := parseIndexes("0,2-4,7")
	for k := range 9 {
		if want := k == 0 || k >= 2 && k <= 4 || k == 7; got[k] != want {
			t.Errorf("index %d: %v, want %v", k, got[k], want)
		}
	}
	if len(parseIndexes("")) != 0 || len(parseIndexes("x,3-1")) != 0 {
		t.Error("empty or bad lists give indexes")
	}
}

// Names Kubernetes refuses are refused before anything is created, in one line.
func TestBadNamesRefusedBeforeSubmit(t *testing.T) {
	needCluster(t)
	s := newScheduler(t)
	long := spec.NewRole(strings.Repeat("r", 60), env.image, "true")
	sub := sched.Submission{AppID: spec.MakeAppID("x"), Session: env.session,
		App: &spec.AppDef{Name: "x", Roles: []spec.Role{long}}, Cfg: spec.Cfg{OptNamespace: env.namespace}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := s.DryRun(ctx, sub)
	if err == nil || !strings.Contains(err.Error(), "not one Kubernetes takes") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("dry run of a 60-character role: %v, want one line saying Kubernetes refuses the name", err)
	}
	sub.App.Roles[0].Name = "ok"
	sub.Cfg[OptNamespace] = "Not_A_Namespace"
	if _, err := s.DryRun(ctx, sub); err == nil || !errors.Is(err, spec.ErrInvalidRunOpt) {
		t.Fatalf("dry run in namespace Not_A_Namespace: %v, want an invalid run option", err)
	}
}

// Rank 0 by name, as dist.ddp's torchrun reaches it: TORCHX_RANK0_HOST is the headless
// Service's fully qualified name of the first role's replica 0
// (<job>-0.<service>.<namespace>.svc.cluster.local), which the cluster's DNS answers (CoreDNS in the test cluster, as in real ones); a replica of another role
// connects to it there.
func TestRankZeroByName(t *testing.T) {
	needCluster(t)
	t.Parallel()
	s := newScheduler(t)
	server := spec.NewRole("server", env.image, "serve", "29500", "1")
	client := spec.NewRole("client", env.image, "dial", "$TORCHX_RANK0_HOST:29500")
	id := launch(t, s, &spec.AppDef{Name: "rdzv", Roles: []spec.Role{server, client}}, nil)
	st := waitState(t, s, id, 3*time.Minute, terminal)
	job, err := jobName(id, "server", 1, false)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := serviceName(id)
	if err != nil {
		t.Fatal(err)
	}
	got := texts(readLog(t, s, id, "client", 0, sched.LogOptions{}))
	want := "role=client replica=0 rank0=" + job + "-0." + svc + "." + env.namespace + ".svc.cluster.local got=hello from " + job + "-0"
	if st.State != spec.Succeeded || !slices.Contains(got, want) {
		t.Fatalf("state %s (%s), client's log %q; want SUCCEEDED and %q", st.State, st.Msg, got, want)
	}
}

// Rank 0 hosts the rendezvous store, the CPU-only check of what dist.ddp's torchrun
// decides on each pod (torch 1.13's _matches_machine_hostname, which the helper's
// ishost plays): TORCHX_RANK0_HOST names replica 0's pod as its own canonical name
// (the first name of its /etc/hosts line), and no other pod's. With the Service's
// short name no pod would host it, and every node's rendezvous would time out.
func TestRankZeroHostsTheStore(t *testing.T) {
	needCluster(t)
	t.Parallel()
	s := newScheduler(t)
	role := spec.NewRole("node", env.image, "ishost", "$TORCHX_RANK0_HOST")
	role.NumReplicas = 2
	id := launch(t, s, &spec.AppDef{Name: "ishost", Roles: []spec.Role{role}}, nil)
	st := waitState(t, s, id, 3*time.Minute, terminal)
	job, err := jobName(id, "node", 2, false)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := serviceName(id)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range []string{"true", "false"} {
		line := "is_host=" + want + " host=" + job + "-" + strconv.Itoa(k) + " canonical=" + job + "-" + strconv.Itoa(k) + "." + svc + "." + env.namespace + ".svc.cluster.local"
		testkit.Wait(t, time.Minute, "node "+strconv.Itoa(k)+"'s line", func() (bool, string) {
			got := texts(readLog(t, s, id, "node", k, sched.LogOptions{}))
			return st.State == spec.Succeeded && slices.Contains(got, line), fmt.Sprintf("%s: %q, want %q", st.State, got, line)
		})
	}
}

// An app another WICK_HOME launched, in a namespace that is not the current one: List
// leaves it out, ListAllHomes (list -A) shows it Foreign as NAMESPACE:APP_ID, and that
// id, as TorchX's handles write it, finds it for describe and log.
func TestOtherHomeByNamespaceHandle(t *testing.T) {
	needCluster(t)
	t.Parallel()
	s := newScheduler(t)
	id := launch(t, s, &spec.AppDef{Name: "theirs", Roles: []spec.Role{spec.NewRole("echo", env.image, "echo", "from another home")}}, nil)
	waitState(t, s, id, 2*time.Minute, terminal)
	other, err := New(sched.Config{Session: env.session, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	o := other.(*Scheduler)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	if apps, err := o.List(ctx); err != nil || len(apps) != 0 {
		t.Errorf("another home's list: %v, %v; want nothing", apps, err)
	}
	apps, err := o.ListAllHomes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	full := env.namespace + ":" + id
	i := slices.IndexFunc(apps, func(st spec.AppStatus) bool { return st.AppID == full })
	if i < 0 || !apps[i].Foreign || apps[i].State != spec.Succeeded {
		t.Fatalf("list -A of another home: %+v; want %s, foreign and SUCCEEDED", apps, full)
	}
	h, err := spec.ParseHandle(apps[i].Handle)
	if err != nil || h.AppID != full {
		t.Fatalf("handle %q: %+v, %v", apps[i].Handle, h, err)
	}
	d, err := o.Describe(ctx, h.AppID)
	if err != nil || d.Status.State != spec.Succeeded || d.App.Name != "theirs" {
		t.Fatalf("describe %s: %+v, %v", full, d, err)
	}
	if got := texts(readLog(t, o, full, "echo", 0, sched.LogOptions{})); !slices.Equal(got, []string{"from another home"}) {
		t.Errorf("log of %s: %q", full, got)
	}
	if _, err := o.Describe(ctx, id); !errors.Is(err, sched.ErrNotFound) {
		t.Errorf("describe of %s without its namespace from another home: %v, want not found (it is not in the current namespace)", id, err)
	}
}

// The logs of two replicas that wrote at the same time, merged as `wick log APP/ROLE`
// merges them (engine/logs.Merge), come in time order: an iterator whose request is
// on its way does not say "nothing ready" when it has every line to come.
func TestMergedLogsInTimeOrder(t *testing.T) {
	needCluster(t)
	t.Parallel()
	s := newScheduler(t)
	role := spec.NewRole("w", env.image, "lines", "40", "30ms")
	role.NumReplicas = 2
	id := launch(t, s, &spec.AppDef{Name: "merge", Roles: []spec.Role{role}}, nil)
	if st := waitState(t, s, id, 2*time.Minute, terminal); st.State != spec.Succeeded {
		t.Fatalf("state %s (%s)", st.State, st.Msg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(time.Minute))
	defer cancel()
	var its []sched.LogIterator
	for k := range 2 {
		it, err := s.Logs(ctx, id, "w", k, sched.LogOptions{})
		if err != nil {
			t.Fatal(err)
		}
		its = append(its, it)
	}
	m := logs.Merge(its...)
	defer m.Close()
	var lines []sched.Line
	for {
		l, err := m.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	if len(lines) != 160 {
		t.Fatalf("%d lines, want 160", len(lines))
	}
	for i := 1; i < len(lines); i++ {
		if lines[i].Time.Before(lines[i-1].Time) {
			t.Fatalf("line %d (%d: %q at %s) comes after a later one (%d: %q at %s)", i, lines[i].Replica, lines[i].Text, lines[i].Time.Format(time.RFC3339Nano), lines[i-1].Replica, lines[i-1].Text, lines[i-1].Time.Format(time.RFC3339Nano))
		}
	}
}

// A user whom RBAC does not let create Jobs in the namespace: the launch fails with
// RBAC's own reason in one line, and leaves nothing behind (no Job, no record); list
// -A of all namespaces says why it cannot, and still lists this home's apps.
func TestForbiddenNamespace(t *testing.T) {
	needCluster(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(2*time.Minute))
	defer cancel()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody"}}
	if _, err := env.cs.CoreV1().ServiceAccounts(env.namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	exp := int64(600)
	tok, err := env.cs.CoreV1().ServiceAccounts(env.namespace).CreateToken(ctx, "nobody", &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.LoadFromFile(env.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kc.AuthInfos = map[string]*clientcmdapi.AuthInfo{"nobody": {Token: tok.Status.Token}}
	for _, c := range kc.Contexts {
		c.AuthInfo = "nobody"
	}
	path := filepath.Join(t.TempDir(), "nobody.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	s := newScheduler(t)
	s.loader = func(kubeContext string) clientcmd.ClientConfig {
		return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	}
	app := &spec.AppDef{Name: "denied", Roles: []spec.Role{spec.NewRole("echo", env.image, "echo", "hi")}}
	sub := sched.Submission{AppID: spec.MakeAppID(app.Name), Session: env.session, App: app, Cfg: spec.Cfg{OptNamespace: env.namespace, OptImagePullPolicy: "Never"}}
	req, err := s.DryRun(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Schedule(ctx, &sched.DryRunInfo{Scheduler: Name, Submission: sub, Request: req}, nil)
	if err == nil || !strings.Contains(err.Error(), `jobs.batch is forbidden: User "system:serviceaccount:`+env.namespace+`:nobody" cannot create resource "jobs"`) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("launch without the right to: %v; want RBAC's reason in one line", err)
	}
	jobs, err := env.cs.BatchV1().Jobs(env.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector(sub.AppID)})
	if err != nil || len(jobs.Items) != 0 {
		t.Errorf("after the refused launch: %d Jobs, %v; want none", len(jobs.Items), err)
	}
	if _, err := os.Stat(filepath.Join(s.recordDir(), sub.AppID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused app's record: %v; want none", err)
	}
	if _, err := s.ListAllHomes(ctx); err == nil || !strings.Contains(err.Error(), `cannot list resource "jobs" in API group "batch" at the cluster scope`) {
		t.Errorf("list -A without the right to list Jobs everywhere: %v; want RBAC's reason", err)
	}
}
