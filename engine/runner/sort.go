package runner

import (
	"cmp"
	"slices"

	"github.com/wick-dev/wick/engine/spec"
)

func sortNewestFirst(apps []spec.AppStatus) {
	slices.SortStableFunc(apps, func(a, b spec.AppStatus) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.Handle, b.Handle)
	})
}
