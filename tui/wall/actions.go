package wall

import (
	bkey "charm.land/bubbles/v2/key"
	"github.com/wick-dev/wick/tui/appops"
	"github.com/wick-dev/wick/tui/common"
)

// Kind is the log wall's kind of view.
const Kind common.Kind = "logs"

// The log wall's own actions.
const (
	ActFollow      = "follow"
	ActFollowAll   = "follow-all"
	ActReplica     = "next-replica"
	ActPrevReplica = "prev-replica"
	ActZoom        = "zoom"
	ActMerged      = "merged"
	ActHide        = "hide"
	ActShowAll     = "show-all"
	ActNextPage    = "next-page"
	ActPrevPage    = "prev-page"
	ActWrap        = "wrap"
	ActTimestamps  = "timestamps"
	ActPaneStamps  = "pane-timestamps"
	ActStreams     = "streams"
	ActSearch      = "search"
	ActNextMatch   = "next-match"
	ActPrevMatch   = "prev-match"
	ActRegex       = "regex"
	ActCase        = "case"
	ActOnlyMatches = "only-matches"
	ActContext     = "context"
	ActSave        = "save"
	ActMark        = "select-lines"
	ActCopy        = "copy"
	ActSummary     = "summary"
)

// Actions are the log wall's rows of the action table.
func Actions() []common.Action {
	act := func(name common.ActionName, help string, keys []string, short bool) common.Action {
		return common.NewAction(name, help, keys, short, Kind)
	}
	return append([]common.Action{
		// ctrl+r refreshes as in the other views; R relaunches with edits there too.
		act(common.ActRefresh, "refresh", []string{"ctrl+r"}, false),
		act(ActFollow, "follow/pause", []string{"f"}, true),
		act(ActFollowAll, "follow every pane", []string{"F"}, false),
		act(ActReplica, "next pane", []string{"tab", "right", "l"}, true),
		act(ActPrevReplica, "previous pane", []string{"shift+tab", "left", "h"}, false),
		act(ActZoom, "zoom pane", []string{"z"}, true),
		act(ActMerged, "merged view", []string{"m"}, true),
		// x cancels the app, as in the app list and describe view.
		act(appops.ActCancel, "cancel the app", []string{"x"}, false),
		act(appops.ActRelaunch, "relaunch the app (asks)", []string{"r"}, false),
		act(appops.ActEdit, "relaunch with edits", []string{"e", "R"}, false),
		act(ActHide, "hide pane", []string{"H"}, false),
		act(ActShowAll, "show hidden panes", []string{"X"}, false),
		act(ActNextPage, "next page of panes", []string{"]"}, false),
		act(ActPrevPage, "previous page of panes", []string{"["}, false),
		act(ActWrap, "wrap on/off", []string{"w"}, false),
		act(ActTimestamps, "timestamps on/off, every pane", []string{"t"}, false),
		act(ActPaneStamps, "timestamps on/off, this pane only", []string{"T"}, false),
		act(ActStreams, "streams: both/stdout/stderr", []string{"s"}, false),
		act(ActSearch, "search", []string{"/"}, true),
		act(ActNextMatch, "next match", []string{"n"}, false),
		act(ActPrevMatch, "previous match", []string{"N"}, false),
		act(ActRegex, "search: regex on/off", []string{"alt+r"}, false),
		act(ActCase, "search: case on/off", []string{"alt+c"}, false),
		act(ActOnlyMatches, "only matching lines", []string{"o"}, false),
		act(ActContext, "lines of context", []string{"c"}, false),
		act(ActSave, "save lines to a file", []string{"S", "ctrl+s"}, false),
		act(ActMark, "select lines", []string{"v", "V"}, false),
		act(ActCopy, "copy selection: sent to the terminal's clipboard by OSC 52 (in tmux: set -g set-clipboard on)", []string{"y"}, false),
		act(ActSummary, "summary on/off", []string{"i"}, false),
	}, append(metricActions(), common.Moves(Kind)...)...)
}

// ContextHelp is what the help bar offers first where the user is: the chart's keys
// while it is shown.
func (m *Model) ContextHelp() []bkey.Binding { return m.chartHelp() }

// Target is the focused pane's replica (and rank), for a user command.
func (m *Model) Target() (common.Target, bool) {
	t := common.Target{Handle: m.h, Rank: -1}
	if m.focus >= 0 && m.focus < len(m.panes) {
		p := m.panes[m.focus]
		t.Replica = p.st
		if t.Replica.Role == "" {
			t.Replica.Role, t.Replica.ID = p.role, p.k
		}
		if !p.node {
			t.Rank = p.rank
		}
	}
	return t, true
}
