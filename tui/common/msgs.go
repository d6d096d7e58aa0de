package common

import (
	"github.com/wick-dev/wick/engine/spec"

	"time"

	tea "charm.land/bubbletea/v2"
)

// PushMsg asks the root to open View on top of the stack.
type PushMsg struct{ View View }

// Push returns a command that opens v.
func Push(v View) tea.Cmd { return func() tea.Msg { return PushMsg{View: v} } }

// PopMsg asks the root to close the active view.
type PopMsg struct{}

// Pop closes the active view.
func Pop() tea.Msg { return PopMsg{} }

// HomeMsg asks the root to close every view above the app list and select Handle in
// it (when not empty), then to say Notice there (when not empty): a notice belongs to
// the view it is shown over. Launched, when set, is the status of the app just
// launched, as the launch itself read it: the list shows its row and selects it at
// once, before its next listing.
type HomeMsg struct {
	Handle, Notice string
	Launched       *spec.AppStatus
}

// SweepKey is what selects a sweep's row in the app list (HomeMsg.Handle): no app
// handle lacks "://" and starts with a sweep id.
func SweepKey(id string) string { return "sweep:" + id }

// OpenLogsMsg asks the root to open the logs of an app.
type OpenLogsMsg struct{ Handle string }

// ConfirmMsg asks the root to ask the user Prompt; Yes runs when they accept.
type ConfirmMsg struct {
	Prompt string
	Yes    tea.Cmd
}

// Confirm returns a command asking prompt before running yes.
func Confirm(prompt string, yes tea.Cmd) tea.Cmd {
	return func() tea.Msg { return ConfirmMsg{Prompt: prompt, Yes: yes} }
}

// NoticeMsg shows a message in the status line.
type NoticeMsg struct {
	Text string
	Err  bool
}

// Notify returns a command showing text in the status line.
func Notify(text string) tea.Cmd { return func() tea.Msg { return NoticeMsg{Text: text} } }

// NotifyErr returns a command showing err in the status line.
func NotifyErr(err error) tea.Cmd {
	return func() tea.Msg { return NoticeMsg{Text: err.Error(), Err: true} }
}

// TickMsg is the UI's clock tick: the root sends it to the active view every
// TickInterval, for live updates.
type TickMsg struct{ Time time.Time }

// TickInterval is how often live views refresh: once a second matches the resolution
// of the ages and durations the app list shows, and costs one List per second.
const TickInterval = time.Second

// StreamMsg carries one message of a stream (launch progress, log batches) to view To.
// The root delivers Msg and then runs Next, which reads the stream's next message, even
// when the view is gone, so the producer always drains and its goroutine ends.
type StreamMsg struct {
	To   ViewID
	Msg  tea.Msg
	Next tea.Cmd
}

// Stream returns a command that reads ch one message at a time, each as a StreamMsg
// to the view to, until ch is closed.
func Stream(to ViewID, ch <-chan tea.Msg) tea.Cmd {
	return func() tea.Msg {
		msg, ok := <-ch
		if !ok {
			return nil
		}
		return StreamMsg{To: to, Msg: msg, Next: Stream(to, ch)}
	}
}
