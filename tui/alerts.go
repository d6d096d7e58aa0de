package tui

import (
	"context"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/spec"
)

const (
	// alertEvery is how often the UI lists the apps to tell an app that ended or
	// raised an alarm while the user looked elsewhere (the wall of another app).
	alertEvery = 5 * time.Second
	// alertListWait bounds that listing.
	alertListWait = 10 * time.Second
)

// alertsMsg is a listing for the alerts, numbered by when it began.
type alertsMsg struct {
	apps []spec.AppStatus
	// ok says every scheduler answered: an app missing from a partial listing is
	// not gone, nor one back in the next new.
	ok bool
	at time.Time
}

// seenApp is what the alerts knew of an app at the last listing.
type seenApp struct {
	state spec.AppState
	alarm bool
}

// alertState is the alerts' memory: the apps as last listed, and whether a listing is
// under way.
type alertState struct {
	seen    map[string]seenApp
	polling bool
	last    time.Time
	// since is when the listing seen was begun: an app first listed after it and
	// created after it is new, not merely one a scheduler that was down left out.
	since time.Time
}

// pollAlerts starts a listing for the alerts when one is due (none under way, the
// last alertEvery ago) and alerts are on.
func (m *Model) pollAlerts(now time.Time) tea.Cmd {
	if m.alerts.Notify == "off" || len(m.alerts.When) == 0 || m.alert.polling || now.Sub(m.alert.last) < alertEvery {
		return nil
	}
	m.alert.polling, m.alert.last = true, now
	b, parent := m.ctx.Backend, m.ctx.Ctx
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, alertListWait)
		defer cancel()
		apps, errs := b.List(ctx, "")
		return alertsMsg{apps: apps, ok: len(errs) == 0, at: now}
	}
}

// takeAlerts compares a listing with the last one and tells what changed that the
// user asked to hear of: an app that ended (failed), an alarm raised. The first
// listing only sets what is known: what had happened before the UI started is old
// news. An app launched and ended between two listings is told too.
func (m *Model) takeAlerts(msg alertsMsg) tea.Cmd {
	m.alert.polling = false
	if !msg.ok {
		return nil
	}
	first := m.alert.seen == nil
	seen := make(map[string]seenApp, len(msg.apps))
	var news []string
	for i := range msg.apps {
		a := &msg.apps[i]
		if a.Foreign {
			continue
		}
		now := seenApp{state: a.State, alarm: a.Hang != nil || m.home.Alarms(a.Handle) > 0}
		seen[a.Handle] = now
		was, ok := m.alert.seen[a.Handle]
		if first || !ok && !a.Created.After(m.alert.since) {
			continue // known before the UI looked
		}
		if e := m.alertOf(a, was, ok, now); e != "" {
			news = append(news, e)
		}
	}
	m.alert.seen, m.alert.since = seen, msg.at
	if len(news) == 0 {
		return nil
	}
	text := strings.Join(news, "; ")
	m.notice, m.noticeErr, m.noticeAt, m.noticeView = text, strings.Contains(text, "FAILED") || strings.Contains(text, "alarm"), m.ctx.Now(), 0
	return tea.Raw(alertSequence(m.alerts.Notify, text))
}

// alertOf is what to say of app a, seen as was before (ok false: new) and as now, or
// "" when nothing the user asked to hear of happened.
func (m *Model) alertOf(a *spec.AppStatus, was seenApp, ok bool, now seenApp) string {
	when := m.alerts.When
	ended := now.state.Terminal() && (!ok || !was.state.Terminal())
	switch {
	case ended && now.state == spec.Failed && (slices.Contains(when, "failed") || slices.Contains(when, "ended")):
		return a.AppID + " FAILED"
	case ended && slices.Contains(when, "ended"):
		return a.AppID + " " + now.state.String()
	case now.alarm && (!ok || !was.alarm) && slices.Contains(when, "alarm"):
		return a.AppID + ": alarm"
	}
	return ""
}

// alertSequence is how the terminal is told: BEL, or a desktop notification by OSC 9
// (iTerm2, kitty, WezTerm, Windows Terminal) or OSC 777 (urxvt, foot, Ghostty), whose
// text holds no control character (it ends the sequence).
func alertSequence(how, text string) string {
	text = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return -1
		}
		return r
	}, text)
	switch how {
	case "osc9":
		return "\x1b]9;wick: " + text + "\x07"
	case "osc777":
		return "\x1b]777;notify;wick;" + text + "\x07"
	}
	return "\a"
}
