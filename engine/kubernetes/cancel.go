package kubernetes

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wick-dev/wick/engine/sched"
)

// Cancel stops the app: it marks the owner cancelled, then suspends every unfinished
// Job of the app, whose controller deletes their pods (SIGTERM, then SIGKILL after
// the pods' grace period). It returns once the Jobs are suspended; the pods end
// within their grace. Cancelling a terminal app does nothing.
func (s *Scheduler) Cancel(ctx context.Context, appID string) error {
	c, o, err := s.fetch(ctx, appID, false)
	if err != nil {
		return err
	}
	if state, _, _ := appState(o.owner, o.jobs); state.Terminal() {
		return nil
	}
	cctx, cancel := callCtx(ctx)
	defer cancel()
	jobs := c.batch.Jobs(o.ns)
	mark := []byte(`{"metadata":{"annotations":{"` + AnnotationCancelled + `":"true"}}}`)
	if _, err := jobs.Patch(cctx, o.owner.Name, types.MergePatchType, mark, metav1.PatchOptions{FieldManager: "wick"}); err != nil {
		return c.apiError("marking "+appID+" cancelled", err)
	}
	suspend := []byte(`{"spec":{"suspend":true}}`)
	var errs []error
	for i := range o.jobs {
		js := stateOfJob(&o.jobs[i])
		if js.complete || js.failed || js.suspended {
			continue
		}
		if _, err := jobs.Patch(cctx, o.jobs[i].Name, types.MergePatchType, suspend, metav1.PatchOptions{FieldManager: "wick"}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, c.apiError("suspending Job "+o.jobs[i].Name, err))
		}
	}
	return errors.Join(errs...)
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
	svcs, err := c.core.Services(o.ns).List(cctx, metav1.ListOptions{LabelSelector: selector(appID)})
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
	s.forget(appID)
	return nil
}
