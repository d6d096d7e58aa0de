package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// Cancel stops the app and keeps its pods, so that their logs and exit codes stay: it
// marks the owner cancelled, then asks the cluster to stop the app (stop) and returns:
// the pods end within their grace period with nobody watching (wick cancel waits for
// that unless --no-wait: Wait). Cancelling a terminal app does nothing.
func (s *Scheduler) Cancel(ctx context.Context, appID string) error {
	c, o, err := s.fetch(ctx, appID, true)
	if err != nil {
		return err
	}
	if state, _, _ := appState(o.owner, o.set, o.jobs); state.Terminal() {
		return nil
	}
	cctx, cancel := callCtx(ctx)
	defer cancel()
	mark := []byte(`{"metadata":{"annotations":{"` + AnnotationCancelled + `":"true"}}}`)
	if o.set != nil {
		err = c.patchJobSet(cctx, o.ns, o.set.Name, mark)
	} else {
		_, err = c.batch.Jobs(o.ns).Patch(cctx, o.owner.Name, types.MergePatchType, mark, metav1.PatchOptions{FieldManager: "wick"})
	}
	if err != nil {
		return c.apiError("marking "+appID+" cancelled", err)
	}
	return s.stop(ctx, c, o, "cancelled")
}

// releaseWait bounds how long stop waits for the Job controller to let go of the pods
// it released (it takes its finalizer off each at once; ms on an idle cluster).
const releaseWait = 15 * time.Second

// stop asks the cluster to end the app's pods without deleting them, and returns
// without waiting for them to end. A Job's controller deletes the pods of a Job it
// suspends or fails (their logs with them), and starts a failed pod again, so:
//
//  1. each pod on a node that has not ended is released from its Job and stopped, in
//     one patch: the Job's selector labels removed and its owner reference no longer
//     the controller's (still an owner: deleting the Job deletes the pod), so that
//     the controller no longer counts, replaces or deletes it; activeDeadlineSeconds 1
//     (the one pod field that may be set on a running pod), so that its kubelet stops
//     the container (SIGTERM, SIGKILL after the pod's grace period) and the pod ends
//     Failed, DeadlineExceeded, kept with its log; the annotation AnnotationStopped
//     says why;
//  2. stop waits until the Job controller has seen each release: it takes its
//     tracking finalizer off a pod it no longer controls, from the same cache that it
//     reads the Job's pods from (so that the suspension below cannot make it delete a
//     pod it still believes its own);
//  3. each unfinished Job is suspended: nothing starts again, and its controller
//     deletes the pods that never reached a node. A sync of the Job between step 2
//     and this one (batched from an earlier pod event) sees the released pod gone and
//     makes a replacement: the suspension deletes it before it starts, and status
//     leaves such a pod out (fetch).
//
// Every step can be done twice: a later call goes on where one stopped.
func (s *Scheduler) stop(ctx context.Context, c *conn, o *appObjects, why string) error {
	cctx, cancel := callCtx(ctx)
	defer cancel()
	var errs []error
	selectors := map[types.UID][]string{}
	for i := range o.jobs {
		if sel := o.jobs[i].Spec.Selector; sel != nil {
			selectors[o.jobs[i].UID] = spec.SortedKeys(sel.MatchLabels)
		}
	}
	var released []string
	for i := range o.pods {
		p := &o.pods[i]
		if podEnded(p) || p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
			continue
		}
		ref := metav1.GetControllerOf(p)
		if ref == nil {
			if hasTrackingFinalizer(p) {
				released = append(released, p.Name) // released by an earlier call
			}
			continue
		}
		patch, err := releasePatch(p, ref, selectors[ref.UID], why)
		if err != nil {
			return fmt.Errorf("kubernetes: stopping pod %s: %w", p.Name, err)
		}
		if _, err := c.core.Pods(o.ns).Patch(cctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "wick"}); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, c.apiError("stopping pod "+p.Name, err))
			}
			continue
		}
		released = append(released, p.Name)
	}
	if len(released) > 0 {
		wctx, wcancel := context.WithTimeout(ctx, releaseWait)
		err := s.waitReleased(wctx, c, o, released)
		wcancel()
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		// Past releaseWait (no Job controller running?) the Jobs are suspended all the
		// same: a controller that comes back finds them suspended.
	}
	errs = append(errs, suspendApp(cctx, c, o)...)
	return errors.Join(errs...)
}

// suspendApp suspends the app's unfinished Jobs, or its JobSet: nothing of it starts
// again.
func suspendApp(cctx context.Context, c *conn, o *appObjects) []error {
	var errs []error
	suspend := []byte(`{"spec":{"suspend":true}}`)
	if o.set != nil {
		// The JobSet's controller would resume a Job suspended behind its back (even
		// after this patch, from a cache that has not seen it yet): the JobSet is
		// suspended, and its controller suspends the Jobs. That leaves the Job
		// controller a little longer to replace a released pod (see stop).
		if o.set.Spec.Suspend == nil || !*o.set.Spec.Suspend {
			if err := c.patchJobSet(cctx, o.ns, o.set.Name, suspend); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, c.apiError("suspending JobSet "+o.set.Name, err))
			}
		}
		return errs
	}
	for i := range o.jobs {
		j := &o.jobs[i]
		if js := stateOfJob(j); js.complete || js.failed || js.suspended || (j.Spec.Suspend != nil && *j.Spec.Suspend) {
			continue
		}
		if _, err := c.batch.Jobs(o.ns).Patch(cctx, j.Name, types.MergePatchType, suspend, metav1.PatchOptions{FieldManager: "wick"}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, c.apiError("suspending Job "+j.Name, err))
		}
	}
	return errs
}

// releasePatch is the merge patch that releases pod p from its Job (ref, whose selector
// has the label keys sel) and stops it: see stop.
func releasePatch(p *corev1.Pod, ref *metav1.OwnerReference, sel []string, why string) ([]byte, error) {
	labels := map[string]any{}
	for _, k := range sel {
		labels[k] = nil
	}
	refs := make([]metav1.OwnerReference, 0, len(p.OwnerReferences))
	for _, r := range p.OwnerReferences {
		if r.UID == ref.UID {
			no := false
			r.Controller, r.BlockOwnerDeletion = &no, nil
		}
		refs = append(refs, r)
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{
			"labels":          labels,
			"ownerReferences": refs,
			"annotations":     map[string]string{AnnotationStopped: why},
		},
		"spec": map[string]any{"activeDeadlineSeconds": 1},
	})
}

// hasTrackingFinalizer says whether the Job controller still holds p (its finalizer).
func hasTrackingFinalizer(p *corev1.Pod) bool {
	return slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer)
}

// podEnded says whether the pod has ended (its phase is final).
func podEnded(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// waitReleased waits until the Job controller has let go of each pod named (its
// finalizer is off, or the pod is gone). It watches the app's pods.
func (s *Scheduler) waitReleased(ctx context.Context, c *conn, o *appObjects, names []string) error {
	return watchPods(ctx, c, o.ns, selector(o.id), func(pods map[string]*corev1.Pod) bool {
		for _, n := range names {
			if p, ok := pods[n]; ok && hasTrackingFinalizer(p) {
				return false
			}
		}
		return true
	})
}

// stopping says whether a pod wick stopped has not ended yet.
func stopping(p *corev1.Pod) bool {
	_, ok := p.Annotations[AnnotationStopped]
	return ok && !podEnded(p) && p.DeletionTimestamp == nil
}

// Delete removes the app's JobSet, Jobs, Service and pods (the JobSet or the owner Job,
// with background propagation, and every Job of the app by label in case its owner
// reference was not set) and its record. A running app is refused with ErrRunning unless force.
func (s *Scheduler) Delete(ctx context.Context, appID string, force bool) error {
	c, o, err := s.fetch(ctx, appID, false)
	if err != nil {
		return err
	}
	if state, _, _ := appState(o.owner, o.set, o.jobs); !state.Terminal() && !force {
		return fmt.Errorf("%w: %s is %s (cancel it first, or delete with force)", sched.ErrRunning, appID, state)
	}
	cctx, cancel := callCtx(ctx)
	defer cancel()
	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &bg}
	var errs []error
	if o.set != nil {
		if err := c.deleteJobSet(cctx, o.ns, o.set.Name); err != nil {
			errs = append(errs, c.apiError("deleting JobSet "+o.set.Name, err))
		}
	}
	for i := range o.jobs {
		if err := c.batch.Jobs(o.ns).Delete(cctx, o.jobs[i].Name, opts); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, c.apiError("deleting Job "+o.jobs[i].Name, err))
		}
	}
	svcs, err := c.core.Services(o.ns).List(cctx, metav1.ListOptions{LabelSelector: selector(o.id)})
	if err == nil {
		for _, sv := range svcs.Items {
			if err := c.core.Services(o.ns).Delete(cctx, sv.Name, opts); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, c.apiError("deleting Service "+sv.Name, err))
			}
		}
	}
	// The pods wait for wick to keep their logs (keep.go): nothing is kept now.
	if err := releaseGone(ctx, c, o.ns, o.id); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	s.forget(o.id)
	s.forgetKept(o.id)
	return nil
}
