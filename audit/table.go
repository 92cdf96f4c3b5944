package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/mandate-dev/mandate/scheduler"
)

// WriteJSON writes the report for machines.
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("unable to render JSON: %w", err)
	}
	return nil
}

// WriteTable writes the report for people: one aligned row per workload,
// the summary line, then every reason in full for the workloads that
// would be denied, changed or warned, and the notes.
func WriteTable(w io.Writer, rep *Report) error {
	fmt.Fprintf(w, "Audit of %s against revision %s\n\n", rep.Source, orNone(rep.Revision))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tTENANT\tVERDICT\tWHY")
	for _, r := range rep.Workloads {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Workload, orNone(r.Workload.Tenant), r.Verdict.label(), headline(r))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s := rep.Summary
	fmt.Fprintf(w, "\n%d workloads: %d would be denied, %d changed, %d unchanged", s.Workloads, s.Denied, s.Changed, s.Unchanged)
	if s.Warned > 0 {
		fmt.Fprintf(w, " (%d admitted with warnings)", s.Warned)
	}
	fmt.Fprintln(w)
	for _, r := range rep.Workloads {
		if r.Verdict == VerdictUnchanged && len(r.Warnings)+len(r.Warned)+len(r.DryRun) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n== %s — %s, tenant %s, %s\n", r.Workload, r.Verdict.label(), orNone(r.Workload.Tenant), subtractedText(r.Subtracted))
		if r.Error != "" {
			fmt.Fprintf(w, "   DENY    %s\n", r.Error)
		}
		for _, v := range r.Violations {
			fmt.Fprintf(w, "   DENY    [%s] %s: %s\n", v.Dimension, v.Code, v.Message)
		}
		for _, v := range r.Warned {
			fmt.Fprintf(w, "   WARN    [%s] %s: %s\n", v.Dimension, v.Code, v.Message)
		}
		for _, v := range r.DryRun {
			fmt.Fprintf(w, "   DRYRUN  [%s] %s: %s\n", v.Dimension, v.Code, v.Message)
		}
		if len(r.Warned) == 0 {
			for _, m := range r.Warnings {
				fmt.Fprintf(w, "   WARN    %s\n", m)
			}
		}
		for _, d := range r.Differences {
			fmt.Fprintf(w, "   CHANGE  %s\n", d)
		}
		for _, c := range r.Changes {
			for _, l := range patchLines(c) {
				fmt.Fprintf(w, "   PATCH   %s\n", l)
			}
		}
		for _, n := range r.Notes {
			fmt.Fprintf(w, "   NOTE    %s\n", n)
		}
	}
	if len(rep.Notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range rep.Notes {
			fmt.Fprintf(w, "note: %s\n", n)
		}
	}
	return nil
}

// label is the verdict for people: "WOULD DENY".
func (v Verdict) label() string { return strings.ToUpper(strings.ReplaceAll(string(v), "-", " ")) }

// directivesPath is where the directives annotation sits in a patch.
var directivesPath = "/metadata/annotations/" + strings.ReplaceAll(scheduler.AnnotationDirectives, "/", "~1")

// patchLines spells one change for people: an added object becomes one
// line per leaf, and the directives annotation is left out (Differences
// say it field by field).
func patchLines(c Change) []string {
	var lines []string
	var walk func(path string, from, to any)
	walk = func(path string, from, to any) {
		if path == directivesPath {
			return
		}
		if m, ok := to.(map[string]any); ok && from == nil && c.Op == "add" {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(path+"/"+strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"), nil, m[k])
			}
			return
		}
		lines = append(lines, fmt.Sprintf("%s %s: %s -> %s", c.Op, path, compact(from), compact(to)))
	}
	walk(c.Path, c.From, c.To)
	return lines
}

// headline is the first reason, with how many more there are.
func headline(r Result) string {
	var first string
	var n int
	switch {
	case r.Error != "":
		first, n = r.Error, 1
	case len(r.Violations) > 0:
		v := r.Violations[0]
		first, n = fmt.Sprintf("[%s] %s: %s", v.Dimension, v.Code, v.Message), len(r.Violations)
	case len(r.Differences) > 0:
		first, n = r.Differences[0], len(r.Differences)
	case len(r.Warnings) > 0:
		first, n = "warning: "+r.Warnings[0], len(r.Warnings)
	default:
		return "-"
	}
	if n > 1 {
		first += fmt.Sprintf(" (+%d more)", n-1)
	}
	return first
}

func subtractedText(s Subtracted) string {
	if s.Pods == 0 {
		return "no running pods"
	}
	parts := make([]string, 0, len(s.GPUs))
	for _, res := range sortedKeys(s.GPUs) {
		parts = append(parts, fmt.Sprintf("%d %s", s.GPUs[res], res))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%d pod(s) without GPUs", s.Pods)
	}
	return fmt.Sprintf("decided without its own %d pod(s) holding %s", s.Pods, strings.Join(parts, ", "))
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// compact renders a value on one line: strings as they are, anything else
// as JSON; "(none)" for nothing.
func compact(v any) string {
	switch x := v.(type) {
	case nil:
		return "(none)"
	case string:
		return x
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
