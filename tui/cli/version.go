package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/wick-dev/wick/engine/spec"
)

// JSONSchema is the version of the --json outputs' shape, documented in docs/json.md:
// within a version keys are only ever added; renaming or removing one, or changing
// what a value means, makes the next version. `wick version --json` prints it.
const JSONSchema = 1

func (a *app) versionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print wick's version",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				return writeJSON(a.env.Stdout, struct {
					Version string `json:"version"`
					Schema  int    `json:"json_schema"`
				}{spec.Version, JSONSchema})
			}
			_, err := fmt.Fprintf(a.env.Stdout, "wick %s\n", spec.Version)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
