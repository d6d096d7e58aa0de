package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/internal/testkit"
)

// newJobSetScheduler makes a scheduler that puts apps into JobSets as it does on its
// own on a cluster with JobSet's CRD: it skips (fails in CI) when the test cluster has
// none (make k8s-jobset installs it).
func newJobSetScheduler(t *testing.T) *Scheduler {
	t.Helper()
	needCluster(t)
	s, err := New(sched.Config{Session: env.session, StateDir: env.stateDir})
	if err != nil {
		t.Fatal(err)
	}
	js := s.(*Scheduler)
	c, err := js.client("")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	has, err := c.hasJobSet(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !has {
		msg := "the test cluster has no JobSet CRD: make k8s-jobset installs it (and its controller)"
		if testkit.InCI() && jobSetInCI {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return js
}

// jobSetInCI says whether CI's test cluster has JobSet (.ci/run makes k8s-jobset), so
// that a JobSet test without it fails there rather than skips.
const jobSetInCI = true

// jobSetOf reads app id's JobSet, failing the test when there is none.
func jobSetOf(t *testing.T, s *Scheduler, id string) *JobSet {
	t.Helper()
	c, ns, bare, err := s.locate(id)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js, err := c.getJobSet(ctx, ns, bare)
	if err != nil || js == nil {
		t.Fatalf("app %s's JobSet: %v, %v; want one", id, js, err)
	}
	return js
}

// utils.echo on two replicas in a JobSet: the plan is one JobSet (no Jobs, no Service of
// wick's), its controller makes the role's Indexed Job, which carries wick's labels and
// is owned by the JobSet; each replica's macro is its completion index; the app
// succeeds when the JobSet completes; the list shows it.
func TestJobSetEcho(t *testing.T) {
	s := newJobSetScheduler(t)
	t.Parallel()
	role := spec.NewRole("echo", env.image, "echo", "hello", "${replica_id}", "${app_id}")
	role.NumReplicas = 2
	app := &spec.AppDef{Name: "jsecho", Roles: []spec.Role{role}}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(2*time.Minute))
	defer cancel()
	req, err := s.DryRun(ctx, sched.Submission{AppID: "jsecho-plan", Session: env.session, App: app, Cfg: spec.Cfg{OptNamespace: env.namespace}})
	if err != nil {
		t.Fatal(err)
	}
	if r := req.(*Request); r.JobSet == nil || r.Jobs != nil || r.Service != nil || len(r.JobSet.Spec.ReplicatedJobs) != 1 {
		t.Fatalf("plan %+v: want one JobSet of one replicated Job, and no Jobs or Service of wick's", r)
	}
	id := launch(t, s, app, nil)
	st := waitState(t, s, id, 2*time.Minute, terminal)
	if st.State != spec.Succeeded {
		t.Fatalf("state %s (%s), want SUCCEEDED", st.State, st.Msg)
	}
	for k := range 2 {
		want := []string{"hello " + string(rune('0'+k)) + " " + id}
		testkit.Wait(t, 20*time.Second, fmt.Sprintf("replica %d's log line", k), func() (bool, string) {
			got := texts(readLog(t, s, id, "echo", k, sched.LogOptions{}))
			return slices.Equal(got, want), fmt.Sprintf("%q, want %q", got, want)
		})
		if r := st.Roles[0].Replicas[k]; r.State != spec.Succeeded || r.ExitCode == nil || *r.ExitCode != 0 {
			t.Errorf("replica %d: %+v, want SUCCEEDED with exit 0", k, r)
		}
	}
	js := jobSetOf(t, s, id)
	jobs, err := env.cs.BatchV1().Jobs(env.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector(id)})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != 1 || jobs.Items[0].Labels[labelJobSetName] != js.Name || metav1.GetControllerOf(&jobs.Items[0]) == nil ||
		metav1.GetControllerOf(&jobs.Items[0]).UID != js.UID {
		t.Errorf("Jobs %+v: want one, labelled and owned by JobSet %s", jobs.Items, js.Name)
	}
	apps, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(apps, func(a spec.AppStatus) bool { return a.AppID == id })
	if i < 0 || apps[i].State != spec.Succeeded || apps[i].Name != "jsecho" {
		t.Errorf("list %+v: want %s SUCCEEDED", apps, id)
	}
}

// Two roles in one JobSet: the client dials rank 0 (the server's replica 0) by the name
// TORCHX_RANK0_HOST gives, <jobset>-<role>-0-0.<subdomain>, which the JobSet's own
// headless Service answers; both succeed.
func TestJobSetTwoRolesRankZero(t *testing.T) {
	s := newJobSetScheduler(t)
	t.Parallel()
	server := spec.NewRole("server", env.image, "serve", "29500", "1")
	client := spec.NewRole("client", env.image, "dial", "$TORCHX_RANK0_HOST:29500")
	id := launch(t, s, &spec.AppDef{Name: "jsrdzv", Roles: []spec.Role{server, client}}, nil)
	st := waitState(t, s, id, 3*time.Minute, terminal)
	job, err := jobName(id, "server", 1, true)
	if err != nil {
		t.Fatal(err)
	}
	svc, _ := serviceName(id)
	got := texts(readLog(t, s, id, "client", 0, sched.LogOptions{}))
	want := "role=client replica=0 rank0=" + job + "-0." + svc + "." + env.namespace + ".svc.cluster.local got=hello from " + job + "-0"
	if st.State != spec.Succeeded || !slices.Contains(got, want) {
		t.Fatalf("state %s (%s), client's log %q; want SUCCEEDED and %q", st.State, st.Msg, got, want)
	}
	if len(st.Roles) != 2 || st.Roles[1].Replicas[0].State != spec.Succeeded {
		t.Errorf("roles %+v: want both SUCCEEDED", st.Roles)
	}
}

// Cancel of a running JobSet app: CANCELLED, its replicas CANCELLED with their logs
// kept (released from their Job, stopped by the kubelet), the JobSet suspended so that
// nothing starts again; delete removes the JobSet and, through it, the rest.
func TestJobSetCancelDelete(t *testing.T) {
	s := newJobSetScheduler(t)
	t.Parallel()
	role := spec.NewRole("srv", env.image, "serve", "29501", "0")
	role.NumReplicas = 2
	id := launch(t, s, &spec.AppDef{Name: "jscancel", Roles: []spec.Role{role}}, nil)
	for k := range 2 {
		testkit.Wait(t, 2*time.Minute, fmt.Sprintf("replica %d listening", k), func() (bool, string) {
			got := texts(readLog(t, s, id, "srv", k, sched.LogOptions{}))
			return len(got) > 0, fmt.Sprintf("%q", got)
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(2*time.Minute))
	defer cancel()
	if err := s.Delete(ctx, id, false); !errors.Is(err, sched.ErrRunning) {
		t.Errorf("delete of a running app without force: %v, want ErrRunning", err)
	}
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
	if js := jobSetOf(t, s, id); js.Spec.Suspend == nil || !*js.Spec.Suspend {
		t.Errorf("JobSet after the cancel: suspend %v, want true", js.Spec.Suspend)
	}
	if err := s.Delete(ctx, id, false); err != nil {
		t.Fatalf("delete of a cancelled app: %v", err)
	}
	if _, err := s.Describe(ctx, id); !errors.Is(err, sched.ErrNotFound) {
		t.Errorf("describe after delete: %v, want ErrNotFound", err)
	}
	testkit.Wait(t, 2*time.Minute, "the deleted app's Jobs and pods to go", func() (bool, string) {
		jl, err := env.cs.BatchV1().Jobs(env.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector(id)})
		if err != nil {
			return false, err.Error()
		}
		pl, err := env.cs.CoreV1().Pods(env.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector(id)})
		if err != nil {
			return false, err.Error()
		}
		return len(jl.Items)+len(pl.Items) == 0, spec.Count(len(jl.Items), "Job") + ", " + spec.Count(len(pl.Items), "pod")
	})
}

// A failing replica fails the JobSet and the app; the root cause is that replica's
// ("bad/0: exit code 3"), with its exit code.
func TestJobSetFailingReplica(t *testing.T) {
	s := newJobSetScheduler(t)
	t.Parallel()
	ok := spec.NewRole("ok", env.image, "echo", "fine")
	bad := spec.NewRole("bad", env.image, "exit", "3")
	id := launch(t, s, &spec.AppDef{Name: "jsfail", Roles: []spec.Role{ok, bad}}, nil)
	st := waitState(t, s, id, 2*time.Minute, terminal)
	if st.State != spec.Failed {
		t.Fatalf("state %s (%s), want FAILED", st.State, st.Msg)
	}
	r := st.Roles[1].Replicas[0]
	if r.State != spec.Failed || r.ExitCode == nil || *r.ExitCode != 3 {
		t.Errorf("bad/0: %s exit %v, want FAILED with exit 3", r.State, r.ExitCode)
	}
	const want = "bad/0: exit code 3" // ranks.RootCause, as on the other schedulers
	if st.Msg != want || spec.ErrorMessage(st.StructuredError) != want || spec.ErrorMessage(r.StructuredError) != want {
		t.Errorf("message %q, errors %q / %q, want %q", st.Msg, spec.ErrorMessage(r.StructuredError), spec.ErrorMessage(st.StructuredError), want)
	}
}

// A JobSet app that cannot run stays PENDING and says why, as an app of Jobs does: an
// image the node lacks (its pod's ErrImageNeverPull), a service account that does not
// exist (its Job's FailedCreate: no pod at all).
func TestJobSetPendingSaysWhy(t *testing.T) {
	s := newJobSetScheduler(t)
	t.Parallel()
	missing := spec.NewRole("missing", "wick.local/no-such-image:none", "true")
	id := launch(t, s, &spec.AppDef{Name: "jsmissing", Roles: []spec.Role{missing}}, nil)
	id2 := launch(t, s, &spec.AppDef{Name: "jsnosa", Roles: []spec.Role{spec.NewRole("nosa", env.image, "true")}}, spec.Cfg{OptServiceAccount: "no-such-account"})
	for _, c := range []struct{ id, want string }{{id, "ErrImageNeverPull"}, {id2, "no-such-account"}} {
		testkit.Wait(t, 2*time.Minute, "the reason of "+c.id, func() (bool, string) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			d, err := s.Describe(ctx, c.id)
			if err != nil {
				return false, err.Error()
			}
			return d.Status.State == spec.Pending && strings.Contains(d.Status.Msg, c.want), fmt.Sprintf("%s %q %q", d.Status.State, d.Status.Msg, d.Status.Warnings)
		})
	}
}

// discoveryServer is an API server that answers only the discovery of JobSet's group
// version: with jobsets when has, else 404; it counts the calls.
func discoveryServer(t *testing.T, has bool, calls *int) *Scheduler {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/"+jobSetAPIVersion {
			http.NotFound(w, r)
			return
		}
		*calls++
		if !has {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":%q,"resources":[{"name":"jobsets","namespaced":true,"kind":"JobSet","verbs":["get","list","create"]}]}`, jobSetAPIVersion)
	}))
	t.Cleanup(srv.Close)
	s, err := New(sched.Config{Session: "sess", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ks := s.(*Scheduler)
	ks.loader = func(string) clientcmd.ClientConfig {
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: srv.URL}
		cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{}
		cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: "ns"}
		cfg.CurrentContext = "c"
		return clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{})
	}
	return ks
}

// The JobSet is chosen by the cluster's discovery, asked once per process: a cluster
// with jobset.x-k8s.io/v1alpha2 jobsets gets a JobSet, one without (404) Jobs and a
// Service, with no error.
func TestJobSetChosenByDiscovery(t *testing.T) {
	app := &spec.AppDef{Name: "echo", Roles: []spec.Role{spec.NewRole("echo", "img", "echo", "hi")}}
	for _, has := range []bool{true, false} {
		calls := 0
		s := discoveryServer(t, has, &calls)
		for range 2 {
			req, err := s.DryRun(context.Background(), sched.Submission{AppID: "echo-abc", Session: "sess", App: app, Cfg: spec.Cfg{}})
			if err != nil {
				t.Fatalf("has %v: %v", has, err)
			}
			r := req.(*Request)
			if got := r.JobSet != nil; got != has || (has && (r.Jobs != nil || r.Service != nil)) || (!has && (len(r.Jobs) != 1 || r.Service == nil)) {
				t.Errorf("has %v: plan with JobSet %v, %d Jobs, Service %v", has, r.JobSet != nil, len(r.Jobs), r.Service != nil)
			}
			if has {
				rj := r.JobSet.Spec.ReplicatedJobs[0]
				if r.JobSet.Name != "echo-abc" || rj.Name != "echo" || rj.Replicas != 1 || r.JobSet.Annotations[AnnotationApp] == "" ||
					r.JobSet.Spec.Network == nil || r.JobSet.Spec.Network.Subdomain != "echo-abc" || rj.Template.Labels[LabelAppID] != "echo-abc" {
					t.Errorf("JobSet %+v", r.JobSet)
				}
				env := rj.Template.Spec.Template.Spec.Containers[0].Env
				i := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == spec.Rank0Env })
				if i < 0 || env[i].Value != "echo-abc-echo-0-0.echo-abc.ns.svc.cluster.local" {
					t.Errorf("rank 0 env %+v: want the JobSet's pod name", env)
				}
			}
		}
		if calls != 1 {
			t.Errorf("has %v: %d discovery calls for two plans, want 1", has, calls)
		}
	}
}

// One role fails while the other's two replicas run (they printed, then wait): JobSet's
// controller deletes the running role's Job, and the garbage collector its pods, whose
// containers and logs the kubelet removes once they stop. wick's finalizer and keeper
// keep them: after the app has FAILED, the other role's replicas read CANCELLED (killed,
// not failed on their own) with their lines, every finalizer is off (nothing stays
// Terminating), and delete leaves no pod behind.
func TestJobSetFailedRoleKeepsTheOthersLogs(t *testing.T) {
	s := newJobSetScheduler(t)
	t.Parallel()
	talk := spec.NewRole("talk", env.image, "steps", "10m", "1.0", "0.5")
	talk.NumReplicas = 2
	// Late enough that the talkers have printed (they start with it).
	bad := spec.NewRole("bad", env.image, "raise", min(testkit.Scale(15*time.Second), 40*time.Second).String(), "boom")
	id := launch(t, s, &spec.AppDef{Name: "jskeep", Roles: []spec.Role{talk, bad}}, nil)
	st := waitState(t, s, id, 3*time.Minute, terminal)
	if st.State != spec.Failed {
		t.Fatalf("state %s (%s), want FAILED", st.State, st.Msg)
	}
	want := []string{"step 1 loss 1.0", "step 2 loss 0.5"}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(3*time.Minute))
	defer cancel()
	testkit.Wait(t, 2*time.Minute, "the talkers CANCELLED with their lines, and no finalizer left", func() (bool, string) {
		d, err := s.Describe(ctx, id)
		if err != nil {
			return false, err.Error()
		}
		var got []string
		ok := d.Status.State == spec.Failed
		for k, r := range d.Status.Roles[0].Replicas {
			lines := texts(readLog(t, s, id, "talk", k, sched.LogOptions{}))
			ok = ok && r.State == spec.Cancelled && r.StructuredError == "" && slices.Equal(lines, want)
			got = append(got, fmt.Sprintf("talk/%d %s %q", k, r.State, lines))
		}
		if b := d.Status.Roles[1].Replicas[0]; b.State != spec.Failed {
			ok = false
			got = append(got, fmt.Sprintf("bad/0 %s", b.State))
		}
		pl, err := env.cs.CoreV1().Pods(env.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector(id)})
		if err != nil {
			return false, err.Error()
		}
		for _, p := range pl.Items {
			if hasLogsFinalizer(&p) {
				ok = false
				got = append(got, "pod "+p.Name+" holds "+FinalizerLogs)
			}
		}
		return ok, strings.Join(got, "; ")
	})
	if err := s.Delete(ctx, id, false); err != nil {
		t.Fatalf("delete: %v", err)
	}
	testkit.Wait(t, 2*time.Minute, "the deleted app's pods to go", func() (bool, string) {
		pl, err := env.cs.CoreV1().Pods(env.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector(id)})
		if err != nil {
			return false, err.Error()
		}
		return len(pl.Items) == 0, spec.Count(len(pl.Items), "pod")
	})
}

// noJobSetProxy is the test cluster's API server as a cluster without JobSet's CRD
// shows it: a proxy (with the test kubeconfig's credentials) that answers 404 to
// jobset.x-k8s.io and passes the rest on; it returns a scheduler in automatic mode
// whose kubeconfig names it. The cluster keeps its CRD for the tests beside.
func noJobSetProxy(t *testing.T) *Scheduler {
	t.Helper()
	needCluster(t)
	rc, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := rest.TransportFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(rc.Host)
	if err != nil {
		t.Fatal(err)
	}
	var hidden atomic.Int32
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     tr,
		FlushInterval: -1,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/apis/"+jobSetGroup) {
			hidden.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		if hidden.Load() == 0 {
			t.Error("wick never asked whether the cluster has JobSet")
		}
	})
	s, err := New(sched.Config{Session: env.session, StateDir: env.stateDir})
	if err != nil {
		t.Fatal(err)
	}
	ks := s.(*Scheduler)
	// The keepers end with the test, before the proxy they watch through.
	kctx, kcancel := context.WithCancel(context.Background())
	var keepers sync.WaitGroup
	t.Cleanup(func() { kcancel(); keepers.Wait() })
	ks.keeper = func(id string) error {
		keepers.Go(func() { _ = ks.Keep(kctx, id) })
		return nil
	}
	ks.loader = func(string) clientcmd.ClientConfig {
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: srv.URL}
		cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{}
		cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: env.namespace}
		cfg.CurrentContext = "c"
		return clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{})
	}
	return ks
}

// A real cluster without JobSet, in automatic mode (no test switch): the plan is Jobs and
// a Service, no error; the app of two roles runs on them, one replica dialling rank 0 by
// its name; it succeeds, its logs, status and list read it, and delete leaves nothing.
func TestNoJobSetCRDFallsBackToJobs(t *testing.T) {
	s := noJobSetProxy(t)
	t.Parallel()
	server := spec.NewRole("server", env.image, "serve", "29512", "1")
	client := spec.NewRole("client", env.image, "dial", "$TORCHX_RANK0_HOST:29512")
	app := &spec.AppDef{Name: "nojs", Roles: []spec.Role{server, client}}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scale(3*time.Minute))
	defer cancel()
	req, err := s.DryRun(ctx, sched.Submission{AppID: "nojs-plan", Session: env.session, App: app, Cfg: spec.Cfg{OptNamespace: env.namespace}})
	if err != nil {
		t.Fatal(err)
	}
	if r := req.(*Request); r.JobSet != nil || len(r.Jobs) != 2 || r.Service == nil {
		t.Fatalf("plan: JobSet %v, %d Jobs, Service %v; want 2 Jobs and a Service", r.JobSet != nil, len(r.Jobs), r.Service != nil)
	}
	id := launch(t, s, app, nil)
	st := waitState(t, s, id, 3*time.Minute, terminal)
	job, _ := jobName(id, "server", 1, false)
	svc, _ := serviceName(id)
	want := "role=client replica=0 rank0=" + job + "-0." + svc + "." + env.namespace + ".svc.cluster.local got=hello from " + job + "-0"
	if got := texts(readLog(t, s, id, "client", 0, sched.LogOptions{})); st.State != spec.Succeeded || !slices.Contains(got, want) {
		t.Fatalf("state %s (%s), client's log %q; want SUCCEEDED and %q", st.State, st.Msg, got, want)
	}
	if _, err := env.cs.BatchV1().Jobs(env.namespace).Get(ctx, job, metav1.GetOptions{}); err != nil {
		t.Errorf("the server's Job %s: %v", job, err)
	}
	apps, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(apps, func(a spec.AppStatus) bool { return a.AppID == id }); i < 0 || apps[i].State != spec.Succeeded {
		t.Errorf("list %+v: want %s SUCCEEDED", apps, id)
	}
	if err := s.Delete(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	testkit.Wait(t, 2*time.Minute, "the deleted app's Jobs and pods to go", func() (bool, string) {
		jl, err := env.cs.BatchV1().Jobs(env.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector(id)})
		if err != nil {
			return false, err.Error()
		}
		pl, err := env.cs.CoreV1().Pods(env.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector(id)})
		if err != nil {
			return false, err.Error()
		}
		return len(jl.Items)+len(pl.Items) == 0, spec.Count(len(jl.Items), "Job") + ", " + spec.Count(len(pl.Items), "pod")
	})
}
