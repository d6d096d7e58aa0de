package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/wick-dev/wick/engine/spec"
)

// JobSet (sigs.k8s.io/jobset) is the owner of an app on a cluster that has its CRD:
// one JobSet with a replicated Job per role (replicas 1: the role's Indexed Job), whose
// controller makes the Jobs (<jobset>-<role>-0) and the headless Service (the JobSet's
// network subdomain), owns them, and ends the app as a whole: the first failed Job
// fails the JobSet, and its controller deletes the Jobs still running (their pods with
// them: JobSet's own behaviour; the failed one, its pods and their logs stay); all
// roles done completes it. wick reads it through the dynamic client (no dependency on
// JobSet's Go module, whose k8s.io modules are newer than wick's) and the child Jobs
// and pods, which carry wick's labels as the Jobs it makes itself do.
const (
	jobSetGroup      = "jobset.x-k8s.io"
	jobSetVersion    = "v1alpha2"
	jobSetResource   = "jobsets"
	jobSetAPIVersion = jobSetGroup + "/" + jobSetVersion
	// labelJobSetName is the JobSet controller's label of its Jobs and pods.
	labelJobSetName = "jobset.sigs.k8s.io/jobset-name"
	// The JobSet's conditions.
	jobSetCompleted = "Completed"
	jobSetFailed    = "Failed"
)

var jobSetGVR = schema.GroupVersionResource{Group: jobSetGroup, Version: jobSetVersion, Resource: jobSetResource}

// JobSet is the part of JobSet's v1alpha2 API that wick writes and reads.
type JobSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              JobSetSpec   `json:"spec"`
	Status            JobSetStatus `json:"status,omitempty"`
}

// JobSetSpec is a JobSet's spec: one replicated Job per role.
type JobSetSpec struct {
	ReplicatedJobs []ReplicatedJob `json:"replicatedJobs"`
	Network        *JobSetNetwork  `json:"network,omitempty"`
	Suspend        *bool           `json:"suspend,omitempty"`
}

// ReplicatedJob is one role: its Job's template, made once (replicas 1).
type ReplicatedJob struct {
	Name     string                  `json:"name"`
	Replicas int32                   `json:"replicas"`
	Template batchv1.JobTemplateSpec `json:"template"`
}

// JobSetNetwork asks the JobSet controller for the headless Service that names the pods.
type JobSetNetwork struct {
	EnableDNSHostnames       *bool  `json:"enableDNSHostnames,omitempty"`
	Subdomain                string `json:"subdomain,omitempty"`
	PublishNotReadyAddresses *bool  `json:"publishNotReadyAddresses,omitempty"`
}

// JobSetStatus is what wick reads of a JobSet's status.
type JobSetStatus struct {
	Conditions    []metav1.Condition `json:"conditions,omitempty"`
	TerminalState string             `json:"terminalState,omitempty"`
}

// DeepCopyObject makes JobSet a runtime.Object (for watch events).
func (js *JobSet) DeepCopyObject() runtime.Object {
	out := &JobSet{}
	b, _ := json.Marshal(js)
	_ = json.Unmarshal(b, out)
	return out
}

// ended reads the JobSet's terminal condition: Completed or Failed, its message and
// when.
func (js *JobSet) ended() (cond string, msg string, at metav1.Time) {
	for _, c := range js.Status.Conditions {
		if c.Status == metav1.ConditionTrue && (c.Type == jobSetCompleted || c.Type == jobSetFailed) {
			return c.Type, c.Reason + ": " + c.Message, c.LastTransitionTime
		}
	}
	return "", "", metav1.Time{}
}

// jobSetCache remembers, per API server, whether it has JobSet's API: asked once per
// process (discovery of jobset.x-k8s.io/v1alpha2).
type jobSetCache struct {
	mu    sync.Mutex
	known bool
	has   bool
}

// hasJobSet says whether the cluster serves JobSets: the discovery document of
// jobset.x-k8s.io/v1alpha2 lists jobsets. A cluster without it answers 404 (false, no
// error); an error that says nothing (unreachable) is returned and not remembered.
func (c *conn) hasJobSet(ctx context.Context) (bool, error) {
	c.jobSet.mu.Lock()
	defer c.jobSet.mu.Unlock()
	if c.jobSet.known {
		return c.jobSet.has, nil
	}
	cctx, cancel := callCtx(ctx)
	defer cancel()
	raw, err := c.core.RESTClient().Get().AbsPath("/apis/" + jobSetAPIVersion).DoRaw(cctx)
	switch {
	case apierrors.IsNotFound(err):
		c.jobSet.known, c.jobSet.has = true, false
		return false, nil
	case err != nil:
		return false, c.apiError("asking whether the cluster has JobSet ("+jobSetAPIVersion+")", err)
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(raw, &list); err != nil {
		return false, fmt.Errorf("kubernetes: reading the discovery of %s: %w", jobSetAPIVersion, err)
	}
	c.jobSet.known = true
	for _, r := range list.APIResources {
		if r.Name == jobSetResource {
			c.jobSet.has = true
		}
	}
	return c.jobSet.has, nil
}

// useJobSet says whether apps go into a JobSet on c's cluster: when it has the CRD,
// unless the scheduler was made without JobSets.
func (s *Scheduler) useJobSet(ctx context.Context, c *conn) (bool, error) {
	if s.noJobSet {
		return false, nil
	}
	return c.hasJobSet(ctx)
}

// planJobSet turns a planned request into its JobSet: the Jobs become its replicated
// Jobs (named by role, their names those the controller gives them), the Service its
// network (the controller makes it), the owner's annotation the JobSet's.
func planJobSet(req *Request, roles []string) *JobSet {
	on := true
	js := &JobSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: jobSetAPIVersion, Kind: "JobSet"},
		ObjectMeta: metav1.ObjectMeta{Name: req.Service.Name, Namespace: req.Namespace, Labels: req.Service.Labels, Annotations: req.Jobs[0].Annotations},
		Spec: JobSetSpec{
			Network: &JobSetNetwork{EnableDNSHostnames: &on, Subdomain: req.Service.Name, PublishNotReadyAddresses: &on},
		},
	}
	for i, j := range req.Jobs {
		js.Spec.ReplicatedJobs = append(js.Spec.ReplicatedJobs, ReplicatedJob{
			Name:     dnsName(roles[i]),
			Replicas: 1,
			Template: batchv1.JobTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: j.Labels}, Spec: j.Spec},
		})
	}
	return js
}

// jobSets is the dynamic client of JobSets in ns.
func (c *conn) jobSets(ns string) dynamic.ResourceInterface {
	return c.dyn.Resource(jobSetGVR).Namespace(ns)
}

// toUnstructured and fromUnstructured convert a JobSet through its JSON.
func toUnstructured(js *JobSet) (*unstructured.Unstructured, error) {
	b, err := json.Marshal(js)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	return u, u.UnmarshalJSON(b)
}

func fromUnstructured(u *unstructured.Unstructured) (*JobSet, error) {
	b, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	js := &JobSet{}
	return js, json.Unmarshal(b, js)
}

// createJobSet creates the app's JobSet.
func (c *conn) createJobSet(ctx context.Context, js *JobSet) error {
	u, err := toUnstructured(js)
	if err != nil {
		return fmt.Errorf("kubernetes: encoding the JobSet: %w", err)
	}
	cctx, cancel := callCtx(ctx)
	defer cancel()
	_, err = c.jobSets(js.Namespace).Create(cctx, u, metav1.CreateOptions{FieldManager: "wick"})
	return err
}

// getJobSet reads app id's JobSet in ns: nil when there is none (or the cluster has no
// JobSet API).
func (c *conn) getJobSet(ctx context.Context, ns, id string) (*JobSet, error) {
	name, err := serviceName(id)
	if err != nil {
		return nil, nil //nolint:nilerr // no JobSet can have that name
	}
	cctx, cancel := callCtx(ctx)
	defer cancel()
	u, err := c.jobSets(ns).Get(cctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, c.apiError("reading JobSet "+name, err)
	}
	js, err := fromUnstructured(u)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: reading JobSet %s: %w", name, err)
	}
	if js.Labels[LabelAppID] != id {
		return nil, nil // not this app's (another app of the same DNS name)
	}
	return js, nil
}

// listJobSets lists wick's JobSets in ns (metav1.NamespaceAll for every namespace).
func (c *conn) listJobSets(ctx context.Context, ns string) ([]JobSet, error) {
	cctx, cancel := callCtx(ctx)
	defer cancel()
	ul, err := c.jobSets(ns).List(cctx, metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + managedBy})
	if err != nil {
		return nil, err
	}
	out := make([]JobSet, 0, len(ul.Items))
	for i := range ul.Items {
		js, err := fromUnstructured(&ul.Items[i])
		if err != nil {
			continue
		}
		out = append(out, *js)
	}
	return out, nil
}

// patchJobSet applies a merge patch to the JobSet name in ns.
func (c *conn) patchJobSet(ctx context.Context, ns, name string, patch []byte) error {
	cctx, cancel := callCtx(ctx)
	defer cancel()
	_, err := c.jobSets(ns).Patch(cctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "wick"})
	return err
}

// deleteJobSet deletes the JobSet name in ns; the garbage collector deletes its Jobs,
// their pods and its Service.
func (c *conn) deleteJobSet(ctx context.Context, ns, name string) error {
	cctx, cancel := callCtx(ctx)
	defer cancel()
	bg := metav1.DeletePropagationBackground
	err := c.jobSets(ns).Delete(cctx, name, metav1.DeleteOptions{PropagationPolicy: &bg})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// jobSetLister lists and watches the JobSet name in ns.
func jobSetLister(c *conn, ns, name string) lister[JobSet] {
	opts := metav1.ListOptions{FieldSelector: "metadata.name=" + name}
	return lister[JobSet]{
		what: "JobSet " + name,
		list: func(ctx context.Context) ([]JobSet, string, error) {
			ul, err := c.jobSets(ns).List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			out := make([]JobSet, 0, len(ul.Items))
			for i := range ul.Items {
				js, err := fromUnstructured(&ul.Items[i])
				if err != nil {
					return nil, "", fmt.Errorf("kubernetes: reading JobSet %s: %w", name, err)
				}
				out = append(out, *js)
			}
			return out, ul.GetResourceVersion(), nil
		},
		watch: func(ctx context.Context, rv string) (watch.Interface, error) {
			o := opts
			o.ResourceVersion, o.AllowWatchBookmarks = rv, true
			w, err := c.jobSets(ns).Watch(ctx, o)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
				if u, ok := ev.Object.(*unstructured.Unstructured); ok {
					if js, err := fromUnstructured(u); err == nil {
						ev.Object = js
					}
				}
				return ev, true
			}), nil
		},
	}
}

// jobSetState is the state of an app whose JobSet ended: Completed is SUCCEEDED, Failed
// FAILED with the first failed Job's reason where one is left (else the JobSet's).
func jobSetState(set *JobSet, jobs []batchv1.Job) (spec.AppState, string, time.Time, bool) {
	cond, msg, at := set.ended()
	switch cond {
	case jobSetCompleted:
		return spec.Succeeded, "", at.Time, true
	case jobSetFailed:
		for i := range jobs {
			if js := stateOfJob(&jobs[i]); js.failed {
				return spec.Failed, "Job " + jobs[i].Name + ": " + js.msg, at.Time, true
			}
		}
		return spec.Failed, "JobSet " + set.Name + ": " + msg, at.Time, true
	}
	return spec.Pending, "", time.Time{}, false
}
