package schedsync

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// WriteTable prints the plan's drift (every change but Unchanged) as a
// table; nothing at all when there is none.
func WriteTable(w io.Writer, p Plan) error {
	drift := p.Drift()
	if len(drift) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACTION\tKIND\tNAMESPACE\tNAME\tDIFFERENCE")
	for _, c := range drift {
		detail := strings.Join(c.Fields, "; ")
		if c.Detail != "" {
			detail = strings.TrimPrefix(detail+"; "+c.Detail, "; ")
		}
		if c.Action == Create {
			detail = strings.TrimSuffix("missing; "+c.Detail, "; ")
		}
		ns := c.Namespace
		if ns == "" {
			ns = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Action, qualifiedKind(c), ns, c.Name, detail)
	}
	return tw.Flush()
}

// WriteJSON prints the plan's drift as JSON: {"changes": [...]}.
func WriteJSON(w io.Writer, p Plan) error {
	drift := p.Drift()
	if drift == nil {
		drift = []Change{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(Plan{Changes: drift})
}

// WriteDiff prints the plan's drift the way kubectl diff reads: one header
// per object ("+" created, "~" changed, "-" deleted, "!" closed or left
// alone) and one line per differing field; nothing when there is no drift.
func WriteDiff(w io.Writer, p Plan) error {
	for _, c := range p.Drift() {
		mark := map[Action]string{Create: "+", Update: "~", Recreate: "~", Delete: "-", Close: "!", Foreign: "!"}[c.Action]
		name := c.Name
		if c.Namespace != "" {
			name = c.Namespace + "/" + c.Name
		}
		if _, err := fmt.Fprintf(w, "%s %s %s (%s)\n", mark, qualifiedKind(c), name, c.Action); err != nil {
			return err
		}
		if c.Action == Create {
			desc, err := json.Marshal(c.desired.Object)
			if err == nil {
				fmt.Fprintf(w, "    %s\n", desc)
			}
		}
		if c.Action == Foreign && c.desired.Vet != nil {
			// What the model wants, to be set where the object is
			// installed from: each data key's text as it is.
			data, _, _ := unstructured.NestedStringMap(c.desired.Object, "data")
			for _, k := range sortedKeys(data) {
				fmt.Fprintf(w, "    # the model wants data.%s:\n", k)
				for _, line := range strings.Split(strings.TrimRight(data[k], "\n"), "\n") {
					fmt.Fprintf(w, "    #   %s\n", line)
				}
			}
		}
		for _, f := range c.Fields {
			fmt.Fprintf(w, "    %s\n", f)
		}
		if c.Detail != "" {
			fmt.Fprintf(w, "    # %s\n", c.Detail)
		}
	}
	return nil
}

func qualifiedKind(c Change) string {
	group := c.APIVersion
	if i := strings.Index(group, "/"); i >= 0 {
		group = group[:i]
	} else {
		group = ""
	}
	if group == "" {
		return c.Kind
	}
	return c.Kind + "." + group
}
