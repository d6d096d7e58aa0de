package render

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/wick-dev/wick/engine/ranks"
	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
)

// DryRun writes the plan of a dry run: the application as the scheduler will see it,
// then the scheduler's request.
func DryRun(w io.Writer, info *sched.DryRunInfo, st Styler, opts TreeOptions) error {
	fmt.Fprintf(w, "%s\n", st.Header("=== APPLICATION ==="))
	fmt.Fprintf(w, "%s %s\n", st.Key("handle:"), st.Value(info.Handle().String()))
	if err := Tree(w, info.App, st, opts); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s\n", st.Header("=== SCHEDULER REQUEST ("+info.Scheduler+") ==="))
	return Tree(w, info.Request, st, opts)
}

// Duration prints d compactly: 850ms, 12.3s, 4m05s, 2h10m, 3d4h.
func Duration(d time.Duration) string {
	switch {
	case d < 0:
		return "-"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

// Age prints how long ago t was, or "-" for the zero time. It is printed as Duration
// is, to the same precision: a running app's AGE and DURATION (both from its creation)
// read the same.
func Age(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return Duration(now.Sub(t))
}

func exitText(code *int) string {
	if code == nil {
		return "-"
	}
	return strconv.Itoa(*code)
}

// AppRow is the cells of one app in the app list, shared by `wick list` and the UI.
func AppRow(a *spec.AppStatus, now time.Time, st Styler) []string {
	running, total := a.Replicas()
	exit := "-"
	if code, ok := a.ExitCode(); ok && a.State.Terminal() {
		exit = strconv.Itoa(code)
	}
	dur := "-"
	if !a.Created.IsZero() {
		dur = Duration(a.Duration(now))
	}
	state := a.State.String()
	if a.State == spec.UnknownState && a.Msg != "" {
		state += " (" + Escape(cut(FirstLine(a.Msg), maxWhy)) + ")" // why: corrupt state
	}
	if a.LastKnown {
		state += " (last known)" // the scheduler could not be asked
	}
	return []string{
		Escape(a.Handle),
		Escape(a.Name),
		st.State(a.State, state),
		fmt.Sprintf("%d/%d", running, total),
		Age(a.Created, now),
		dur,
		exit,
	}
}

// The columns of AppRow and AppHeaders, by position.
const (
	AppColHandle = iota
	AppColName
	AppColState
	AppColRunning
	AppColAge
	AppColDuration
	AppColExit
)

// AppHeaders are the columns of AppRow.
var AppHeaders = []string{"HANDLE", "NAME", "STATE", "RUNNING", "AGE", "DURATION", "EXIT"}

// AppList writes the app list as a table, `wick list`'s: AppRow's columns and the
// app's error (AppError) last; each line cut to width columns ("…" at the cut) when
// width is positive (a terminal's), whole otherwise.
func AppList(w io.Writer, apps []spec.AppStatus, now time.Time, st Styler, width int) error {
	rows := make([][]string, len(apps))
	for i := range apps {
		rows[i] = append(AppRow(&apps[i], now, st), AppError(&apps[i], st))
	}
	out := Table(append(slices.Clone(AppHeaders), "ERROR"), rows, st)
	if width > 0 {
		lines := strings.SplitAfter(out, "\n")
		for i, l := range lines {
			if body := strings.TrimSuffix(l, "\n"); ansi.StringWidth(body) > width {
				lines[i] = ansi.Truncate(body, width, "…") + "\n"
			}
		}
		out = strings.Join(lines, "")
	}
	_, err := io.WriteString(w, out)
	return err
}

// AppError is the one line of a failed app's error (its root cause), or of a running
// app's hang alarm (spec.Hang), "" for an app with neither.
func AppError(a *spec.AppStatus, st Styler) string {
	if a.Hang != nil && a.State == spec.Running {
		return st.Error(Escape(a.Hang.Message(time.Now())))
	}
	if a.State != spec.Failed {
		return ""
	}
	msg := FirstLine(spec.ErrorMessage(a.StructuredError))
	if msg == "" {
		msg = FirstLine(a.Msg)
	}
	return st.Error(Escape(msg))
}

// ReplicaHeaders are the columns of ReplicaRow.
var ReplicaHeaders = []string{"REPLICA", "STATE", "EXIT", "RESTARTS", "PID/CONTAINER", "STARTED", "DURATION", "ERROR"}

// ReplicaRow is the cells of one replica, shared by `wick status` and the UI.
func ReplicaRow(r *spec.ReplicaStatus, now time.Time, st Styler) []string {
	id := "-"
	switch {
	case r.PID != 0:
		id = strconv.Itoa(r.PID)
	case r.ContainerID != "":
		id = r.ContainerID[:min(12, len(r.ContainerID))]
	}
	started, dur := "-", "-"
	if !r.Started.IsZero() {
		started = r.Started.Local().Format("15:04:05")
		end := r.Ended
		if end.IsZero() {
			end = now
		}
		dur = Duration(end.Sub(r.Started))
	}
	errText := Escape(FirstLine(spec.ErrorMessage(r.StructuredError)))
	if errText != "" {
		errText = st.Error(errText)
	}
	return []string{
		fmt.Sprintf("%s/%d", Escape(r.Role), r.ID),
		st.State(r.State, r.State.String()),
		exitText(r.ExitCode),
		strconv.Itoa(r.Restarts),
		id,
		started,
		dur,
		errText,
	}
}

// FirstLine returns the first line of s, trimmed.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// Status writes an app's status: a header block, then one row per replica.
func Status(w io.Writer, a *spec.AppStatus, now time.Time, st Styler) error {
	return status(w, a, now, st, 0)
}

// status is Status with the replica table fitted into width columns (0: no limit):
// see fitReplicas.
func status(w io.Writer, a *spec.AppStatus, now time.Time, st Styler, width int) error {
	kv := func(k, v string) { fmt.Fprintf(w, "%s %s\n", st.Key(fmt.Sprintf("%-9s", k+":")), v) }
	kv("handle", st.Value(Escape(a.Handle)))
	kv("name", st.Value(Escape(a.Name)))
	state := st.State(a.State, a.State.String())
	if a.LastKnown {
		state += st.Dim(" (last known)")
	}
	kv("state", state)
	if a.Sweep != nil {
		kv("sweep", st.Value(Escape(a.Sweep.ID))+" "+Escape(a.Sweep.Label()))
	}
	kv("restarts", strconv.Itoa(a.NumRestarts))
	if !a.Created.IsZero() {
		kv("created", a.Created.Local().Format(time.DateTime)+st.Dim(" ("+Age(a.Created, now)+" ago)"))
		kv("duration", Duration(a.Duration(now)))
	}
	if a.Msg != "" && a.Msg != a.StructuredError && a.Msg != spec.ErrorMessage(a.StructuredError) {
		kv("msg", Escape(a.Msg))
	}
	if a.StructuredError != "" {
		kv("error", st.Error(Escape(FirstLine(spec.ErrorMessage(a.StructuredError)))))
		if at := ranks.Where(a.StructuredError); at != "" {
			kv("at", Escape(at))
		}
	}
	if a.Hang != nil {
		kv("alarm", st.Error(Escape(a.Hang.Message(now))))
	}
	for _, warn := range a.Warnings {
		kv("warning", st.Error(Escape(warn)))
	}
	if a.UIURL != "" {
		kv("logs", st.Value(Escape(a.UIURL)))
	}
	var rows [][]string
	usage, gpu := false, false
	for _, role := range a.Roles {
		for i := range role.Replicas {
			rows = append(rows, ReplicaRow(&role.Replicas[i], now, st))
			u := role.Replicas[i].Usage
			usage = usage || u != nil
			gpu = gpu || u != nil && u.GPU != nil
		}
	}
	if len(rows) == 0 {
		return nil
	}
	headers := ReplicaHeaders
	if usage {
		// CPU and RSS go before ERROR, the widest column; they are shown only when a
		// replica has usage (a running app, read by a scheduler that can tell).
		headers = withUsage(headers, "CPU", "RSS")
		if gpu {
			// What each replica does on its GPUs, where there are (nvidia-smi): its
			// devices, their utilization and memory, and its own processes' memory.
			headers = withUsage(headers, "GPU", "GPU%", "GPU MEM", "OWN")
		}
		k := 0
		for _, role := range a.Roles {
			for i := range role.Replicas {
				cpu, rss := UsageCells(role.Replicas[i].Usage)
				rows[k] = withUsage(rows[k], cpu, rss)
				if gpu {
					rows[k] = withUsage(rows[k], GPUCells(role.Replicas[i].Usage)...)
				}
				k++
			}
		}
	}
	if width > 0 {
		headers, rows = fitReplicas(headers, rows, width)
	}
	fmt.Fprintln(w)
	_, err := io.WriteString(w, Table(headers, rows, st))
	return err
}

// fitReplicas leaves out of the replica table, when it is wider than width (describe
// at 80 columns cut RSS to "12.…"), what is said elsewhere or says nothing, in order:
// ERROR (each replica's error is under its name below the table), RESTARTS when no
// replica restarted, then STARTED (DURATION stays); then GPU MEM, and EXIT while no
// replica has exited.
func fitReplicas(headers []string, rows [][]string, width int) ([]string, [][]string) {
	wide := func() bool {
		n := 2 * (len(headers) - 1)
		for i, h := range headers {
			c := ansi.StringWidth(h)
			for _, r := range rows {
				c = max(c, ansi.StringWidth(r[i]))
			}
			n += c
		}
		return n > width
	}
	drop := func(name string, only func(cell string) bool) {
		i := slices.Index(headers, name)
		if i < 0 || !wide() {
			return
		}
		for _, r := range rows {
			if only != nil && !only(r[i]) {
				return
			}
		}
		headers = slices.Delete(slices.Clone(headers), i, i+1)
		for k, r := range rows {
			rows[k] = slices.Delete(slices.Clone(r), i, i+1)
		}
	}
	drop("ERROR", nil)
	drop("RESTARTS", func(cell string) bool { return cell == "0" })
	drop("STARTED", nil)
	// With GPU columns: the devices' memory (the wall's titles show it), then EXIT
	// while no replica has exited.
	drop("GPU MEM", nil)
	drop("EXIT", func(cell string) bool { return cell == "-" })
	return headers, rows
}

// withUsage inserts usage cells (CPU and RSS, the GPU ones) before the last (ERROR)
// cell of a replica row.
func withUsage(row []string, cells ...string) []string {
	n := len(row)
	out := make([]string, 0, n+len(cells))
	out = append(out, row[:n-1]...)
	out = append(out, cells...)
	return append(out, row[n-1])
}

// GPUCells formats a replica's GPU use for a table: its devices ("0,1"), their mean
// utilization ("87%"), their memory used of their total ("29.8/80.0GiB"), and the
// memory its own processes hold; "-" each without one.
func GPUCells(u *spec.Usage) []string {
	if u == nil || u.GPU == nil {
		return []string{"-", "-", "-", "-"}
	}
	g := u.GPU
	util := "-"
	if g.Util >= 0 {
		util = fmt.Sprintf("%d%%", g.Util)
	}
	mem := "-"
	if g.Total > 0 {
		mem = BytesOf(g.Used, g.Total)
	}
	return []string{Devices(g.Devices), util, mem, Bytes(g.Own)}
}

// Devices lists GPU indexes with runs of three or more as ranges: "0-7", "0,1",
// "0-3,6".
func Devices(devs []string) string {
	var parts []string
	for i := 0; i < len(devs); {
		j := i
		for j+1 < len(devs) && next(devs[j], devs[j+1]) {
			j++
		}
		switch {
		case j-i >= 2:
			parts = append(parts, devs[i]+"-"+devs[j])
		default:
			parts = append(parts, devs[i:j+1]...)
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// next says whether index b follows index a.
func next(a, b string) bool {
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(b)
	return err1 == nil && err2 == nil && y == x+1
}

// GPUBadge is a replica's GPU use in a line ("GPU 0,1 87% 29.8/80.0GiB own
// 1.00GiB"), "" without one.
func GPUBadge(u *spec.Usage) string {
	if u == nil || u.GPU == nil {
		return ""
	}
	c := GPUCells(u)
	return "GPU " + c[0] + " " + c[1] + " " + c[2] + " own " + c[3]
}

// BytesOf formats used of total in total's unit: "29.8/80.0GiB".
func BytesOf(used, total uint64) string {
	t := Bytes(total)
	unit := strings.TrimLeft(t, "0123456789.")
	div := uint64(1)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"} {
		div *= 1024
		if u == unit {
			return fmt.Sprintf("%.1f/%s", float64(used)/float64(div), t)
		}
	}
	return fmt.Sprintf("%d/%s", used, t)
}

// UsageCells formats a replica's (or an app's) usage for a table: CPU as a percentage
// of one core, as top shows it ("153%"), and the resident size in binary units; "-"
// for both when u is nil.
func UsageCells(u *spec.Usage) (cpu, rss string) {
	if u == nil {
		return "-", "-"
	}
	return CPU(u.CPU), Bytes(u.RSS)
}

// CPU formats a CPU rate in cores as a percentage of one core: 0.5 is "50%".
func CPU(cores float64) string {
	if cores < 0 || cores != cores { // negative or NaN: nothing sensible to show
		return "-"
	}
	return fmt.Sprintf("%.0f%%", cores*100)
}

// Bytes formats a size in binary units with three significant figures at most: 512B,
// 1.5KiB, 74.2MiB, 3.00GiB.
func Bytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 5 {
		v /= unit
		i++
	}
	suffix := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}[i]
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f%s", v, suffix)
	case v >= 10:
		return fmt.Sprintf("%.1f%s", v, suffix)
	}
	return fmt.Sprintf("%.2f%s", v, suffix)
}

// Describe writes everything known of an app: its status, then the AppDef and the run
// options it was launched with.
func Describe(w io.Writer, d *sched.Description, now time.Time, st Styler, opts TreeOptions) error {
	if err := status(w, &d.Status, now, st, opts.Width); err != nil {
		return err
	}
	if f := opts.Alarms; f != nil && (f.N > 0 || len(f.Notes) > 0) {
		fmt.Fprintf(w, "\n%s\n", st.Header("ALARMS"))
		for _, l := range f.Lines {
			fmt.Fprintf(w, "  %s %s\n", st.Error("!"), EscapeText(l))
		}
		if more := f.N - len(f.Lines); more > 0 {
			fmt.Fprintf(w, "  %s\n", st.Dim(fmt.Sprintf("and %d more (wick metrics %s)", more, Escape(d.Status.Handle))))
		}
		if f.N == 0 {
			fmt.Fprintf(w, "  %s\n", st.Dim("none found"))
		}
		// What the reading gave up on (a user pattern too slow): the alarms may
		// miss what it would have read.
		for _, n := range f.Notes {
			fmt.Fprintf(w, "  %s %s\n", st.Key("note:"), EscapeText(n))
		}
	}
	for _, role := range d.Status.Roles {
		for _, r := range role.Replicas {
			if r.LogDir != "" || r.Hostname != "" || r.StructuredError != "" || len(r.Attempts) > 0 {
				fmt.Fprintf(w, "\n%s\n", st.Header(fmt.Sprintf("%s/%d", Escape(r.Role), r.ID)))
				if r.Hostname != "" {
					fmt.Fprintf(w, "  %s %s\n", st.Key("hostname:"), Escape(r.Hostname))
				}
				if r.LogDir != "" {
					fmt.Fprintf(w, "  %s %s\n", st.Key("logs:    "), Escape(r.LogDir))
				}
				if !r.Ended.IsZero() {
					fmt.Fprintf(w, "  %s %s\n", st.Key("ended:   "), r.Ended.Local().Format(time.DateTime))
				}
				if r.StructuredError != "" {
					fmt.Fprintf(w, "  %s %s\n", st.Key("error:   "), st.Error(EscapeText(spec.ErrorMessage(r.StructuredError))))
				}
				attempts(w, &r, st)
			}
		}
	}
	if d.App != nil {
		fmt.Fprintf(w, "\n%s\n", st.Header("=== APPLICATION ==="))
		if err := Tree(w, d.App, st, opts); err != nil {
			return err
		}
	}
	if len(d.Cfg) > 0 {
		fmt.Fprintf(w, "\n%s\n", st.Header("=== RUN OPTIONS ==="))
		return Tree(w, d.Cfg, st, opts)
	}
	return nil
}

// attempts lists a replica's earlier runs, numbered from 1 as the log wall's retry
// dividers number them: exit code, start and end, how long it ran, its error.
func attempts(w io.Writer, r *spec.ReplicaStatus, st Styler) {
	if len(r.Attempts) == 0 {
		return
	}
	fmt.Fprintf(w, "  %s\n", st.Key("attempts:"))
	if n := r.Attempts[0].Attempt; n > 0 {
		fmt.Fprintf(w, "    %s\n", st.Dim(fmt.Sprintf("(%d earlier not kept)", n)))
	}
	width := len(strconv.Itoa(r.Attempts[len(r.Attempts)-1].Attempt + 1))
	for _, a := range r.Attempts {
		times, ran := "-", "-"
		if !a.Started.IsZero() {
			start := a.Started.Local()
			times = start.Format(time.DateTime)
			if !a.Ended.IsZero() {
				end := a.Ended.Local()
				layout := time.TimeOnly
				if end.Format(time.DateOnly) != start.Format(time.DateOnly) {
					layout = time.DateTime
				}
				times += " → " + end.Format(layout)
				ran = Duration(a.Ended.Sub(a.Started))
			}
		}
		line := fmt.Sprintf("    %s  exit %-4s %s  %s", st.Dim(fmt.Sprintf("#%-*d", width, a.Attempt+1)), exitText(a.ExitCode), times, st.Dim("("+ran+")"))
		if msg := Escape(FirstLine(spec.ErrorMessage(a.Error))); msg != "" {
			line += "  " + st.Error(msg)
		}
		fmt.Fprintln(w, line)
	}
}

// RunOpts writes a scheduler's run options: a usage line, then required and optional
// options with type, default and help.
func RunOpts(w io.Writer, scheduler string, opts spec.RunOpts, st Styler) {
	fmt.Fprintf(w, "%s\n", st.Header(scheduler+":"))
	var usage []string
	for _, o := range opts {
		if o.Required {
			usage = append(usage, o.Name+"="+strings.ToUpper(o.Name))
		} else {
			usage = append(usage, "["+o.Name+"="+strings.ToUpper(o.Name)+"]")
		}
	}
	fmt.Fprintf(w, "    usage: -cfg %s\n", strings.Join(usage, ","))
	for _, required := range []bool{true, false} {
		title := "optional arguments:"
		if required {
			title = "required arguments:"
		}
		first := true
		for _, o := range opts {
			if o.Required != required {
				continue
			}
			if first {
				fmt.Fprintf(w, "\n    %s\n", title)
				first = false
			}
			def := ""
			if !o.Required {
				def = ", default: " + spec.FormatValue(o.Default)
				if o.Default == nil {
					def = ""
				}
			}
			fmt.Fprintf(w, "        %s %s\n", st.Key(o.Name), st.Dim("("+o.Type.String()+def+")"))
			fmt.Fprintf(w, "            %s\n", o.Help)
		}
	}
}

// maxWhy bounds the reason shown beside UNKNOWN in the app list: the rest of the row
// must stay readable; status and describe show it whole.
const maxWhy = 48

// cut shortens s to n runes, marking the cut with "…".
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// SchedTag is a short name of scheduler s, for where a handle is shown in a narrow
// column: local_cwd is "cwd", local_dir "dir"; the others are short already.
func SchedTag(s string) string {
	if tag, ok := strings.CutPrefix(s, "local_"); ok && tag != "" {
		return tag
	}
	return s
}
