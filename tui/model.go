// Package tui is wick's full-screen UI: one root model holding a stack of views (the app
// list at the bottom; the picker, form, preview, launch, describe and logs above it)
// and the context they share. Keys are resolved through one action table that also
// feeds the help bar, the `?` overlay and the `:` command palette. Slow work runs in
// commands whose results are addressed to the view that asked.
package tui

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/metrics"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/themes"
	"github.com/wick-dev/wick/tui/appops"
	"github.com/wick-dev/wick/tui/apps"
	"github.com/wick-dev/wick/tui/common"
	"github.com/wick-dev/wick/tui/form"
	"github.com/wick-dev/wick/tui/picker"
	"github.com/wick-dev/wick/tui/wall"
	"github.com/wick-dev/wick/tui/widget"
)

// The smallest screen the layout works in; below it the UI shows a message instead.
const (
	minWidth  = 60
	minHeight = 12
)

// chromeLines are the lines around the body: the title bar, the status line and the
// help bar.
const chromeLines = 3

// noticeTTL is how long a status-line message stays.
const noticeTTL = 8 * time.Second

// Model is the root model: the view stack, the overlay (help, palette or a
// confirmation), the status line and the shared context.
type Model struct {
	// userCmds are the user's commands of config.toml, by name; alerts says when and
	// how an app that changed behind the user's back is told.
	userCmds map[common.ActionName]UserCommand
	alerts   Alerts
	alert    alertState
	ctx      *common.Context
	cancel   context.CancelFunc
	home     *apps.Model
	stack    []common.View
	over     overlay

	width, height int
	notice        string
	noticeErr     bool
	noticeAt      time.Time
	// noticeView is the view that was active when the notice came: it is shown over
	// that view only (0: over every view, an internal error).
	noticeView common.ViewID
	autoTheme  bool
	tick       time.Duration
	quitNote   string
	closed     bool
	fault      error // the last internal error recovered from
	// The help bar, cached: it changes with the view, not with every frame.
	helpFor  helpKey
	helpText string
	// wall configures the log wall.
	wall wall.Options
	// settingsPath is the settings file (config.toml), where a theme picked in the UI
	// is saved; themesDir holds the user themes.
	settingsPath, themesDir string
}

// overlay is a modal drawn over the screen that takes every key while open.
type overlay interface {
	// key handles a key; done closes the overlay, and cmd runs after.
	key(m *Model, k tea.KeyPressMsg) (cmd tea.Cmd, done bool)
	view(m *Model) string
}

// NewModel builds the root model from opts: it reads the settings file and the theme
// (a bad one is an error) and prepares the app list, and the logs of opts.Logs.
func NewModel(opts Options) (*Model, error) {
	if opts.Runner == nil {
		return nil, errors.New("tui: Options.Runner is required")
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	path := opts.SettingsPath
	if path == "" {
		path = DefaultSettingsPath(getenv)
	}
	settings, err := LoadSettings(path)
	if err != nil {
		return nil, err
	}
	theme, auto, err := pickTheme(opts.Theme, settings, ThemesDir(path), getenv)
	if err != nil {
		return nil, err
	}
	actions := newActions()
	actions.Add(userActions(settings.Commands)...)
	for name, keys := range settings.Keys {
		if err := actions.Rebind(common.ActionName(name), keys); err != nil {
			return nil, fmt.Errorf("%s: [keys]: %w", path, err)
		}
	}
	// Checked in the table as rebound: two of the user's actions may clash.
	if err := checkBindings(actions.Rows(), settings.Keys); err != nil {
		return nil, fmt.Errorf("%s: [keys]: %w", path, err)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	conf := opts.Config
	if conf == nil {
		conf = common.NoConfig{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &common.Context{
		Ctx: ctx, Backend: opts.Runner, Config: alertsConfig{conf, settings.Alerts}, Components: opts.Components, Find: opts.Find,
		DefaultScheduler: opts.DefaultScheduler, Workspace: opts.Workspace,
		Theme: theme, Actions: actions, Now: now,
	}
	if opts.Procs > 0 {
		c.Cores = common.NewCores(opts.Procs)
	}
	m := &Model{ctx: c, cancel: cancel, autoTheme: auto, tick: opts.TickInterval,
		settingsPath: path, themesDir: ThemesDir(path), userCmds: userCommands(settings.Commands), alerts: settings.Alerts,
		wall: wall.Options{RingLines: opts.RingLines, HeldLines: opts.HeldLines, StateDir: uiStateDir(opts.Runner.StateDir())}}
	// The wall's metrics: the settings' [metrics], under .torchxconfig's [wick:metrics].
	sections := maps.Clone(settings.Metrics)
	if wc, ok := conf.(wickSections); ok {
		if sections == nil {
			sections = map[string]string{}
		}
		maps.Copy(sections, wc.Wick("metrics"))
	}
	mc, err := metrics.ParseConfig(sections)
	if err != nil {
		cancel()
		return nil, fmt.Errorf(".torchxconfig: %w", err)
	}
	m.wall.Metrics = &mc
	c.Alarms = metrics.NewBook(opts.Runner, mc, m.wall.StateDir)
	if m.tick == 0 {
		m.tick = common.TickInterval
	}
	m.home = apps.New(c)
	m.home.Restore(m.wall.StateDir)
	m.stack = []common.View{m.home}
	if opts.Sweep != "" {
		m.home.ShowSweep(opts.Sweep)
	}
	if opts.Logs != "" {
		h, err := spec.ParseHandle(opts.Logs)
		if err != nil {
			cancel()
			return nil, err
		}
		m.stack = append(m.stack, m.logsView(h))
	}
	return m, nil
}

// ForgetApp removes what the UI keeps of app h under the state directory stateDir (its
// wall layout), for `wick delete`.
func ForgetApp(stateDir string, h spec.Handle) error {
	metrics.NewBook(nil, metrics.Config{}, uiStateDir(stateDir)).Forget(h)
	return wall.Forget(uiStateDir(stateDir), h)
}

// uiStateDir is where the UI keeps its state (the wall's layout per app): beside the
// schedulers', under the state directory the Runner was given; "" keeps none.
func uiStateDir(stateDir string) string {
	if stateDir == "" {
		return ""
	}
	return filepath.Join(stateDir, "ui")
}

// Init starts the first work of the views (the app list, and the logs of --logs), the
// clock, and asks the terminal for its background when the theme follows it.
func (m *Model) Init() tea.Cmd {
	var cmds []tea.Cmd
	for _, v := range m.stack {
		cmds = append(cmds, v.Init())
	}
	cmds = append(cmds, m.nextTick())
	if m.autoTheme {
		cmds = append(cmds, tea.RequestBackgroundColor)
	}
	return tea.Batch(cmds...)
}

func (m *Model) nextTick() tea.Cmd {
	if m.tick < 0 {
		return nil
	}
	return tea.Tick(m.tick, func(t time.Time) tea.Msg { return common.TickMsg{Time: t} })
}

func (m *Model) active() common.View { return m.stack[len(m.stack)-1] }

// Update routes a message: keys through the overlay or the action table, results to
// the view that asked, navigation requests to the stack.
func (m *Model) Update(msg tea.Msg) (_ tea.Model, cmd tea.Cmd) {
	defer m.recover()
	cmd = m.update(msg)
	if alert := m.checkAlerts(); alert != nil {
		cmd = tea.Batch(cmd, alert)
	}
	return m, cmd
}

// recover turns a panic of a view into an error in the status line: the UI goes on,
// and no stack trace is shown to the user.
func (m *Model) recover() {
	if r := recover(); r != nil {
		m.fault = fmt.Errorf("internal error: %v (please report it)", r)
		m.notice, m.noticeErr, m.noticeAt, m.noticeView = m.fault.Error(), true, m.ctx.Now(), 0
	}
}

// Fault is the last internal error the UI recovered from, or nil.
func (m *Model) Fault() error { return m.fault }

func (m *Model) update(msg tea.Msg) tea.Cmd {
	m.forgetDeleted(msg)
	before := m.active().ID()
	if cmd, ok := m.navigate(msg); ok {
		if id := m.active().ID(); id != before && m.noticeView != 0 && m.noticeView != id {
			// A notice is about the view it came in: once left, coming back to it
			// within the notice's time showed it again, stale ("reading …", "secrets
			// shown", "cancelled 1 app" of minutes of other work ago).
			m.notice = ""
		}
		return cmd
	}
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.resize(msg.Width, msg.Height)
		return nil
	case tea.BackgroundColorMsg:
		if m.autoTheme {
			m.autoTheme = false
			m.ctx.Theme = themes.ForBackground(msg.IsDark())
		}
		return nil
	case common.TickMsg:
		if !m.noticeAt.IsZero() && m.ctx.Now().Sub(m.noticeAt) > noticeTTL {
			m.notice = ""
		}
		return tea.Batch(m.active().Update(msg), m.nextTick(), m.pollAlerts(msg.Time))
	case tea.KeyPressMsg:
		return m.key(msg)
	case tea.MouseMsg:
		return m.mouse(msg)
	case common.ConfirmMsg:
		m.over = &confirm{prompt: msg.Prompt, yes: msg.Yes}
		return nil
	case common.NoticeMsg:
		m.notice, m.noticeErr, m.noticeAt, m.noticeView = msg.Text, msg.Err, m.ctx.Now(), m.active().ID()
		return nil
	case common.StreamMsg:
		var cmd tea.Cmd
		if v := m.find(msg.To); v != nil {
			cmd = v.Update(msg.Msg)
		}
		return tea.Batch(cmd, msg.Next)
	case common.Addressed:
		if v := m.find(msg.Target()); v != nil {
			return v.Update(msg)
		}
		return nil
	}
	return m.active().Update(msg)
}

// forgetDeleted forgets what the UI keeps of apps a message says were deleted: the
// wall's layout of each, its alarms. The message goes on to the view that asked.
func (m *Model) forgetDeleted(msg tea.Msg) {
	var handles []string
	switch d := msg.(type) {
	case appops.Done:
		if d.Verb == appops.VerbDeleted && d.Err == nil {
			handles = []string{d.Handle}
		}
	case appops.BulkDone:
		if d.Verb == appops.VerbDeleted {
			handles = d.Handles
		}
	}
	for _, s := range handles {
		if h, err := spec.ParseHandle(s); err == nil {
			_ = wall.Forget(m.wall.StateDir, h)
			m.ctx.Alarms.Forget(h)
		}
	}
}

// navigate answers the messages that open and close views; ok is false for the
// others.
func (m *Model) navigate(msg tea.Msg) (cmd tea.Cmd, ok bool) {
	switch msg := msg.(type) {
	case common.PushMsg:
		m.stack = append(m.stack, msg.View)
		return msg.View.Init(), true
	case common.PopMsg:
		return m.pop(), true
	case common.HomeMsg:
		return m.goHome(msg), true
	case common.OpenLogsMsg:
		h, err := spec.ParseHandle(msg.Handle)
		if err != nil {
			return common.NotifyErr(err), true
		}
		v := m.logsView(h)
		m.stack = append(m.stack, v)
		return v.Init(), true
	case appops.EditMsg:
		return m.openEdit(msg), true
	}
	return nil, false
}

// goHome closes every view above the app list, then shows the notice and selects the
// app the message names, if any.
func (m *Model) goHome(msg common.HomeMsg) tea.Cmd {
	for len(m.stack) > 1 {
		m.noteAlarms(m.stack[len(m.stack)-1])
		m.stack[len(m.stack)-1].Close()
		m.stack = m.stack[:len(m.stack)-1]
	}
	if msg.Notice != "" {
		m.notice, m.noticeErr, m.noticeAt, m.noticeView = msg.Notice, false, m.ctx.Now(), m.home.ID()
	}
	if msg.Launched != nil {
		return m.home.Launched(*msg.Launched)
	}
	if msg.Handle != "" {
		return m.home.Select(msg.Handle)
	}
	return m.home.Activate()
}

// openEdit opens the form of the component an app was launched from, filled with its
// arguments and run options: a relaunch with edits.
func (m *Model) openEdit(msg appops.EditMsg) tea.Cmd {
	switch {
	case msg.Err != nil:
		return common.NotifyErr(msg.Err)
	case msg.Call == nil:
		return common.Notify(msg.Unknown())
	}
	f := form.New(m.ctx, msg.Component)
	if err := f.Fill(msg.Call.Args, msg.Handle.Scheduler, msg.Cfg); err != nil {
		return common.NotifyErr(fmt.Errorf("%s: cannot fill the form: %w", msg.Handle, err))
	}
	m.stack = append(m.stack, f)
	return f.Init()
}

// logsView is the view of an app's logs, for the logs action and --logs: the log wall.
func (m *Model) logsView(h spec.Handle) common.View { return wall.New(m.ctx, h, m.wall) }

// find returns the view with id, if it is still open.
func (m *Model) find(id common.ViewID) common.View {
	for _, v := range m.stack {
		if v.ID() == id {
			return v
		}
	}
	return nil
}

func (m *Model) resize(w, h int) {
	m.width, m.height = w, h
	m.ctx.Width, m.ctx.Height = w, max(1, h-chromeLines)
}

// pop closes the active view, never the app list.
func (m *Model) pop() tea.Cmd {
	if len(m.stack) == 1 {
		return nil
	}
	top := m.active()
	m.stack = m.stack[:len(m.stack)-1]
	m.noteAlarms(top)
	top.Close()
	if a, ok := m.active().(common.Activator); ok {
		return a.Activate()
	}
	return nil
}

// key resolves a key: the overlay takes all; a focused text field takes text; then the
// action table; then the view.
func (m *Model) key(k tea.KeyPressMsg) tea.Cmd {
	if !m.noticeAt.IsZero() && m.ctx.Now().Sub(m.noticeAt) > noticeTTL {
		// An old message must not read as the answer to this key ("nothing done"
		// from a confirm minutes ago), even if no tick came in between.
		m.notice = ""
	}
	if k.Keystroke() == "ctrl+c" {
		// Whatever the bindings and whatever is open: a way out that always works.
		m.over = nil
		return m.quit()
	}
	if m.over != nil {
		cmd, done := m.over.key(m, k)
		if done {
			m.over = nil
		}
		return cmd
	}
	v := m.active()
	if v.Typing() && widget.IsEditKey(k) {
		return v.Update(k)
	}
	if a, ok := m.ctx.Actions.Match(k, v.Kind()); ok {
		return m.run(a.Name)
	}
	return v.Update(k)
}

// run runs the action named name in the active view, by key or from the palette.
func (m *Model) run(name common.ActionName) tea.Cmd {
	v := m.active()
	switch name {
	case common.ActQuit:
		return m.quit()
	case common.ActHelp:
		m.over = &helpOverlay{}
		return nil
	case common.ActPalette:
		m.over = newPalette()
		return nil
	case common.ActNew:
		if v.Kind() == picker.Kind {
			return nil
		}
		p := picker.New(m.ctx)
		m.stack = append(m.stack, p)
		return p.Init()
	case common.ActHome:
		return func() tea.Msg { return common.HomeMsg{} }
	case actTheme:
		return m.nextTheme()
	}
	if c, ok := m.userCmds[name]; ok {
		return m.runUserCommand(c)
	}
	cmd, ok := v.Do(name)
	if !ok && name == common.ActBack {
		return m.pop()
	}
	return cmd
}

// quit ends the UI; running apps keep running, and the note says so.
func (m *Model) quit() tea.Cmd {
	if n := m.home.Active(); n > 0 {
		what, keep, them := "1 app is", "keeps", "it"
		if n > 1 {
			what, keep, them = fmt.Sprintf("%d apps are", n), "keep", "them"
		}
		m.quitNote = fmt.Sprintf("wick: %s still running and %s running; `wick list` shows %s, `wick ui` comes back to %s", what, keep, them, them)
	}
	return tea.Quit
}

// QuitNote is what the UI says when it has quit: that running apps keep running.
func (m *Model) QuitNote() string { return m.quitNote }

// mouse sends wheel and click events to the active view, in body coordinates.
func (m *Model) mouse(msg tea.MouseMsg) tea.Cmd {
	if m.over != nil {
		return nil
	}
	mo := msg.Mouse()
	if _, click := msg.(tea.MouseClickMsg); click && mo.Y == 0 {
		return m.clickCrumb(mo.X)
	}
	mo.Y--
	if mo.Y < 0 || mo.Y >= m.ctx.Height {
		return nil
	}
	switch msg.(type) {
	case tea.MouseWheelMsg:
		return m.active().Update(tea.MouseWheelMsg(mo))
	case tea.MouseClickMsg:
		return m.active().Update(tea.MouseClickMsg(mo))
	}
	return nil
}

// clickCrumb goes back to the view whose crumb in the title bar is at column x.
func (m *Model) clickCrumb(x int) tea.Cmd {
	depth := crumbAt(m.crumbs(), x)
	if depth < 0 {
		return nil
	}
	var cmd tea.Cmd
	for len(m.stack) > depth+1 {
		cmd = m.pop()
	}
	return cmd
}

// Close closes every view and cancels the work still running. Apps keep running.
func (m *Model) Close() {
	if m.closed {
		return
	}
	m.closed = true
	for i := len(m.stack) - 1; i >= 0; i-- {
		m.stack[i].Close()
	}
	m.cancel()
	m.ctx.Alarms.Save()
}

// wickSections is implemented by configs that hold wick's own [wick:NAME] sections
// (engine/config.Config): the wall reads [wick:metrics] from it.
type wickSections interface {
	Wick(name string) map[string]string
}

// noteAlarms marks in the app list the metric alarms a closing log wall found.
func (m *Model) noteAlarms(v common.View) {
	if w, ok := v.(interface{ MetricAlarms() (spec.Handle, int) }); ok {
		h, n := w.MetricAlarms()
		m.home.SetAlarms(h.String(), n)
	}
}
