package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wick-dev/wick/engine/sched"
)

// Cancel stops the app and keeps its pods, so that their logs and exit codes stay: it
// marks the owner cancelled, then stops the app (stop). It returns once the pods have
// ended, or when ctx ends, after suspending the Jobs all the same (what had not ended
// by then is deleted by its Job's controller). Cancelling a terminal app does nothing.
func (s *Scheduler) Cancel(ctx context.Context, appID string) error {
	c, o, err := s.fetch(ctx, appID, true)
	if err != nil {
		return err
	}
	if state, _, _ := appState(o.owner, o.jobs); state.Terminal() {
		return nil
	}
	cctx, cancel := callCtx(ctx)
	defer cancel()
	mark := []byte(`{"metadata":{"annotations":{"` + AnnotationCancelled + `":"true"}}}`)
	if _, err := c.batch.Jobs(o.ns).Patch(cctx, o.owner.Name, types.MergePatchType, mark, metav1.PatchOptions{FieldManager: "wick"}); err != nil {
		return c.apiError("marking "+appID+" cancelled", err)
	}
	return s.stop(ctx, c, o, "cancelled", true)
}

// stopGrace is how long stop waits past the pods' grace period for them to end.
const stopGrace = 10 * time.Second

// stop ends the app's pods without deleting them (a Job's controller deletes the pods
// of a Job it suspends or fails, and their logs with them):
//
//  1. each unfinished Job is kept from failing on the kills (a failed Job deletes its
//     other pods at once): backoffLimit, or maxFailedIndexes for per-index retries,
//     raised to what never fails;
//  2. each pod on a node that has not ended gets activeDeadlineSeconds 1 (the one pod
//     field that may be set on a running pod) and the annotation AnnotationStopped
//     (why): its kubelet stops the container (SIGTERM, SIGKILL after the pod's grace
//     period) and the pod ends Failed, DeadlineExceeded, kept with its log;
//  3. once those pods have ended, each unfinished Job is suspended, so that nothing
//     starts again (a retry's pod comes 10 s after a failure at the earliest, the Job
//     controller's back-off): its controller deletes the pods that never started.
//
// When ctx ends before the pods have, force suspends the Jobs all the same (with a
// context of its own); without force stop returns ctx's error, and a later call goes
// on where it stopped (every step can be done twice).
func (s *Scheduler) stop(ctx context.Context, c *conn, o *appObjects, why string, force bool) error {
	cctx, cancel := callCtx(ctx)
	defer cancel()
	jobs := c.batch.Jobs(o.ns)
	var errs []error
	var open []string
	for i := range o.jobs {
		j := &o.jobs[i]
		if js := stateOfJob(j); js.complete || js.failed || js.suspended {
			continue
		}
		open = append(open, j.Name)
		hold := []byte(`{"spec":{"backoffLimit":2147483647}}`)
		if j.Spec.BackoffLimitPerIndex != nil && j.Spec.Completions != nil {
			hold = []byte(`{"spec":{"maxFailedIndexes":` + strconv.Itoa(int(*j.Spec.Completions)) + `}}`)
		}
		if _, err := jobs.Patch(cctx, j.Name, types.MergePatchType, hold, metav1.PatchOptions{FieldManager: "wick"}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, c.apiError("holding Job "+j.Name, err))
		}
	}
	grace := int64(0)
	var stopping []string
	kill := []byte(`{"metadata":{"annotations":{"` + AnnotationStopped + `":` + strconv.Quote(why) + `}},"spec":{"activeDeadlineSeconds":1}}`)
	for i := range o.pods {
		p := &o.pods[i]
		if podEnded(p) || p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
			continue
		}
		stopping = append(stopping, p.Name)
		if g := p.Spec.TerminationGracePeriodSeconds; g != nil && *g > grace {
			grace = *g
		}
		if _, ok := p.Annotations[AnnotationStopped]; ok {
			continue
		}
		if _, err := c.core.Pods(o.ns).Patch(cctx, p.Name, types.MergePatchType, kill, metav1.PatchOptions{FieldManager: "wick"}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, c.apiError("stopping pod "+p.Name, err))
		}
	}
	if len(stopping) > 0 {
		wctx, wcancel := context.WithTimeout(ctx, time.Duration(grace)*time.Second+stopGrace)
		err := s.waitEnded(wctx, c, o, stopping)
		wcancel()
		if err != nil && ctx.Err() != nil && !force {
			return ctx.Err()
		}
	}
	sctx, scancel := callCtx(context.WithoutCancel(ctx))
	defer scancel()
	suspend := []byte(`{"spec":{"suspend":true}}`)
	for _, name := range open {
		if _, err := jobs.Patch(sctx, name, types.MergePatchType, suspend, metav1.PatchOptions{FieldManager: "wick"}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, c.apiError("suspending Job "+name, err))
		}
	}
	return errors.Join(errs...)
}

// podEnded says whether the pod has ended (its phase is final).
func podEnded(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// waitEnded waits until none of the pods named is still running: each has ended or is
// gone. It watches the app's pods (one list, then the changes).
func (s *Scheduler) waitEnded(ctx context.Context, c *conn, o *appObjects, names []string) error {
	left := map[string]bool{}
	for _, n := range names {
		left[n] = true
	}
	return watchPods(ctx, c, o.ns, selector(o.owner.Labels[LabelAppID]), func(pods map[string]*corev1.Pod) bool {
		for n := range left {
			if p, ok := pods[n]; !ok || podEnded(p) {
				delete(left, n)
			}
		}
		return len(left) == 0
	})
}

// Delete removes the app's Jobs, Service and pods (the owner Job, with background
// propagation, and every Job of the app by label in case its owner reference was not
// set) and its record. A running app is refused with ErrRunning unless force.
func (s *Scheduler) Delete(ctx context.Context, appID string, force bool) error {
	c, o, err := s.fetch(ctx, appID, false)
	if err != nil {
		return err
	}
	if state, _, _ := appState(o.owner, o.jobs); !state.Terminal() && !force {
		return fmt.Errorf("%w: %s is %s (cancel it first, or delete with force)", sched.ErrRunning, appID, state)
	}
	cctx, cancel := callCtx(ctx)
	defer cancel()
	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &bg}
	var errs []error
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
	if err := errors.Join(errs...); err != nil {
		return err
	}
	s.forget(o.id)
	return nil
}
