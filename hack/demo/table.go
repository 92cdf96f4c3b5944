package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mandate-dev/mandate/hack/internal/examples"
	"github.com/mandate-dev/mandate/scheduler"
	kinds "github.com/mandate-dev/mandate/workload"
)

// Decisions as the table shows them.
const (
	decisionAdmitted = "ADMITTED" // admitted unchanged
	decisionMutated  = "MUTATED"  // admitted with directives injected
	decisionDenied   = "DENIED"
	decisionError    = "ERROR" // the API server failed otherwise
)

// row is one workload's outcome.
type row struct {
	file, workload, tenant       string
	decision, dimension, message string
	injected                     string
	warnings                     []string
	expected                     examples.Expectation
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
		if slices.Contains(examples.Dimensions, d) && !slices.Contains(dims, d) {
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
	var p scheduler.Placement
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
				p.Gang, p.RequiredLevel, p.PreferredLevel = d.GangMin, d.RequiredLevel, d.PreferredLevel
			}
			continue
		}
		if what, val := classify(key, v); what != "" && !slices.Contains(found[what], val) {
			found[what] = append(found[what], val)
		}
	}
	join := func(what string) string {
		sort.Strings(found[what])
		return strings.Join(found[what], "|")
	}
	p.Scheduler, p.Queue, p.PriorityClass = join("scheduler"), join("queue"), join("priority")
	if v := found["preemptible"]; len(v) == 1 {
		b := v[0] == "true"
		p.Preemptible = &b
	}
	if v := found["gang"]; len(v) == 1 && p.Gang <= 1 {
		p.Gang, _ = strconv.Atoi(v[0])
	}
	if v := found["topology"]; len(v) > 0 && p.RequiredLevel == "" && p.PreferredLevel == "" {
		p.RequiredLevel = join("topology")
	}
	return p.String()
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
	case "volcano.sh/preemptable", kinds.LabelPreemptible:
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

// tableWidth is the terminal the table fits: no line is longer.
const tableWidth = 120

// messageIndent starts the lines under a row: its message, wrapped.
const messageIndent = "    "

// printTable writes one row per workload (WORKLOAD, TENANT, DECISION,
// DIMENSION, INJECTED), and under it the message, the why, in full:
// wrapped at tableWidth, never cut. A cell wider than its column's cap
// (a long name) and INJECTED wrap within their columns; when the first
// four leave INJECTED too little room, it goes under the row too.
func printTable(w io.Writer, rows []row) {
	caps := []int{40, 24, len(decisionAdmitted), 24}
	header := []string{"WORKLOAD", "TENANT", "DECISION", "DIMENSION"}
	cells := [][]string{header}
	for _, r := range rows {
		cells = append(cells, []string{r.workload, orDash(r.tenant, "(none)"), r.decision, orDash(r.dimension, "-")})
	}
	widths := make([]int, len(header))
	for _, row := range cells {
		for i, c := range row {
			widths[i] = min(max(widths[i], utf8.RuneCountInString(c)), max(caps[i], utf8.RuneCountInString(header[i])))
		}
	}
	prefix := 0
	for _, wd := range widths {
		prefix += wd + 2
	}
	injectedWidth, injectedBeside := tableWidth-prefix, true
	if injectedWidth < 30 {
		injectedWidth, injectedBeside = tableWidth-len(messageIndent), false
	}
	// line pads the k-th line of every column's wrapped cell.
	line := func(cols [][]string, k int, last string) string {
		var b strings.Builder
		for i, col := range cols {
			c := ""
			if k < len(col) {
				c = col[k]
			}
			b.WriteString(c + strings.Repeat(" ", widths[i]+2-utf8.RuneCountInString(c)))
		}
		return strings.TrimRight(b.String()+last, " ")
	}
	fmt.Fprintln(w, line([][]string{{header[0]}, {header[1]}, {header[2]}, {header[3]}}, 0, "INJECTED"))
	for i, r := range rows {
		cols := make([][]string, len(header))
		n := 0
		for c, cell := range cells[i+1] {
			cols[c] = wrap(cell, widths[c])
			n = max(n, len(cols[c]))
		}
		injected := wrap(orDash(r.injected, "-"), injectedWidth)
		if injectedBeside {
			n = max(n, len(injected))
		}
		for k := range n {
			last := ""
			if injectedBeside && k < len(injected) {
				last = injected[k]
			}
			fmt.Fprintln(w, line(cols, k, last))
		}
		if !injectedBeside {
			for _, l := range injected {
				fmt.Fprintln(w, messageIndent+l)
			}
		}
		for _, l := range wrap(oneLine(r.message), tableWidth-len(messageIndent)) {
			fmt.Fprintln(w, messageIndent+l)
		}
	}
}

// wrap breaks s into lines of at most width runes, between words; a word
// longer than width is split.
func wrap(s string, width int) []string {
	var lines []string
	var line []rune
	for _, word := range strings.Fields(s) {
		wr := []rune(word)
		for len(wr) > width {
			if len(line) > 0 {
				lines, line = append(lines, string(line)), nil
			}
			lines, wr = append(lines, string(wr[:width])), wr[width:]
		}
		switch {
		case len(line) == 0:
			line = wr
		case len(line)+1+len(wr) <= width:
			line = append(append(line, ' '), wr...)
		default:
			lines, line = append(lines, string(line)), wr
		}
	}
	if len(line) > 0 || len(lines) == 0 {
		lines = append(lines, string(line))
	}
	return lines
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
		if r.expected.Denied {
			ok = r.decision == decisionDenied &&
				(r.expected.Dimension == "" || slices.Contains(strings.Split(r.dimension, ","), r.expected.Dimension))
		}
		if !ok {
			out = append(out, fmt.Sprintf("%s (%s): expected %s, got %s", r.workload, r.file, r.expected, got))
		}
	}
	return out
}
