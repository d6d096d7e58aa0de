package kubernetes

import (
	"context"
	"errors"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wick-dev/wick/engine/sched"
)

// Schedule creates the app: the owner Job (the first role's), then the Service and the
// other roles' Jobs, each owned by it. A launch that fails half way deletes what it made.
func (s *Scheduler) Schedule(ctx context.Context, info *sched.DryRunInfo, progress sched.Progress) error {
	req, err := s.plan(ctx, info.Submission, false)
	if err != nil {
		return err
	}
	c, err := s.client(req.Context)
	if err != nil {
		return err
	}
	if err := s.remember(req.AppID, where{Context: req.Context, Namespace: req.Namespace}); err != nil {
		return err
	}
	if req.JobSet != nil {
		progress.Report("creating JobSet %s (%d Jobs) in namespace %s", req.JobSet.Name, len(req.JobSet.Spec.ReplicatedJobs), req.Namespace)
		if err := c.createJobSet(ctx, req.JobSet); err != nil {
			s.forget(req.AppID)
			return c.apiError(fmt.Sprintf("creating JobSet %s in namespace %s", req.JobSet.Name, req.Namespace), err)
		}
		return s.keep(req, progress)
	}
	progress.Report("creating %d Jobs and a Service in namespace %s", len(req.Jobs), req.Namespace)
	jobs := c.batch.Jobs(req.Namespace)
	cctx, cancel := callCtx(ctx)
	owner, err := jobs.Create(cctx, req.Jobs[0], metav1.CreateOptions{FieldManager: "wick"})
	cancel()
	if err != nil {
		s.forget(req.AppID)
		return c.apiError(fmt.Sprintf("creating Job %s in namespace %s", req.Jobs[0].Name, req.Namespace), err)
	}
	ref := metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: owner.Name, UID: owner.UID}
	fail := func(err error) error {
		if left := s.rollback(c, req, owner); left != nil {
			return &sched.LeftBehindError{Err: err, Left: left}
		}
		s.forget(req.AppID)
		return err
	}
	svc := req.Service.DeepCopy()
	svc.OwnerReferences = []metav1.OwnerReference{ref}
	cctx, cancel = callCtx(ctx)
	_, err = c.core.Services(req.Namespace).Create(cctx, svc, metav1.CreateOptions{FieldManager: "wick"})
	cancel()
	if err != nil {
		return fail(c.apiError("creating Service "+svc.Name, err))
	}
	for _, j := range req.Jobs[1:] {
		j = j.DeepCopy()
		j.OwnerReferences = []metav1.OwnerReference{ref}
		cctx, cancel = callCtx(ctx)
		_, err = jobs.Create(cctx, j, metav1.CreateOptions{FieldManager: "wick"})
		cancel()
		if err != nil {
			return fail(c.apiError("creating Job "+j.Name, err))
		}
	}
	return s.keep(req, progress)
}

// keep starts the keeper of the app's logs (keep.go); one that cannot start is a
// warning, not a failed launch: the app runs, and wick status or wick delete let go
// of its pods.
func (s *Scheduler) keep(req *Request, progress sched.Progress) error {
	if err := s.startKeeper(req.AppID); err != nil {
		progress.Report("%v: the logs of pods that the cluster deletes may be lost", err)
	}
	return nil
}

// rollback deletes what a failed launch created: the owner Job (the garbage collector
// deletes what it owns) and, in case the collector is slow or absent, each of the
// others by name. It returns what it could not delete.
func (s *Scheduler) rollback(c *conn, req *Request, owner *batchv1.Job) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &bg}
	var errs []error
	del := func(what string, err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("%s (kubectl delete -n %s %s): %w", what, req.Namespace, what, err))
		}
	}
	for _, j := range req.Jobs[1:] {
		del("job/"+j.Name, c.batch.Jobs(req.Namespace).Delete(ctx, j.Name, opts))
	}
	del("service/"+req.Service.Name, c.core.Services(req.Namespace).Delete(ctx, req.Service.Name, opts))
	del("job/"+owner.Name, c.batch.Jobs(req.Namespace).Delete(ctx, owner.Name, opts))
	if err := releaseGone(ctx, c, req.Namespace, req.AppID); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
