package kubernetes

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// lister lists objects of one kind (their items and the list's resource version) and
// watches them from a version on.
type lister[T any] struct {
	what  string
	list  func(ctx context.Context) ([]T, string, error)
	watch func(ctx context.Context, rv string) (watch.Interface, error)
}

// podLister lists and watches the pods that sel selects in ns.
func podLister(c *conn, ns, sel string) lister[corev1.Pod] {
	opts := metav1.ListOptions{LabelSelector: sel}
	return lister[corev1.Pod]{
		what: "the pods " + sel,
		list: func(ctx context.Context) ([]corev1.Pod, string, error) {
			l, err := c.core.Pods(ns).List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			return l.Items, l.ResourceVersion, nil
		},
		watch: func(ctx context.Context, rv string) (watch.Interface, error) {
			o := opts
			o.ResourceVersion, o.AllowWatchBookmarks = rv, true
			return c.core.Pods(ns).Watch(ctx, o)
		},
	}
}

// jobLister lists and watches the Jobs that sel selects in ns.
func jobLister(c *conn, ns, sel string) lister[batchv1.Job] {
	opts := metav1.ListOptions{LabelSelector: sel}
	return lister[batchv1.Job]{
		what: "the Jobs " + sel,
		list: func(ctx context.Context) ([]batchv1.Job, string, error) {
			l, err := c.batch.Jobs(ns).List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			return l.Items, l.ResourceVersion, nil
		},
		watch: func(ctx context.Context, rv string) (watch.Interface, error) {
			o := opts
			o.ResourceVersion, o.AllowWatchBookmarks = rv, true
			return c.batch.Jobs(ns).Watch(ctx, o)
		},
	}
}

// watchPods calls done with the pods that sel selects in ns, by name: see watchObjects.
func watchPods(ctx context.Context, c *conn, ns, sel string, done func(map[string]*corev1.Pod) bool) error {
	return watchObjects(ctx, c, podLister(c, ns, sel), done)
}

// watchObjects calls done with the objects of l, by name, as the API server holds them:
// first from one list, then after each change a watch reports, until done says true
// (nil), ctx ends (its error) or a call fails. A watch the server ends (its timeout)
// starts again from the last version seen; one whose version is too old (410 Gone)
// starts again from a new list.
func watchObjects[T any, PT interface {
	*T
	metav1.Object
}](ctx context.Context, c *conn, l lister[T], done func(map[string]*T) bool) error {
	for {
		cctx, cancel := callCtx(ctx)
		items, rv, err := l.list(cctx)
		cancel()
		if err != nil {
			return c.apiError("listing "+l.what, err)
		}
		objs := make(map[string]*T, len(items))
		for i := range items {
			objs[PT(&items[i]).GetName()] = &items[i]
		}
		if done(objs) {
			return nil
		}
		again, err := follow[T, PT](ctx, c, l, rv, objs, done)
		if err != nil || !again {
			return err
		}
	}
}

// follow applies the changes of watches from version rv on to objs, calling done after
// each; again says that the version was too old and a new list is needed.
func follow[T any, PT interface {
	*T
	metav1.Object
}](ctx context.Context, c *conn, l lister[T], rv string, objs map[string]*T, done func(map[string]*T) bool) (again bool, err error) {
	for {
		w, err := l.watch(ctx, rv)
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			return false, c.apiError("watching "+l.what, err)
		}
		again, end, err := drain[T, PT](w, l, &rv, objs, done)
		w.Stop()
		if again || end || err != nil {
			return again, err
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
	}
}

// drain reads one watch until it ends: end says that done said true.
func drain[T any, PT interface {
	*T
	metav1.Object
}](w watch.Interface, l lister[T], rv *string, objs map[string]*T, done func(map[string]*T) bool) (again, end bool, err error) {
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			if se, ok := ev.Object.(*metav1.Status); ok && se.Code == 410 {
				return true, false, nil
			}
			return false, false, fmt.Errorf("kubernetes: watching %s: %w", l.what, apierrors.FromObject(ev.Object))
		}
		o, ok := ev.Object.(PT)
		if !ok {
			return false, false, fmt.Errorf("kubernetes: watching %s: a %T", l.what, ev.Object)
		}
		*rv = o.GetResourceVersion()
		switch ev.Type {
		case watch.Bookmark:
			continue
		case watch.Deleted:
			delete(objs, o.GetName())
		default:
			objs[o.GetName()] = (*T)(o)
		}
		if done(objs) {
			return false, true, nil
		}
	}
	return false, false, nil
}
