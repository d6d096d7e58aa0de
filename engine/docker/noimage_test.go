package docker

import (
	"strings"
	"testing"

	"github.com/wick-dev/wick/engine/spec"
)

// TestRoleWithoutImageRefused: demo.train (a role of image <NONE> running the wick
// binary) was offered on local_docker and failed at the Engine with "image <NONE>".
// The dry run refuses it with one line that says where it can run.
func TestRoleWithoutImageRefused(t *testing.T) {
	r := spec.NewRole("trainer", spec.None, "/usr/local/bin/wick", "demo")
	_, err := dryRun(t, &spec.AppDef{Name: "demo-train", Roles: []spec.Role{r}}, nil, "")
	if err == nil || !strings.Contains(err.Error(), `role "trainer" has no image`) || !strings.Contains(err.Error(), "local_cwd") {
		t.Fatalf("want a refusal naming the role and local_cwd, got %v", err)
	}
}
