package kubernetes

import (
	"bufio"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// A keeper's stream that breaks and is taken up again from a second before its last
// line (the API's sinceTime is in seconds) writes each line once: those already
// written are skipped, the rest kept (one stamped before the last but not written),
// a line longer than the read buffer whole; the kubelet's answer for a container it
// removed (no time) is no line.
func TestResumeWriterSkipsWhatItWrote(t *testing.T) {
	var out strings.Builder
	bw := bufio.NewWriter(&out)
	w := &resumeWriter{w: bw}
	feed := func(lines ...string) {
		w.begin()
		for _, l := range lines {
			// Long lines come in chunks, as ReadSlice gives them (the first holds the
			// time: the buffer is 64 KiB).
			for n := 40; len(l) > n; n = 8 {
				if err := w.write([]byte(l[:n]), false); err != nil {
					t.Fatal(err)
				}
				l = l[n:]
			}
			if err := w.write([]byte(l), true); err != nil {
				t.Fatal(err)
			}
		}
	}
	const t0, t1 = "2026-12-06T16:00:00.100000000Z", "2026-12-06T16:00:01.500000000Z"
	feed(t0+" a\n", t1+" b\n", t1+" c long enough to come in chunks\n")
	// Taken up from 16:00:01: b and c again, then what is new (same time d).
	feed(t1+" b\n", t1+" c long enough to come in chunks\n", t1+" d\n", "2026-12-06T16:00:02Z e\n")
	// And again, after e: e again, then a stderr line stamped before e but written
	// after it (stdout's and stderr's lines are stamped apart): a line not written yet.
	feed("2026-12-06T16:00:02Z e\n", "2026-12-06T16:00:01.900000000Z late\n", "2026-12-06T16:00:03Z f\n")
	// A container the node has removed: the kubelet's words, no line of the log.
	feed("unable to retrieve container logs for containerd://5cfb2820")
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	want := t0 + " a\n" + t1 + " b\n" + t1 + " c long enough to come in chunks\n" + t1 + " d\n" +
		"2026-12-06T16:00:02Z e\n2026-12-06T16:00:01.900000000Z late\n2026-12-06T16:00:03Z f\n"
	if out.String() != want {
		t.Errorf("kept\n%s\nwant\n%s", out.String(), want)
	}
}

// A pod the cluster deleted while it ran (another role failed: JobSet's controller or
// the Job controller deleted it) reads CANCELLED, not FAILED, with no error of its
// own; one that failed before anyone deleted it stays FAILED.
func TestKilledByDeletionIsCancelled(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(time.Date(2026, 12, 6, 16, 0, s, 0, time.UTC)) }
	pod := func(finished, deleted int, mark bool) corev1.Pod {
		del := at(deleted)
		p := corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", DeletionTimestamp: &del, Annotations: map[string]string{}},
			Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
				Name:  containerName,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 143, Reason: "Error", StartedAt: at(0), FinishedAt: at(finished), Message: "terminated"}},
			}}},
		}
		if mark {
			p.Annotations[AnnotationDeleted] = "true"
		}
		return p
	}
	for _, c := range []struct {
		name string
		pod  corev1.Pod
		want spec.AppState
	}{
		{"marked by the keeper", pod(10, 50, true), spec.Cancelled},
		{"ended as the kubelet deleted it", pod(10, 11, false), spec.Cancelled},
		{"failed long before its deletion", pod(10, 40, false), spec.Failed},
	} {
		r := replicaStatus("r", 0, []corev1.Pod{c.pod}, spec.Failed)
		if r.State != c.want || (c.want == spec.Cancelled && r.StructuredError != "") {
			t.Errorf("%s: %s %q, want %s", c.name, r.State, r.StructuredError, c.want)
		}
	}
}

// Every pod of an app launched with a state directory carries wick's finalizer (in
// its Job's template: the Job controller copies it), so that its log is kept before
// the cluster lets it go; without one (nothing to keep into) none.
func TestPlanHasLogsFinalizer(t *testing.T) {
	app := &spec.AppDef{Name: "two", Roles: []spec.Role{spec.NewRole("a", "img", "true"), spec.NewRole("b", "img", "true")}}
	for _, dir := range []string{t.TempDir(), ""} {
		calls := 0
		s := discoveryServer(t, false, &calls)
		s.cfg.StateDir = dir
		req, err := s.DryRun(context.Background(), sched.Submission{AppID: "two-abc", Session: "sess", App: app, Cfg: spec.Cfg{}})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range req.(*Request).Jobs {
			got := j.Spec.Template.Finalizers
			if (dir != "") != (len(got) == 1 && got[0] == FinalizerLogs) || (dir == "" && len(got) > 0) {
				t.Errorf("state dir %q: Job %s's pods' finalizers %q", dir, j.Name, got)
			}
		}
	}
}
