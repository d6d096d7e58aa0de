package docker

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/container"

	"github.com/wick-dev/wick/engine/spec"
)

// ownLabels are the labels wick writes on every container it creates. A container
// is wick's only when it carries all of them, consistent with each other: wick lists,
// stops and removes no other (a container labelled dev.wick.app-id by someone else is
// not an app of wick's).
var ownLabels = []string{
	LabelAppID, LabelRole, LabelReplicaID, LabelSession, LabelVersion, LabelApp,
	LabelTorchXVersion, LabelTorchXAppID, LabelTorchXRoleName, LabelTorchXReplicaID,
}

// maxRecord bounds the app record (LabelApp) wick reads from a label.
const maxRecord = 1 << 20

// ownReplica checks that labels are wick's full set and returns the replica id, or
// says why the container is not wick's. The replica id is bounded by
// spec.MaxReplicas: describe makes a status for every replica id up to the largest.
func ownReplica(labels map[string]string) (int, error) {
	for _, k := range ownLabels {
		if labels[k] == "" {
			return 0, fmt.Errorf("no label %s", k)
		}
	}
	for _, n := range []struct{ what, label string }{{"app id", LabelAppID}, {"role", LabelRole}, {"session", LabelSession}} {
		if err := spec.ValidateName(n.what, labels[n.label]); err != nil {
			return 0, err
		}
	}
	if labels[LabelTorchXAppID] != labels[LabelAppID] || labels[LabelTorchXRoleName] != labels[LabelRole] || labels[LabelTorchXReplicaID] != labels[LabelReplicaID] {
		return 0, fmt.Errorf("its torchx.pytorch.org labels disagree with its dev.wick labels")
	}
	raw := labels[LabelReplicaID]
	k, err := strconv.Atoi(raw)
	if err != nil || k < 0 || k >= spec.MaxReplicas || strconv.Itoa(k) != raw {
		return 0, fmt.Errorf("replica id %.20q is not a number from 0 to %d", raw, spec.MaxReplicas-1)
	}
	if len(labels[LabelApp]) > maxRecord {
		return 0, fmt.Errorf("its app record is larger than %d bytes", maxRecord)
	}
	return k, nil
}

// ownContainers keeps the containers that are wick's, and returns one warning about
// those labelled with a wick app id that are not (nil when there are none).
func ownContainers(items []container.Summary) ([]container.Summary, []string) {
	own := items[:0:0]
	var skipped []string
	why := ""
	for _, c := range items {
		if _, err := ownReplica(c.Labels); err != nil {
			skipped = append(skipped, trimSlash(first(c.Names)))
			if why == "" {
				why = err.Error()
			}
			continue
		}
		own = append(own, c)
	}
	if len(skipped) == 0 {
		return own, nil
	}
	sort.Strings(skipped)
	names := strings.Join(skipped[:min(len(skipped), 3)], ", ")
	if len(skipped) > 3 {
		names += fmt.Sprintf(" and %d more", len(skipped)-3)
	}
	return own, []string{fmt.Sprintf("skipped %d container(s) labelled %s that wick did not make (%s; %s): wick does not show, stop or remove them", len(skipped), LabelAppID, names, why)}
}
