//go:build !unix

package execx

import "os/exec"

// bound leaves the default (kill the command alone) where process groups do not exist.
func bound(*exec.Cmd) {}
