package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	tea "charm.land/bubbletea/v2"
)

// Run opens the full-screen UI and returns when the user quits or ctx is done. Apps
// keep running after it returns; it then says so on opts.Messages.
func Run(ctx context.Context, opts Options) error {
	m, err := NewModel(opts)
	if err != nil {
		return err
	}
	defer m.Close()
	popts := []tea.ProgramOption{tea.WithContext(ctx)}
	if opts.Input != nil {
		popts = append(popts, tea.WithInput(opts.Input))
	}
	if opts.Output != nil {
		popts = append(popts, tea.WithOutput(opts.Output))
	}
	if opts.Width > 0 && opts.Height > 0 {
		popts = append(popts, tea.WithWindowSize(opts.Width, opts.Height))
	}
	_, err = tea.NewProgram(m, popts...).Run()
	m.Close()
	if note := m.QuitNote(); note != "" {
		var w io.Writer = os.Stderr
		if opts.Messages != nil {
			w = opts.Messages
		}
		fmt.Fprintln(w, note)
	}
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil
	}
	return err
}
