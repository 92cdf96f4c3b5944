package evalview

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/workload"
)

// Outcome is "denied", "mutated" (admitted with a patch) or "admitted".
func Outcome(it Item) string {
	switch {
	case !it.Review.Decision.Allowed:
		return "DENIED"
	case len(it.Review.Patch) > 0:
		return "MUTATED"
	default:
		return "ADMITTED"
	}
}

// WriteSummary writes one row per item: workload, tenant, decision, the
// dimension that decided, the message, and what was injected.
func WriteSummary(w io.Writer, items []Item) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tTENANT\tDECISION\tDIMENSION\tINJECTED\tWHY")
	for _, it := range items {
		dim, why := headline(it)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name(it), orNone(it.Review.Workload.Tenant), Outcome(it), dim, injected(it), why)
	}
	return tw.Flush()
}

// WriteDetails writes, per item, every violation and warning in full, the
// per-dimension explanation and the patch.
func WriteDetails(w io.Writer, items []Item) error {
	for _, it := range items {
		d := it.Review.Decision
		fmt.Fprintf(w, "\n== %s (%s) — %s, tenant %s, revision %s\n", name(it), it.Source, Outcome(it), orNone(it.Review.Workload.Tenant), d.Revision)
		for _, v := range d.Violations {
			fmt.Fprintf(w, "   DENY  [%s] %s: %s\n", v.Dimension, v.Code, v.Message)
		}
		for _, m := range d.Warnings {
			fmt.Fprintf(w, "   WARN  %s\n", m)
		}
		for _, v := range d.DryRun {
			fmt.Fprintf(w, "   DRYRUN [%s] %s: would deny: %s\n", v.Dimension, v.Code, v.Message)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "   DIMENSION\tVERDICT\tLIMIT\tCURRENT")
		for _, e := range d.Explanations {
			fmt.Fprintf(tw, "   %s\t%s\t%s\t%s\n", e.Dimension, e.Verdict, e.Limit, e.Current)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if d.Allowed {
			fmt.Fprintf(w, "   directives: %s\n", directives(d.Directives))
		}
		for _, op := range it.Review.Patch {
			fmt.Fprintf(w, "   patch: %s %s %s\n", op.Operation, op.Path, compact(op.Value))
		}
	}
	return nil
}

func name(it Item) string {
	wl := it.Review.Workload
	return workload.Describe(wl.APIVersion, wl.Kind, wl.Namespace, wl.Name)
}

// headline is the first violation, else the first warn-stage violation,
// else the first warning, else the first dryrun-stage violation, else "-".
func headline(it Item) (string, string) {
	d := it.Review.Decision
	if len(d.Violations) > 0 {
		v := d.Violations[0]
		return string(v.Dimension), v.Message + more(len(d.Violations))
	}
	if len(d.Warned) > 0 {
		v := d.Warned[0]
		return string(v.Dimension), v.Code + ": " + v.Message + more(len(d.Warned))
	}
	for _, e := range d.Explanations {
		if e.Verdict == "warn" && len(d.Warnings) > 0 {
			return string(e.Dimension), d.Warnings[0]
		}
	}
	if len(d.DryRun) > 0 {
		v := d.DryRun[0]
		return string(v.Dimension), wouldDeny(v) + more(len(d.DryRun))
	}
	return "-", "within every limit"
}

// more says how many of n violations a headline leaves out.
func more(n int) string {
	if n > 1 {
		return fmt.Sprintf(" (+%d more)", n-1)
	}
	return ""
}

// wouldDeny describes a dryrun-stage violation: admitted, but it is what
// denying it would say.
func wouldDeny(v evaluator.Violation) string {
	return "would deny (dryrun): " + v.Message
}

// injected is the directives in the one wording of scheduler.Placement:
// "volcano queue=research priority=train preemptible=true gang=8
// topology=block>clique".
func injected(it Item) string {
	if !it.Review.Decision.Allowed {
		return "-"
	}
	return scheduler.PlacementOf(it.Review.Decision.Directives).String()
}

func directives(d evaluator.Directives) string { return scheduler.PlacementOf(d).String() }

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func compact(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s=%v", k, x[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	default:
		return fmt.Sprintf("%v", x)
	}
}
