//go:build !unix

package docker

import "context"

// lockFile is a no-op where flock does not exist: there, concurrent launches may race
// to create a network, and a delete may remove one a launch is about to use.
func lockFile(ctx context.Context, path string, exclusive bool) (func(), error) {
	return func() {}, ctx.Err()
}
