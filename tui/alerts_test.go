package tui

import "testing"

// TestAlertSequence: BEL, OSC 9 and OSC 777 as the terminals that take them document
// them (iTerm2's and foot's/urxvt's notify), with the text's control characters (an
// app id cannot hold them, an error message could) left out: BEL would end the OSC.
func TestAlertSequence(t *testing.T) {
	for how, want := range map[string]string{
		"bell":   "\a",
		"osc9":   "\x1b]9;wick: train-1 FAILED: boom\x07",
		"osc777": "\x1b]777;notify;wick;train-1 FAILED: boom\x07",
	} {
		if got := alertSequence(how, "train-1 FAILED:\x07 boom\x1b"); got != want {
			t.Errorf("%s: %q, want %q", how, got, want)
		}
	}
}
