//go:build !unix

package docker

import "context"

// lockFile is a no-op where flock does not exist; the in-process mutex still holds.
func lockFile(ctx context.Context, path string, exclusive bool) (func(), error) {
	return func() {}, ctx.Err()
}
