package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// Output formats of -o/--output, the same on every command that prints.
const (
	outputTable = "table"
	outputJSON  = "json"
	outputYAML  = "yaml"
)

// outputFormats is what -o accepts; "text" is kept as another name of
// table for scripts written before -o was one flag.
var outputFormats = []string{outputTable, outputJSON, outputYAML}

// outputValue is -o: checked as it is parsed, so a bad format is a usage
// error (exit 2) before the command runs.
type outputValue struct {
	format  *string
	allowed []string
}

func (o *outputValue) String() string { return *o.format }
func (o *outputValue) Type() string   { return "format" }

func (o *outputValue) Set(s string) error {
	if s == "text" && slices.Contains(o.allowed, outputTable) {
		s = outputTable
	}
	if !slices.Contains(o.allowed, s) {
		return fmt.Errorf("want %s", strings.Join(o.allowed, ", "))
	}
	*o.format = s
	return nil
}

// addOutputFlag adds -o/--output to cmd, defaulting to table, accepting
// table, json and yaml (or allowed, when given), completed by the shell.
func addOutputFlag(cmd *cobra.Command, format *string, allowed ...string) {
	if len(allowed) == 0 {
		allowed = outputFormats
	}
	*format = allowed[0]
	cmd.Flags().VarP(&outputValue{format: format, allowed: allowed}, "output", "o",
		"output format: "+strings.Join(allowed, ", "))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(allowed, cobra.ShellCompDirectiveNoFileComp))
}

// writeStructured writes v as indented JSON or as YAML.
func writeStructured(out io.Writer, format string, v any) error {
	if format == outputYAML {
		data, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("unable to write YAML: %w", err)
		}
		_, err = out.Write(data)
		return err
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("unable to write JSON: %w", err)
	}
	return nil
}
