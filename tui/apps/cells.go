package apps

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/render"
)

// sortKey is a column the list can be sorted by.
type sortKey int

const (
	byAge sortKey = iota
	byName
	byState
	byHandle
	byDuration
	byCPU // what running apps use, the busiest first (the htop habit)
	byRSS
	numSortKeys
)

// String names the sort key in the summary line.
func (k sortKey) String() string {
	return [...]string{"age", "name", "state", "handle", "duration", "cpu", "rss"}[k]
}

// column is the column of render.AppHeaders a sort key sorts; -1 for the usage
// column, which is not one of them.
func (k sortKey) column() int {
	switch k {
	case byName:
		return render.AppColName
	case byState:
		return render.AppColState
	case byHandle:
		return render.AppColHandle
	case byDuration:
		return render.AppColDuration
	case byCPU, byRSS:
		return -1
	}
	return render.AppColAge
}

// order sorts apps by key; reverse flips it. Age sorts newest first, CPU and RSS the
// largest first, with the apps that use nothing (ended) after those that do. usage is
// an app's last usage read, or nil.
func order(apps []spec.AppStatus, idx []int, key sortKey, reverse bool, now time.Time, usage func(*spec.AppStatus) *spec.Usage) {
	slices.SortStableFunc(idx, func(i, j int) int {
		a, b := &apps[i], &apps[j]
		var c int
		switch key {
		case byCPU, byRSS:
			ua, ub := usage(a), usage(b)
			switch {
			case ua == nil && ub == nil:
			case ua == nil:
				c = 1
			case ub == nil:
				c = -1
			case key == byCPU:
				c = cmp.Compare(ub.CPU, ua.CPU)
			default:
				c = cmp.Compare(ub.RSS, ua.RSS)
			}
		case byAge:
			c = b.Created.Compare(a.Created)
		case byName:
			c = cmp.Compare(a.Name, b.Name)
		case byState:
			c = cmp.Compare(a.State, b.State)
		case byHandle:
			c = cmp.Compare(a.Handle, b.Handle)
		case byDuration:
			c = cmp.Compare(b.Duration(now), a.Duration(now))
		}
		if c == 0 {
			c = cmp.Compare(a.Handle, b.Handle)
		}
		if reverse {
			c = -c
		}
		return c
	})
}

// matches reports whether an app passes the filter: every space-separated term must
// appear (case-insensitively) in its handle, name or state.
func matches(a *spec.AppStatus, terms []string) bool {
	if len(terms) == 0 {
		return true
	}
	hay := strings.ToLower(a.Handle + " " + a.Name + " " + a.State.String())
	for _, t := range terms {
		if !strings.Contains(hay, t) {
			return false
		}
	}
	return true
}

// cells is the presentation of one app: the row `wick list` prints (render.AppRow),
// without colors. Rows are made for every app on each refresh; colors are added when
// a row is drawn (styled), so a refresh of a thousand apps styles none of them.
func cells(a *spec.AppStatus, now time.Time) []string {
	return render.AppRow(a, now, render.Plain{})
}

// styled returns the cells of a with the state in its color, and its ERROR cell
// (column errCol, -1 for none) in the error's.
func styled(row []string, a *spec.AppStatus, st render.Styler, errCol int) []string {
	out := append([]string(nil), row...)
	out[render.AppColState] = st.State(a.State, row[render.AppColState])
	if errCol >= 0 && errCol < len(row) && row[errCol] != "" {
		out[errCol] = st.Error(row[errCol])
	}
	// The mark starts the name, or, in the narrow layout, the app id.
	for _, c := range []int{render.AppColName, render.AppColHandle} {
		if strings.Contains(row[c], alarmMark) {
			out[c] = strings.Replace(row[c], alarmMark, st.Error(alarmMark), 1)
			break
		}
	}
	return out
}
