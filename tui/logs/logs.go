// Package logs is a simple log view: one replica of an app at a time, followed live.
// It is the placeholder the log wall (many replicas side by side) replaces; the root
// model opens it for OpenLogsMsg, so the wall slots in at that one place.
package logs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/sched"
	"github.com/wick-dev/wick/engine/spec"
	"github.com/wick-dev/wick/tui/common"
)

// Performance knobs, after kl: lines are read off the UI loop and handed over in
// batches, so that a chatty replica costs one Update per batch, not per line.
const (
	// maxBatch caps the lines handed to the UI at once.
	maxBatch = 4096
	// batchWindow is how long the reader gathers lines after the first of a batch:
	// about one frame at 60 fps.
	batchWindow = 16 * time.Millisecond
	// keepLines bounds the lines held in memory (the log wall has the real ring buffer
	// and reads older lines back from the files).
	keepLines = 20000
	// tailLines is how much history the view starts with.
	tailLines = 2000
)

// replica names one replica of the app.
type replica struct {
	role string
	k    int
}

// Model is the log view.
type Model struct {
	common.Base
	h        spec.Handle
	replicas []replica
	cur      int
	lines    []string
	follow   bool
	ended    bool
	err      error
	pager    common.Pager
	dirty    bool
	cancel   context.CancelFunc
	gen      int // which stream the batches belong to
}

type describedMsg struct {
	common.ViewID
	desc *sched.Description
	err  error
}

type batchMsg struct {
	gen   int
	lines []sched.Line
	err   error // io.EOF at the end of the lines
}

// New returns the log view of the app h.
func New(ctx *common.Context, h spec.Handle) *Model {
	return &Model{Base: common.NewBase(ctx, common.KindLogs), h: h, follow: true}
}

// Title is the view's crumb.
func (m *Model) Title() string {
	if m.cur < len(m.replicas) {
		r := m.replicas[m.cur]
		return fmt.Sprintf("logs %s %s/%d", m.h.AppID, r.role, r.k)
	}
	return "logs " + m.h.AppID
}

// Init finds the app's replicas.
func (m *Model) Init() tea.Cmd {
	id, b, parent, h := m.ID(), m.Ctx.Backend, m.Ctx.Ctx, m.h
	return func() tea.Msg {
		d, err := b.Describe(parent, h)
		return describedMsg{ViewID: id, desc: d, err: err}
	}
}

// Close stops the stream.
func (m *Model) Close() {
	if m.cancel != nil {
		m.cancel()
	}
}

// open starts streaming the current replica's lines. The iterator is opened off the
// UI loop too: for docker it is a call to the Engine.
func (m *Model) open() tea.Cmd {
	m.Close()
	m.gen++
	m.lines, m.ended, m.err, m.dirty = m.lines[:0], false, nil, true
	if m.cur >= len(m.replicas) {
		return nil
	}
	r := m.replicas[m.cur]
	ctx, cancel := context.WithCancel(m.Ctx.Ctx)
	m.cancel = cancel
	ch := make(chan tea.Msg, 2)
	b, h, gen := m.Ctx.Backend, m.h, m.gen
	go func() {
		defer close(ch)
		it, err := b.LogLines(ctx, h, r.role, r.k, sched.LogOptions{Follow: true, Tail: tailLines})
		if err != nil {
			select {
			case ch <- batchMsg{gen: gen, err: err}:
			case <-ctx.Done():
			}
			return
		}
		read(ctx, it, gen, ch)
	}()
	return common.Stream(m.ID(), ch)
}

// read gathers lines in batches until the iterator ends or ctx is done. One goroutine
// reads the iterator (and closes it); this one batches.
func read(ctx context.Context, it sched.LogIterator, gen int, ch chan<- tea.Msg) {
	lines := make(chan sched.Line)
	errc := make(chan error, 1)
	go func() {
		defer close(lines)
		defer it.Close()
		for {
			l, err := it.Next(ctx)
			if err != nil {
				errc <- err
				return
			}
			select {
			case lines <- l:
			case <-ctx.Done():
				errc <- ctx.Err()
				return
			}
		}
	}()
	send := func(b batchMsg) bool {
		select {
		case ch <- b:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		l, ok := <-lines
		if !ok {
			send(batchMsg{gen: gen, err: <-errc})
			return
		}
		batch := []sched.Line{l}
		timer := time.NewTimer(batchWindow)
	gather:
		for len(batch) < maxBatch {
			select {
			case l, ok := <-lines:
				if !ok {
					break gather
				}
				batch = append(batch, l)
			case <-timer.C:
				break gather
			}
		}
		timer.Stop()
		if !send(batchMsg{gen: gen, lines: batch}) {
			// Let the reader finish: it sees ctx done and stops.
			for range lines {
			}
			return
		}
	}
}

// Update takes the replicas, batches of lines and the mouse wheel.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case describedMsg:
		if msg.err != nil {
			m.err = msg.err
			return nil
		}
		for _, role := range msg.desc.Status.Roles {
			for _, r := range role.Replicas {
				m.replicas = append(m.replicas, replica{role: role.Role, k: r.ID})
			}
		}
		if len(m.replicas) == 0 && msg.desc.App != nil {
			for _, role := range msg.desc.App.Roles {
				for k := range role.NumReplicas {
					m.replicas = append(m.replicas, replica{role: role.Name, k: k})
				}
			}
		}
		return m.open()
	case batchMsg:
		if msg.gen != m.gen {
			return nil
		}
		t := m.Ctx.Theme
		for _, l := range msg.lines {
			text := strings.ReplaceAll(l.Text, "\r", "")
			if l.Stream == sched.Stderr {
				text = t.Stderr(text)
			}
			m.lines = append(m.lines, text)
		}
		if over := len(m.lines) - keepLines; over > 0 {
			m.lines = append(m.lines[:0], m.lines[over:]...)
		}
		m.dirty = true
		if msg.err != nil {
			m.ended = true
			if !errors.Is(msg.err, io.EOF) && !errors.Is(msg.err, context.Canceled) {
				m.err = msg.err
			}
		}
	case tea.MouseWheelMsg:
		m.follow = false
		if msg.Button == tea.MouseWheelUp {
			m.pager.Scroll(-common.WheelStep, m.Ctx.Height-1)
		} else {
			m.pager.Scroll(common.WheelStep, m.Ctx.Height-1)
		}
	}
	return nil
}

// Do scrolls (which stops following), toggles follow and moves to the next replica.
func (m *Model) Do(action string) (tea.Cmd, bool) {
	switch action {
	case common.ActFollow:
		m.follow = !m.follow
		return nil, true
	case common.ActReplica:
		if len(m.replicas) > 1 {
			m.cur = (m.cur + 1) % len(m.replicas)
			return m.open(), true
		}
		return nil, true
	case common.ActRefresh:
		return m.open(), true
	}
	if m.pager.Do(action, m.Ctx.Height-1) {
		m.follow = action == common.ActBottom
		return nil, true
	}
	return nil, false
}

// View draws a status line and the visible lines.
func (m *Model) View() string {
	t := m.Ctx.Theme
	if m.dirty {
		m.pager.SetLines(m.lines)
		m.dirty = false
	}
	h := m.Ctx.Height - 1
	if m.follow {
		m.pager.Scroll(m.pager.Len(), h)
	}
	state := "following"
	switch {
	case m.ended:
		state = "end of logs"
	case !m.follow:
		state = "paused (f follows)"
	}
	head := t.Accent.Render(m.Title()) + "  " + t.Muted.Render(fmt.Sprintf("%d lines · %s", len(m.lines), state))
	if len(m.replicas) > 1 {
		head += t.Muted.Render(fmt.Sprintf(" · replica %d/%d (tab: next)", m.cur+1, len(m.replicas)))
	}
	if m.err != nil {
		head += "  " + t.Fail.Render(m.err.Error())
	}
	return head + "\n" + m.pager.View(m.Ctx.Width, h)
}
