package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/engine/sweep"
)

// SweepPlan writes the dry run of a sweep, as `wick run --sweep --dryrun` prints it and
// the UI's sweep preview shows it: a title (its id, size, component, scheduler and
// parallelism), every app of the grid with its values, what is chosen only at launch
// (GPUs, ports), then the plan of the first app (first): the others differ only by
// their values.
func SweepPlan(w io.Writer, sw *sweep.Sweep, first *sched.DryRunInfo, st Styler, opts TreeOptions) error {
	par := "all at once"
	if sw.MaxParallel > 0 {
		par = fmt.Sprintf("at most %d at once", sw.MaxParallel)
	}
	fmt.Fprintf(w, "%s\n", st.Header(fmt.Sprintf("=== SWEEP %s: %s of %s on %s, %s ===", sw.ID, spec.Count(len(sw.Entries), "app"), Escape(sw.Component), sw.Scheduler, par)))
	rows := make([][]string, len(sw.Entries))
	for i := range sw.Entries {
		e := &sw.Entries[i]
		row := []string{strconv.Itoa(i + 1), Escape(e.Handle)}
		for _, v := range e.Values {
			row = append(row, Escape(v))
		}
		rows[i] = row
	}
	heads := []string{"#", "HANDLE"}
	for _, n := range sw.Names {
		heads = append(heads, strings.ToUpper(Escape(n)))
	}
	if _, err := io.WriteString(w, Table(heads, rows, st)); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s\n", st.Header("=== APP 1 OF "+strconv.Itoa(len(sw.Entries))+" (the others differ only by their values) ==="))
	fmt.Fprintln(w, sw.LaunchChoice())
	return DryRun(w, first, st, opts)
}
