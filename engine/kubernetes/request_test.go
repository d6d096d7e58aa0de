package kubernetes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// The kubelet expands $(VAR) in command, args and env values and reads $$ as $
// (Kubernetes API reference, Container.args: "Double $$ are reduced to a single $,
// which allows for escaping the $(VAR_NAME) syntax"): what the user wrote must come
// through as written, and the replica id macro as the expansion of WICK_REPLICA_ID.
func TestEscapeKeepsTextAndExpandsReplicaID(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                     "plain",
		"$(HOME)":                   "$$(HOME)",
		"$$":                        "$$$$",
		"cost $5":                   "cost $$5",
		"rank" + replicaPlaceholder: "rank$(WICK_REPLICA_ID)",
	} {
		if got := escape(in); got != want {
			t.Errorf("escape(%q) = %q, want %q", in, got, want)
		}
	}
}

// dryRun plans app in namespace ns without a cluster.
func dryRun(t *testing.T, app *spec.AppDef, cfg spec.Cfg) (*Request, error) {
	t.Helper()
	s, err := New(sched.Config{Session: "sess", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s.(*Scheduler).noJobSet = true // whatever cluster KUBECONFIG names
	if cfg == nil {
		cfg = spec.Cfg{}
	}
	if _, ok := cfg[OptNamespace]; !ok {
		cfg[OptNamespace] = "ns"
	}
	req, err := s.DryRun(context.Background(), sched.Submission{AppID: "echo-abc", Session: "sess", App: app, Cfg: cfg})
	if err != nil {
		return nil, err
	}
	return req.(*Request), nil
}

// utils.echo on two replicas: one Indexed Job of two completions, its pods on the
// app's headless Service, the replica id macro from the completion index, env with
// WICK_REPLICA_ID first (so later values may use it) and TorchX's names.
func TestPlanIndexedJob(t *testing.T) {
	role := spec.NewRole("echo", "alpine", "echo", "hello", "${replica_id}", "${app_id}")
	role.NumReplicas = 2
	role.Env = map[string]string{"RANK_FILE": "/out/${replica_id}"}
	role.Resource = spec.Resource{CPU: 2, GPU: 1, MemMB: 1024}
	req, err := dryRun(t, &spec.AppDef{Name: "echo", Roles: []spec.Role{role}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if req.Namespace != "ns" || req.Service.Name != "echo-abc" || req.Service.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("service %+v in %s: want headless echo-abc in ns", req.Service.ObjectMeta, req.Namespace)
	}
	if len(req.Jobs) != 1 {
		t.Fatalf("%d jobs, want 1", len(req.Jobs))
	}
	j := req.Jobs[0]
	if j.Name != "echo-abc-echo" || *j.Spec.Completions != 2 || *j.Spec.Parallelism != 2 || *j.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("job %s: completions %d parallelism %d mode %s", j.Name, *j.Spec.Completions, *j.Spec.Parallelism, *j.Spec.CompletionMode)
	}
	if j.Annotations[AnnotationApp] == "" || j.Labels[LabelAppID] != "echo-abc" || j.Labels[LabelSession] != "sess" || j.Labels[LabelRole] != "echo" {
		t.Errorf("job labels %v, annotations %d", j.Labels, len(j.Annotations))
	}
	pod := j.Spec.Template.Spec
	if pod.Subdomain != "echo-abc" || pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("pod subdomain %q restart %q", pod.Subdomain, pod.RestartPolicy)
	}
	c := pod.Containers[0]
	if want := []string{"hello", "$(WICK_REPLICA_ID)", "echo-abc"}; !slices.Equal(c.Args, want) || !slices.Equal(c.Command, []string{"echo"}) {
		t.Errorf("command %q args %q, want echo %q", c.Command, c.Args, want)
	}
	if c.Env[0].Name != envReplicaID || c.Env[0].ValueFrom == nil || !strings.Contains(c.Env[0].ValueFrom.FieldRef.FieldPath, "job-completion-index") {
		t.Errorf("first env %+v, want WICK_REPLICA_ID from the completion index", c.Env[0])
	}
	env := map[string]string{}
	for _, e := range c.Env[1:] {
		env[e.Name] = e.Value
	}
	if env["RANK_FILE"] != "/out/$(WICK_REPLICA_ID)" || env[spec.Rank0Env] != "echo-abc-echo-0.echo-abc.ns.svc.cluster.local" || env["WICK_APP_ID"] != "echo-abc" || env[envErrorFile] != terminationLog {
		t.Errorf("env %v", env)
	}
	lim := c.Resources.Limits
	if lim.Cpu().String() != "2" || lim.Memory().String() != "1Gi" || lim.Name("nvidia.com/gpu", "").String() != "1" {
		t.Errorf("limits %v, want cpu 2, memory 1Gi, nvidia.com/gpu 1", lim)
	}
	if c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
		t.Errorf("termination message policy %q", c.TerminationMessagePolicy)
	}
}

// Retries: REPLICA is per index and fails the Job once an index has none left; the
// other policies are the Job's backoff limit.
func TestPlanRetries(t *testing.T) {
	role := spec.NewRole("r", "img", "true")
	role.MaxRetries = 3
	role.RetryPolicy = spec.RetryReplica
	req, err := dryRun(t, &spec.AppDef{Name: "x", Roles: []spec.Role{role}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	js := req.Jobs[0].Spec
	if js.BackoffLimitPerIndex == nil || *js.BackoffLimitPerIndex != 3 || js.MaxFailedIndexes == nil || *js.MaxFailedIndexes != 0 || js.BackoffLimit != nil {
		t.Errorf("REPLICA: %+v", js)
	}
	role.RetryPolicy = spec.RetryApplication
	req, err = dryRun(t, &spec.AppDef{Name: "x", Roles: []spec.Role{role}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if js := req.Jobs[0].Spec; js.BackoffLimit == nil || *js.BackoffLimit != 3 || js.BackoffLimitPerIndex != nil {
		t.Errorf("APPLICATION: %+v", js)
	}
}

// Names Kubernetes refuses are refused at planning, in one line: a role whose pods'
// host names pass 63 characters, two roles that make one name, a namespace that is
// not a DNS-1123 label, an unknown pull policy, a role without an image.
func TestPlanRefusesBadNames(t *testing.T) {
	img := func(name string) spec.Role { return spec.NewRole(name, "img", "true") }
	cases := []struct {
		app  *spec.AppDef
		cfg  spec.Cfg
		want string
	}{
		{&spec.AppDef{Name: "x", Roles: []spec.Role{img(strings.Repeat("r", 60))}}, nil, "not one Kubernetes takes"},
		{&spec.AppDef{Name: "x", Roles: []spec.Role{img("a_b"), img("a.b")}}, nil, "make the same Kubernetes name"},
		{&spec.AppDef{Name: "x", Roles: []spec.Role{img("a")}}, spec.Cfg{OptNamespace: "Bad_NS"}, "not a namespace name"},
		{&spec.AppDef{Name: "x", Roles: []spec.Role{img("a")}}, spec.Cfg{OptImagePullPolicy: "Sometimes"}, "want Always, IfNotPresent or Never"},
		{&spec.AppDef{Name: "x", Roles: []spec.Role{spec.NewRole("a", "", "true")}}, nil, "has no image"},
	}
	for _, c := range cases {
		_, err := dryRun(t, c.app, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v %v: %v, want one line with %q", c.app.RoleNames(), c.cfg, err, c.want)
		}
	}
}

// A server that does not answer is named in one line, as unreachable (wick's exit
// code 4); with no app recorded, list asks the server nothing, so a machine without
// Kubernetes lists as before.
func TestUnreachableServerNamed(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "config")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kc)
	s, err := New(sched.Config{Session: "t", StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = s.Describe(ctx, "echo-abc")
	if err == nil || !errors.Is(err, sched.ErrUnreachable) || !strings.Contains(err.Error(), "https://127.0.0.1:1") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("describe against a closed port: %v, want one line, unreachable, naming https://127.0.0.1:1", err)
	}
	if apps, err := s.List(ctx); err != nil || len(apps) != 0 {
		t.Errorf("list with no records: %v, %v; want nothing and no error", apps, err)
	}
}
