package clusterreport

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// WriteTable writes the report for a terminal: the headline, tenants,
// capacity, and the blocked workloads with their rule.
func WriteTable(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", r.Headline)
	fmt.Fprintf(&b, "policy revision %s, cluster %s\n\n", r.Revision, r.Source)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TENANT\tRESOURCE\tGUARANTEED\tCEILING\tUSED\tRESERVED\tIDLE IN GUARANTEE\tPENDING\tBLOCKED BY")
	for _, t := range r.Tenants {
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d/%d\t%s\n", strings.Repeat("  ", t.Depth), t.Tenant, t.ResourceName(),
			quotaText(t.Guaranteed), quotaText(t.Ceiling), t.Used, t.Reserved, t.IdleInGuarantee,
			t.PendingWorkloads, t.PendingGPUs, countsText(t.BlockedBy))
	}
	_ = tw.Flush()
	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESOURCE\tPRODUCT\tTOTAL\tUSED\tFREE\tSTRANDED\tUNHEALTHY\tUNAVAILABLE")
	for _, c := range r.Capacity {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", c.Resource, orDash(c.Product), c.Total, c.Used, c.Free, c.Stranded, c.Unhealthy, c.Unavailable)
	}
	_ = tw.Flush()
	if len(r.Blocked) > 0 {
		b.WriteString("\n")
		tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "BLOCKED WORKLOAD\tTENANT\tGPUS\tDIMENSION\tRULE\tTO RUN")
		for _, x := range r.Blocked {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", x.Workload, orDash(x.Tenant), x.GPUs, x.Dimension, x.Rule, x.Unblock)
		}
		_ = tw.Flush()
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func quotaText(n int) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// countsText writes "k n, …" sorted by key.
func countsText(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
