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
