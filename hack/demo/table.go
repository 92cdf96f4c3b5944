package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mandate-dev/mandate/scheduler"
)

// Decisions as the table shows them.
const (
	decisionAdmitted = "ADMITTED" // admitted unchanged
	decisionMutated  = "MUTATED"  // admitted with directives injected
	decisionDenied   = "DENIED"
	decisionError    = "ERROR" // the API server failed otherwise
)

// dimensions of the authority model, in the order the README lists them.
var dimensions = []string{"tenancy", "priority", "quota", "topology", "preemption"}

// row is one workload's outcome.
type row struct {
	file, workload, tenant       string
	decision, dimension, message string
	injected                     string
	warnings                     []string
	expected                     expectation
}

// expectation is what an example's file name promises:
// NN-<what>-<dimension>-denied.yaml is denied by that dimension; any other
// name is admitted (possibly mutated, possibly with a warning).
type expectation struct {
	denied    bool
	dimension string
}

func expectationOf(file string) expectation {
	base := strings.TrimSuffix(file, ".yaml")
	parts := strings.Split(base, "-")
	if len(parts) < 2 || parts[len(parts)-1] != "denied" {
		return expectation{}
	}
	e := expectation{denied: true}
	if dim := parts[len(parts)-2]; slices.Contains(dimensions, dim) {
		e.dimension = dim
	}
	return e
}

func (e expectation) String() string {
	if !e.denied {
		return "admitted"
	}
	if e.dimension == "" {
		return "denied"
	}
	return "denied by " + e.dimension
}

// denialMessage strips the API server's `admission webhook "x" denied the
// request: ` from a webhook's denial; ok is false for any other error.
func denialMessage(msg string) (string, bool) {
	const marker = " denied the request"
	if !strings.HasPrefix(msg, "admission webhook ") {
		return "", false
	}
	i := strings.Index(msg, marker)
	if i < 0 {
		return "", false
	}
	rest := strings.TrimPrefix(msg[i+len(marker):], ":")
	return strings.TrimSpace(rest), true
}

var (
	codeRE   = regexp.MustCompile(`\b(TENANT|TENANCY|PRIORITY|QUOTA|TOPOLOGY|PREEMPTION)_[A-Z_]+\b`)
	reasonRE = regexp.MustCompile(`\(([a-z, ]+)\)\s*$`)
)

// denialDimensions names the dimensions of a denial: from the status
// causes Mandate sets (type = dimension, field = violation code), else from
// the reason "denied by the authority model (quota, topology)", else from
// violation codes in the message.
func denialDimensions(st metav1.Status) string {
	var dims []string
	add := func(d string) {
		if slices.Contains(dimensions, d) && !slices.Contains(dims, d) {
			dims = append(dims, d)
		}
	}
	if st.Details != nil {
		for _, c := range st.Details.Causes {
			add(string(c.Type))
		}
	}
	if len(dims) == 0 {
		if m := reasonRE.FindStringSubmatch(string(st.Reason)); m != nil {
			for _, d := range strings.Split(m[1], ",") {
				add(strings.TrimSpace(d))
			}
		}
	}
	if len(dims) == 0 {
		for _, code := range codeRE.FindAllStringSubmatch(st.Message, -1) {
			d := strings.ToLower(code[1])
			if d == "tenant" {
				d = "tenancy"
			}
			add(d)
		}
	}
	if len(dims) == 0 {
		return "?"
	}
	return strings.Join(dims, ",")
}

// warningDimension guesses a warning's dimension: warnings reach the client
// as bare text, without the violation code the decision had.
func warningDimension(text string) string {
	if m := codeRE.FindStringSubmatch(text); m != nil {
		if d := strings.ToLower(m[1]); d != "tenant" {
			return d
		}
		return "tenancy"
	}
	t := strings.ToLower(text)
	for _, k := range []struct{ dimension, words string }{
		{"tenancy", "tenant label|no tenant"},
		{"quota", "guarantee|ceiling|quota"},
		{"topology", "does not fit|block|topology|placement"},
		{"priority", "priority class|tier"},
		{"preemption", "preempt"},
		{"", "without mandate's scheduling directives"},
	} {
		for _, w := range strings.Split(k.words, "|") {
			if strings.Contains(t, w) {
				return k.dimension
			}
		}
	}
	return ""
}

// injected summarises what admission added to or changed in the workload:
// scheduler, queue, priority class, preemptibility, gang and topology, from
// wherever they sit (pod, pod templates, labels, annotations).
func injected(submitted, stored map[string]any) string {
	before := map[string]string{}
	flatten("", submitted, before)
	after := map[string]string{}
	flatten("", stored, after)
	found := map[string][]string{}
	directives := map[string]any{}
	for path, v := range after {
		if before[path] == v {
			continue
		}
		key := path[strings.LastIndex(path, "\x00")+1:]
		if key == scheduler.AnnotationDirectives {
			// The gang size and topology level Volcano's PodGroup gets
			// from the gang controller are recorded only here.
			var d struct {
				GangMin        int    `json:"gangMin"`
				RequiredLevel  string `json:"requiredLevel"`
				PreferredLevel string `json:"preferredLevel"`
			}
			if json.Unmarshal([]byte(v), &d) == nil {
				if d.GangMin > 1 {
					directives["gang"] = d.GangMin
				}
				directives["topology"] = d.RequiredLevel
				if d.PreferredLevel != "" && d.PreferredLevel != d.RequiredLevel {
					directives["topology"] = d.RequiredLevel + ">" + d.PreferredLevel
				}
			}
			continue
		}
		if what, val := classify(key, v); what != "" && !slices.Contains(found[what], val) {
			found[what] = append(found[what], val)
		}
	}
	var out []string
	for _, what := range []string{"scheduler", "queue", "priority", "preemptible", "gang", "topology"} {
		vals := found[what]
		if d, ok := directives[what]; len(vals) == 0 && ok && d != 0 && d != "" {
			vals = []string{fmt.Sprint(d)}
		}
		if len(vals) == 0 {
			continue
		}
		sort.Strings(vals)
		if what == "scheduler" {
			out = append(out, strings.Join(vals, "|"))
			continue
		}
		out = append(out, what+"="+strings.Join(vals, "|"))
	}
	return strings.Join(out, " ")
}

// classify maps a changed leaf to what the INJECTED column shows.
func classify(key, v string) (what, val string) {
	switch key {
	case "schedulerName":
		return "scheduler", v
	case "priorityClassName":
		return "priority", v
	case "kai.scheduler/queue", "scheduling.volcano.sh/queue-name":
		return "queue", v
	case "kai.scheduler/preemptibility":
		return "preemptible", fmt.Sprint(v == "preemptible")
	case "volcano.sh/preemptable", "mandate.dev/preemptible":
		return "preemptible", v
	case "kai.scheduler/batch-min-member", "minAvailable", "minMember":
		return "gang", v
	case "kai.scheduler/topology-required-placement":
		return "topology", v
	}
	return "", ""
}

// flatten records every scalar leaf under a NUL-separated path; status and
// server-set metadata are left out.
func flatten(path string, v any, out map[string]string) {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			if path == "" && k == "status" {
				continue
			}
			if path == "\x00metadata" && k == "managedFields" {
				continue
			}
			flatten(path+"\x00"+k, c, out)
		}
	case []any:
		for i, c := range t {
			flatten(fmt.Sprintf("%s\x00%d", path, i), c, out)
		}
	case nil:
	default:
		out[path] = fmt.Sprint(t)
	}
}

// printTable writes one line per workload.
func printTable(w io.Writer, rows []row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tTENANT\tDECISION\tDIMENSION\tINJECTED\tMESSAGE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.workload, orDash(r.tenant, "(none)"), r.decision,
			orDash(r.dimension, "-"), orDash(r.injected, "-"), oneLine(r.message))
	}
	tw.Flush()
}

func orDash(s, dash string) string {
	if s == "" {
		return dash
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// summary is the closing line.
func summary(rows []row) string {
	var admitted, mutated, denied, failed int
	for _, r := range rows {
		switch r.decision {
		case decisionAdmitted:
			admitted++
		case decisionMutated:
			admitted++
			mutated++
		case decisionDenied:
			denied++
		default:
			failed++
		}
	}
	s := fmt.Sprintf("%d workloads: %d admitted (%d mutated), %d denied", len(rows), admitted, mutated, denied)
	if failed > 0 {
		s += fmt.Sprintf(", %d failed", failed)
	}
	if len(mismatches(rows)) == 0 {
		return s + "; every outcome is the one its example expects."
	}
	return s + "; SOME OUTCOMES DIFFER FROM WHAT THE EXAMPLES EXPECT (see below)."
}

// mismatches lists the rows whose outcome is not the one expected.
func mismatches(rows []row) []string {
	var out []string
	for _, r := range rows {
		got := "admitted"
		switch r.decision {
		case decisionDenied:
			got = "denied by " + r.dimension
		case decisionError:
			got = "an error: " + oneLine(r.message)
		}
		ok := r.decision == decisionAdmitted || r.decision == decisionMutated
		if r.expected.denied {
			ok = r.decision == decisionDenied &&
				(r.expected.dimension == "" || slices.Contains(strings.Split(r.dimension, ","), r.expected.dimension))
		}
		if !ok {
			out = append(out, fmt.Sprintf("%s (%s): expected %s, got %s", r.workload, r.file, r.expected, got))
		}
	}
	return out
}
