package spec

import (
	"testing"
	"time"
)

func TestExitCodeIsTheFirstFailure(t *testing.T) {
	t0 := time.Now()
	st := AppStatus{Roles: []RoleStatus{{Role: "r", Replicas: []ReplicaStatus{
		{ID: 0, ExitCode: IntPtr(143), Ended: t0.Add(2 * time.Second)}, // stopped by the failure
		{ID: 1, ExitCode: IntPtr(1), Ended: t0.Add(time.Second)},       // the failure
		{ID: 2, ExitCode: IntPtr(0), Ended: t0},
	}}}}
	if code, ok := st.ExitCode(); !ok || code != 1 {
		t.Errorf("ExitCode = %d, %v; want 1, true", code, ok)
	}
	if _, ok := (&AppStatus{Roles: []RoleStatus{{Replicas: []ReplicaStatus{{}}}}}).ExitCode(); ok {
		t.Error("an app with no ended replica has an exit code")
	}
}

func TestAttemptsAreBounded(t *testing.T) {
	var r ReplicaStatus
	for n := range MaxAttempts + 50 {
		r.AddAttempt(Attempt{Attempt: n, ExitCode: IntPtr(n % 7)})
	}
	if len(r.Attempts) != MaxAttempts || r.Attempts[0].Attempt != 50 || r.Attempts[MaxAttempts-1].Attempt != MaxAttempts+49 {
		t.Fatalf("kept %d attempts, %d..%d", len(r.Attempts), r.Attempts[0].Attempt, r.Attempts[len(r.Attempts)-1].Attempt)
	}
	if a, ok := r.Attempt(120); !ok || a.Attempt != 120 || *a.ExitCode != 120%7 {
		t.Errorf("Attempt(120) = %+v, %v", a, ok)
	}
	for _, n := range []int{0, 49, MaxAttempts + 50} {
		if _, ok := r.Attempt(n); ok {
			t.Errorf("Attempt(%d) is recorded", n)
		}
	}
}
