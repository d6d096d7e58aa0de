package common

import tea "charm.land/bubbletea/v2"

// ViewID identifies one view instance. Async results carry the id of the view that
// asked, and the root delivers them to that view only (or drops them when it is gone).
type ViewID int

// Target makes every message that embeds a ViewID Addressed.
func (id ViewID) Target() ViewID { return id }

// Addressed is a message for one view.
type Addressed interface {
	Target() ViewID
}

// Kind names a kind of view; the action table says in which kinds an action works.
// Each view package declares its own (picker.Kind, wall.Kind, ...).
type Kind string

// View is one screen of the UI. The root model keeps a stack of views; the top one is
// active: it draws the body and receives keys, mouse events and ticks.
type View interface {
	// ID is the view's id, from Context.NewID.
	ID() ViewID
	// Kind says which actions apply.
	Kind() Kind
	// Title is the view's crumb in the title bar.
	Title() string
	// Init starts the view's first slow work.
	Init() tea.Cmd
	// Update handles a message: an addressed result, a tick, a mouse event (with Y
	// relative to the body), or a key no action claimed.
	Update(msg tea.Msg) tea.Cmd
	// Do runs the named action; it reports false when the view has nothing to do for
	// it (then the root applies its default, e.g. Esc pops the view).
	Do(action ActionName) (tea.Cmd, bool)
	// View draws the body: at most Context.Width columns and Context.Height lines.
	View() string
	// Typing reports whether a text field has focus: printable and editing keys go to
	// Update before any action sees them.
	Typing() bool
	// Close releases what the view holds (streams, goroutines); it is called once when
	// the view leaves the stack.
	Close()
}

// Activator is a view that wants to know when it is on top again (after the view
// above it was popped), e.g. to refresh.
type Activator interface {
	Activate() tea.Cmd
}

// Base gives views their id and Kind and no-op Close and Typing; views embed it.
type Base struct {
	Ctx  *Context
	id   ViewID
	kind Kind
}

// NewBase returns a Base with a fresh id.
func NewBase(ctx *Context, kind Kind) Base { return Base{Ctx: ctx, id: ctx.NewID(), kind: kind} }

// ID returns the view's id.
func (b *Base) ID() ViewID { return b.id }

// Kind returns the view's kind.
func (b *Base) Kind() Kind { return b.kind }

// Typing reports false: the view takes no text.
func (b *Base) Typing() bool { return false }

// Close does nothing.
func (b *Base) Close() {}
