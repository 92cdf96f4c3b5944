package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/modelcheck"
)

// Exit codes of `mandate model check`: 1 when the model has problems, 2 on
// bad input.
const (
	exitModelProblems = 1
	exitModelBadArg   = 2
)

func newModelCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Check the authority model (data.mandate.model)",
	}
	cmd.AddCommand(newModelCheckCommand())
	return cmd
}

func newModelCheckCommand() *cobra.Command {
	var output, clusterFile string
	cmd := &cobra.Command{
		Use:   "check DIR|BUNDLE|FILE [-o table|json] [--cluster SNAPSHOT]",
		Short: "Check an authority model against its schema and rules",
		Long: `Check the authority model of a policy directory (e.g. policies/), a bundle
(.tar.gz) or a model file itself (data.json, or YAML): its structure against
the JSON Schema shipped in policies/schema/model.schema.json (unknown or
misspelt keys, types, required fields), then the rules a schema cannot say —
tenant parents, cycles and depth, guarantees against ceilings and the
children's sums, priority classes and their inheritance, preemption rules,
schedulers and queues, topology levels and rules, placement pools and
rules, enforcement actions; with --cluster, the pools against the cluster's
nodes (a pool no GPU node is in, a pool guarantee above its GPUs). Every
problem is listed with its JSON path (tenants.research-vision.parent). The
same checks refuse a bad model in bundle build --test and at activation.
See docs/model.md for every field.

Exit status: 0 when the model passes, 1 when it has problems, 2 on bad input.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "table" && output != "json" {
				return &exitError{code: exitModelBadArg, err: fmt.Errorf("--output %q: want table or json", output)}
			}
			data, err := readModelData(cmd, args[0])
			if err != nil {
				return &exitError{code: exitModelBadArg, err: err}
			}
			problems := modelcheck.CheckData(data)
			if clusterFile != "" && len(problems) == 0 {
				m, err := modelcheck.ReadValid(data)
				if err != nil {
					return &exitError{code: exitModelBadArg, err: err}
				}
				state, err := cluster.New(m)
				if err != nil {
					return &exitError{code: exitModelBadArg, err: err}
				}
				if err := state.LoadFile(clusterFile); err != nil {
					return &exitError{code: exitModelBadArg, err: err}
				}
				problems = modelcheck.CheckPools(m, state.Snapshot())
			}
			if err := writeProblems(cmd.OutOrStdout(), output, args[0], problems); err != nil {
				return err
			}
			if len(problems) > 0 {
				return &exitError{code: exitModelProblems}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	cmd.Flags().StringVar(&clusterFile, "cluster", "", "cluster snapshot (kubectl get nodes,pods,namespaces -A -o yaml) to check the pools against")
	return cmd
}

// readModelData reads the policy data at path: a directory or bundle as
// activation reads it, or a model file as data.mandate.model.
func readModelData(cmd *cobra.Command, path string) (map[string]any, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("unable to read the model at %q: %w", path, err)
	}
	switch {
	case info.IsDir():
		p, err := bundles.LoadDir(cmd.Context(), path, nil)
		if err != nil {
			return nil, err
		}
		return p.Data, nil
	case strings.HasSuffix(path, ".tar.gz") || strings.HasSuffix(path, ".tgz"):
		p, err := bundles.Load(path, nil)
		if err != nil {
			return nil, err
		}
		return p.Data, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("unable to read the model at %q: %w", path, err)
	}
	if ext := filepath.Ext(path); ext == ".yaml" || ext == ".yml" {
		if raw, err = yaml.YAMLToJSON(raw); err != nil {
			return nil, fmt.Errorf("unable to read the model at %q: %w", path, err)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("unable to read the model at %q: not JSON or YAML: %w", path, err)
	}
	return map[string]any{"mandate": map[string]any{"model": doc}}, nil
}

func writeProblems(out io.Writer, output, source string, problems []modelcheck.Problem) error {
	if output == "json" {
		if problems == nil {
			problems = []modelcheck.Problem{}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Source   string               `json:"source"`
			Problems []modelcheck.Problem `json:"problems"`
		}{source, problems})
	}
	if len(problems) == 0 {
		_, err := fmt.Fprintf(out, "the authority model of %s passes every check\n", source)
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "PATH\tCHECK\tPROBLEM\n")
	for _, p := range problems {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Path, p.Check, p.Message)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	noun := "problems"
	if len(problems) == 1 {
		noun = "problem"
	}
	_, err := fmt.Fprintf(out, "\n%d %s in the authority model of %s\n", len(problems), noun, source)
	return err
}
