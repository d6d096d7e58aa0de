package apps

import (
	"encoding/json"
	"path/filepath"

	"github.com/wick-dev/wick/engine/safefs"
)

// stateFile is the app list's state under the UI's state directory.
const stateFile = "apps.json"

// maxStateFile bounds what is read of the state file: a sort key and a filter.
const maxStateFile = 64 << 10

// listState is what the app list remembers between two runs of the UI: its sort and
// its filter. Small JSON; the sort is saved by name, so that a new column order does
// not change what a saved file means.
type listState struct {
	Sort    string `json:"sort,omitempty"`
	Reverse bool   `json:"reverse,omitempty"`
	Filter  string `json:"filter,omitempty"`
}

// Restore makes dir the place the list keeps its sort and filter, and takes them from
// there: the list reopens as it was left. An unreadable file is the defaults (the
// state is a convenience, not worth an error).
func (m *Model) Restore(dir string) {
	m.stateDir = dir
	if dir == "" {
		return
	}
	data, err := safefs.ReadFile(filepath.Join(dir, stateFile), maxStateFile)
	if err != nil {
		return
	}
	var s listState
	if json.Unmarshal(data, &s) != nil {
		return
	}
	for k := range numSortKeys {
		if k.String() == s.Sort {
			m.sort = k
		}
	}
	m.reverse = s.Reverse
	m.filter.SetValue(s.Filter)
	m.saved = s
}

// save writes the sort and filter when they changed; errors are ignored, as above.
func (m *Model) save() {
	s := listState{Sort: m.sort.String(), Reverse: m.reverse, Filter: m.filter.Value()}
	if m.stateDir == "" || s == m.saved {
		return
	}
	data, err := json.Marshal(s)
	if err != nil || safefs.MkdirAll(m.stateDir) != nil {
		return
	}
	if safefs.WriteFileAtomic(m.stateDir, stateFile, data) == nil {
		m.saved = s
	}
}

// Close saves the sort and filter.
func (m *Model) Close() { m.save() }
