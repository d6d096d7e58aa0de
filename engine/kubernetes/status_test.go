package kubernetes

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wick-dev/wick/engine/spec"
)

// A cancel releases the running pod from its Job (AnnotationStopped) before it suspends
// the Job; in between the Job controller makes a pod for that index, which under load
// can start. That pod is no restart of the replica: the app was ending.
func TestPodsAfterAStoppedOneAreNoAttempts(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(time.Unix(1_700_000_000+int64(s), 0)) }
	stopped := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", CreationTimestamp: at(0), Annotations: map[string]string{AnnotationStopped: "cancelled"}}}
	stopped.Status.Phase = corev1.PodFailed
	stopped.Status.Reason = "DeadlineExceeded"
	replacement := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b", CreationTimestamp: at(5)}}
	replacement.Status.Phase = corev1.PodRunning

	pods := untilStopped([]corev1.Pod{stopped, replacement})
	if len(pods) != 1 || pods[0].Name != "a" {
		t.Fatalf("untilStopped kept %d pods, want the stopped one alone", len(pods))
	}
	if r := replicaStatus("srv", 0, pods, spec.Cancelled); r.Restarts != 0 {
		t.Errorf("replica shows %d restarts after a cancel, want 0", r.Restarts)
	}
	// Earlier attempts (the pods before the stopped one) still count.
	earlier := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "z", CreationTimestamp: at(-9)}}
	earlier.Status.Phase = corev1.PodFailed
	if got := untilStopped([]corev1.Pod{earlier, stopped, replacement}); len(got) != 2 {
		t.Errorf("untilStopped kept %d pods, want the earlier attempt and the stopped one", len(got))
	}
}
