package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mandate-dev/mandate/hack/internal/examples"
)

func TestDenialMessage(t *testing.T) {
	got, ok := denialMessage(`admission webhook "mutate.mandate.dev" denied the request: the workload needs 24 nvidia.com/gpu`)
	if !ok || got != "the workload needs 24 nvidia.com/gpu" {
		t.Errorf("denialMessage() = %q, %v", got, ok)
	}
	if _, ok := denialMessage(`Internal error occurred: failed calling webhook "mutate.mandate.dev": connection refused`); ok {
		t.Error("a failed webhook call was taken for a denial")
	}
}

func TestDenialDimensions(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   metav1.Status
		want string
	}{
		{"causes", metav1.Status{Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{
			{Type: "quota", Field: "QUOTA_EXCEEDS_CEILING"}, {Type: "topology"}, {Type: "quota"}}}}, "quota,topology"},
		{"reason", metav1.Status{Reason: "denied by the authority model (priority, tenancy)"}, "priority,tenancy"},
		{"codes", metav1.Status{Message: "TENANT_MISSING: no tenant; TOPOLOGY_NEVER_FITS: too big"}, "tenancy,topology"},
		{"nothing", metav1.Status{Message: "no"}, "?"},
	} {
		if got := denialDimensions(tc.st); got != tc.want {
			t.Errorf("%s: denialDimensions() = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestWarningDimension(t *testing.T) {
	for text, want := range map[string]string{
		"a gang of 8 pods × 8 nvidia.com/gpu does not fit right now: the roomiest block (zone-b/s2/b5) has 5 of the 8 pod slots": "topology",
		"non-preemptible work may only use guaranteed GPUs: tenant product has 112 of 128 guaranteed nvidia.com/gpu":             "quota",
		"QUOTA_TURNED_PREEMPTIBLE: runs preemptible": "quota",
		"something else": "",
	} {
		if got := warningDimension(text); got != want {
			t.Errorf("warningDimension(%q) = %q, want %q", text, got, want)
		}
	}
}

func TestInjected(t *testing.T) {
	submitted := map[string]any{
		"metadata": map[string]any{"name": "j"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"priorityClassName": "build",
		}}},
	}
	stored := map[string]any{
		"metadata": map[string]any{
			"name": "j", "uid": "u", "resourceVersion": "7",
			"annotations": map[string]any{
				"mandate.dev/directives": `{"scheduler":"volcano","gangMin":2,"requiredLevel":"block","preferredLevel":"clique"}`,
			},
		},
		"spec": map[string]any{"template": map[string]any{
			"metadata": map[string]any{
				"labels":      map[string]any{"mandate.dev/preemptible": "true"},
				"annotations": map[string]any{"scheduling.volcano.sh/queue-name": "vision"},
			},
			"spec": map[string]any{
				"priorityClassName": "build",
				"schedulerName":     "volcano",
			},
		}},
		"status": map[string]any{"schedulerName": "ignored"},
	}
	// The priority class was the submitter's, not injected.
	want := "volcano queue=vision preemptible=true gang=2 topology=block>clique"
	if got := injected(submitted, stored); got != want {
		t.Errorf("injected() = %q, want %q", got, want)
	}
	if got := injected(stored, stored); got != "" {
		t.Errorf("injected(unchanged) = %q, want empty", got)
	}
}

func TestTableAndMismatches(t *testing.T) {
	rows := []row{
		{file: "01-a-admitted.yaml", workload: "pod a/x", tenant: "a", decision: decisionMutated, injected: "kai-scheduler", message: "within every limit"},
		{file: "07-b-quota-denied.yaml", workload: "job b/y", decision: decisionDenied, dimension: "topology",
			message: "too\nbig", expected: examples.Expectation{Denied: true, Dimension: "quota"}},
	}
	var b strings.Builder
	printTable(&b, rows)
	out := b.String()
	for _, s := range []string{"WORKLOAD", "pod a/x", "MUTATED", "(none)", "too big"} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}
	m := mismatches(rows)
	if len(m) != 1 || !strings.Contains(m[0], "expected denied by quota, got denied by topology") {
		t.Errorf("mismatches() = %q", m)
	}
	if s := summary(rows); !strings.Contains(s, "2 workloads: 1 admitted (1 mutated), 1 denied") || !strings.Contains(s, "DIFFER") {
		t.Errorf("summary() = %q", s)
	}
}

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 2}
	b.Write([]byte("one\ntwo\nthr"))
	b.Write([]byte("ee\nfour"))
	if got := b.String(); got != "three\nfour" {
		t.Errorf("tail = %q", got)
	}
}

// TestTableFits120Columns: with the longest names, directives and
// messages the examples produce, every line of the table fits 120
// columns, and every message (the why) is there in full, wrapped under its
// row rather than cut.
func TestTableFits120Columns(t *testing.T) {
	long := "a gang of 8 pods × 8 nvidia.com/gpu does not fit right now: the roomiest block (zone-b/s2/b5) has 5 of the 8 pod slots it needs free; it waits in the queue until capacity frees up"
	rows := []row{
		{workload: "PyTorchJob llm/llama-finetune", tenant: "research-llm", decision: decisionMutated, dimension: "topology",
			injected: "volcano queue=research-llm priority=train preemptible=true gang=8 topology=block>clique", message: long},
		{workload: "Pod scratch/quick-test", decision: decisionDenied, dimension: "tenancy",
			message: `namespace "scratch" has no mandate.dev/tenant label, so no tenant's authority covers it; ask a Mandate admin to run: kubectl label namespace scratch mandate.dev/tenant=<tenant> (tenants: helix, platform, product, research, research-llm, research-vision)`},
		{workload: "Pod platform/notebook-alice", tenant: "platform", decision: decisionMutated,
			injected: "kai-scheduler queue=platform priority=build preemptible=false topology=node", message: "within every limit"},
		{workload: "VolcanoJob " + strings.Repeat("Ж", 60) + "/" + strings.Repeat("Ш", 63), tenant: "research-vision", decision: decisionMutated,
			injected: "volcano queue=research-vision priority=train preemptible=true gang=2 topology=node", message: strings.Repeat("Ю", 300)},
	}
	var b strings.Builder
	printTable(&b, rows)
	out := b.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for i, l := range lines {
		if n := utf8.RuneCountInString(l); n > tableWidth {
			t.Errorf("line %d is %d columns, more than %d:\n%s", i+1, n, tableWidth, l)
		}
	}
	// Joined back, the lines hold every message and every INJECTED in full.
	joined := strings.Join(strings.Fields(out), " ")
	for _, r := range rows[:3] {
		for _, want := range []string{r.workload, r.injected, oneLine(r.message)} {
			if !strings.Contains(joined, want) {
				t.Errorf("the table lacks %q:\n%s", want, out)
			}
		}
	}
	// The last row's name wraps in its column beside INJECTED: every
	// character of it, and of its message, is there (runes of 2 bytes, so
	// the widths count columns, not bytes).
	for c, want := range map[string]int{"Ж": 60, "Ш": 63, "Ю": 300} {
		if got := strings.Count(out, c); got != want {
			t.Errorf("%d of the %d %q columns of the last row are left:\n%s", got, want, c, out)
		}
	}
	if !strings.HasPrefix(lines[0], "WORKLOAD") || !strings.HasSuffix(lines[0], "INJECTED") {
		t.Errorf("header %q", lines[0])
	}
	t.Logf("\n%s", out)
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		s     string
		width int
		want  []string
	}{
		{"", 10, []string{""}},
		{"one two three", 7, []string{"one two", "three"}},
		{"abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"a × b", 3, []string{"a ×", "b"}},
	} {
		if got := wrap(tc.s, tc.width); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("wrap(%q, %d) = %q, want %q", tc.s, tc.width, got, tc.want)
		}
	}
}
