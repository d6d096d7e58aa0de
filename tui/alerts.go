package tui

import (
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wick-dev/wick/engine/spec"
)

// alertEvery is how often the alerts want a listing of the apps, to tell an app that
// ended or raised an alarm while the user looked elsewhere (the wall of another app).
// They take the app list's listings (one each tick while the list is on top), and
// when none came for alertEvery they ask the list for one: one listing serves both
// (on Slurm one squeue).
const alertEvery = 5 * time.Second

// seenApp is what the alerts knew of an app at the last listing.
type seenApp struct {
	state spec.AppState
	alarm bool
}

// alertState is the alerts' memory: the apps as last listed, and when.
type alertState struct {
	seen map[string]seenApp
	// seq is the number of the app list's listing last taken (apps.Model.Listing).
	seq int
	// asked is when (by the ticks' clock) a listing was last asked for or taken;
	// tick the time of the last tick.
	asked, tick time.Time
}

// pollAlerts asks the app list for a listing when none came for alertEvery and
// alerts are on.
func (m *Model) pollAlerts(now time.Time) tea.Cmd {
	m.alert.tick = now
	if !m.alertsOn() || now.Sub(m.alert.asked) < alertEvery {
		return nil
	}
	m.alert.asked = now
	return m.home.Refresh()
}

func (m *Model) alertsOn() bool {
	return m.alerts.Notify != "off" && len(m.alerts.When) > 0
}

// checkAlerts takes the app list's listing if it is one the alerts have not seen.
func (m *Model) checkAlerts() tea.Cmd {
	if !m.alertsOn() {
		return nil
	}
	apps, seq := m.home.Listing()
	if seq == m.alert.seq {
		return nil
	}
	m.alert.seq = seq
	m.alert.asked = m.alert.tick
	return m.takeAlerts(apps)
}

// takeAlerts compares a listing with the last one and tells what changed that the
// user asked to hear of: an app that ended (failed), an alarm raised. The first
// listing only sets what is known: what had happened before the UI started is old
// news. An app launched and ended between two listings is told too. A scheduler that
// does not answer silences none of the others (a user without Docker heard of no app's
// end, ever: the local_docker line was on every listing): an app it left out and
// lists again is not new (NewSince).
func (m *Model) takeAlerts(apps []spec.AppStatus) tea.Cmd {
	first := m.alert.seen == nil
	seen := make(map[string]seenApp, len(apps))
	var news []string
	for i := range apps {
		a := &apps[i]
		if a.Foreign {
			continue
		}
		now := seenApp{state: a.State, alarm: a.Hang != nil || m.home.Alarms(a.Handle) > 0}
		seen[a.Handle] = now
		was, ok := m.alert.seen[a.Handle]
		// An app first listed is new if created after the listing of its scheduler
		// before began, not merely one a scheduler that was down left out. (Each
		// scheduler is listed on its own: another's listing taken since says nothing.)
		if first || !ok && !a.Created.After(m.home.NewSince(a.Handle)) {
			continue // known before the UI looked
		}
		if e := m.alertOf(a, was, ok, now); e != "" {
			news = append(news, e)
		}
	}
	m.alert.seen = seen
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
