package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// WriteText writes the explanation for a person: the verdict first, then
// what blocks it and the change that would unblock it, then every
// dimension, the directives and the scheduler's view.
func WriteText(w io.Writer, e *Explanation) error {
	var b strings.Builder
	verdict := "CAN RUN NOW"
	if !e.CanRunNow {
		verdict = fmt.Sprintf("BLOCKED (%d)", len(e.Blocks))
	}
	fmt.Fprintf(&b, "%s %s (tenant %s): %s\n", e.Workload.Kind, e.Workload.Namespace+"/"+e.Workload.Name, orNone(e.Workload.Tenant), verdict)
	fmt.Fprintf(&b, "policy revision %s, cluster %s\n", e.Revision, e.Source)
	for _, bl := range e.Blocks {
		fmt.Fprintf(&b, "\nblocked by %s %s\n  %s\n", bl.Dimension, bl.Code, bl.Message)
		if bl.Limit != "" || bl.Current != "" {
			fmt.Fprintf(&b, "  limit:   %s\n  current: %s\n", orNone(bl.Limit), orNone(bl.Current))
		}
		fmt.Fprintf(&b, "  to run:  %s\n", bl.Unblock)
	}
	b.WriteString("\ndimensions now:\n")
	for _, d := range e.Dimensions {
		fmt.Fprintf(&b, "  %-10s %-5s limit: %s; current: %s\n", d.Dimension, d.Verdict, d.Limit, d.Current)
	}
	for _, w := range e.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	if d := e.Directives; d != nil {
		fmt.Fprintf(&b, "\ndirectives: scheduler %s, queue %s, priority class %s, preemptible %t, gang minimum %d",
			orNone(d.Scheduler), orNone(d.Queue), orNone(d.PriorityClass), d.Preemptible, d.GangMin)
		if d.RequiredLevel != "" {
			fmt.Fprintf(&b, ", required level %s", d.RequiredLevel)
		}
		if d.PreferredLevel != "" {
			fmt.Fprintf(&b, ", preferred level %s", d.PreferredLevel)
		}
		b.WriteString("\n")
	}
	if ev := e.Eviction; ev != nil {
		fmt.Fprintf(&b, "eviction: %s\n", ev.Message)
	}
	if len(e.Scheduler) > 0 {
		b.WriteString("\nscheduler:\n")
	}
	for _, o := range e.Scheduler {
		fmt.Fprintf(&b, "  %s %s (%s)", o.Kind, o.Name, o.Group)
		switch {
		case o.Missing:
			b.WriteString(": MISSING")
		case o.Phase != "":
			fmt.Fprintf(&b, ": %s", o.Phase)
		}
		if o.Capacity != "" {
			fmt.Fprintf(&b, "; capacity %s", o.Capacity)
		}
		if o.Allocated != "" {
			fmt.Fprintf(&b, "; allocated %s", o.Allocated)
		}
		b.WriteString("\n")
		for _, c := range o.Conditions {
			fmt.Fprintf(&b, "    %s\n", c)
		}
	}
	if e.Subtracted.Pods > 0 {
		fmt.Fprintf(&b, "\ndecided without its own %d running pod(s)\n", e.Subtracted.Pods)
	}
	for _, n := range e.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the explanation as indented JSON.
func WriteJSON(w io.Writer, e *Explanation) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(e)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
