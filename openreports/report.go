// Package openreports publishes the audit of the workloads that already run
// as OpenReports (openreports.io/v1alpha1) Report objects, the API that
// Kyverno's background scan, Policy Reporter and security dashboards read:
// one Report per namespace, one result per workload and violated rule of the
// authority model (its code, dimension, stage, message, limit and current
// value, and the policy revision). Build turns audit reports into Reports
// (also what `mandate audit -o openreports` prints); Writer keeps the
// cluster's Reports equal to them with server-side apply, writing only the
// ones that changed and deleting the ones left empty; Loop runs the audit
// on serve's elected replica on an interval and on every bundle activation.
package openreports

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	v1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mandate-dev/mandate/audit"
	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/evaluator"
)

const (
	// Source names Mandate as the engine of its Reports and results.
	Source = "mandate"
	// ReportName is the name of Mandate's Report in each namespace.
	ReportName = "mandate-authority"
	// PolicyActive is the policy of a result of the active revision;
	// PolicyShadow of the shadow candidate's (decided, never enforced).
	PolicyActive = "mandate-authority"
	PolicyShadow = "mandate-authority-shadow"
	// AnnotationOmitted counts the results left out of a Report past
	// Options.MaxResults.
	AnnotationOmitted = "mandate.dev/omitted-results"
	// RuleUnreadable is the rule of a workload Mandate cannot read (the
	// webhook refuses it as bad input).
	RuleUnreadable = "WORKLOAD_UNREADABLE"
)

// The properties of a result.
const (
	PropertyRevision    = "revision"
	PropertyEnforcement = "enforcement"
	PropertyTenant      = "tenant"
	PropertyLimit       = "limit"
	PropertyCurrent     = "current"
	PropertyNeeds       = "needs"
	PropertyResource    = "resource"
)

// Options shape the Reports.
type Options struct {
	// MaxResults caps the results of one Report
	// (config.DefaultOpenReportsMaxResults when 0). Past it the most severe results are kept (the active
	// revision's before the shadow's, deny before warn before dryrun),
	// the summary still counts every one, and AnnotationOmitted says how
	// many were left out.
	MaxResults int
	// Now stamps new results.
	Now time.Time
}

// Build is one Report per namespace holding a result per workload and
// violated rule: of active (the active revision, result fail) and of
// shadow (the shadow candidate, result warn; nil without one). A namespace
// without any is absent. Reports are ordered by namespace.
func Build(active, shadow *audit.Report, o Options) []*v1alpha1.Report {
	maxResults := o.MaxResults
	if maxResults <= 0 {
		maxResults = config.DefaultOpenReportsMaxResults
	}
	byNS := map[string][]v1alpha1.ReportResult{}
	for _, a := range []struct {
		rep    *audit.Report
		policy string
	}{{active, PolicyActive}, {shadow, PolicyShadow}} {
		if a.rep == nil {
			continue
		}
		for _, w := range a.rep.Workloads {
			for _, r := range resultsOf(w, a.rep.Revision, a.policy, o.Now) {
				byNS[w.Workload.Namespace] = append(byNS[w.Workload.Namespace], r)
			}
		}
	}
	namespaces := make([]string, 0, len(byNS))
	for ns := range byNS {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	out := make([]*v1alpha1.Report, 0, len(namespaces))
	for _, ns := range namespaces {
		results := byNS[ns]
		sort.SliceStable(results, func(i, j int) bool { return lessResult(results[i], results[j]) })
		rep := &v1alpha1.Report{
			TypeMeta:      metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Report"},
			ObjectMeta:    metav1.ObjectMeta{Name: ReportName, Namespace: ns, Labels: map[string]string{config.LabelManagedBy: config.ManagedBy}},
			Source:        Source,
			Configuration: &v1alpha1.ReportConfiguration{Limits: v1alpha1.Limits{MaxResults: maxResults}},
			Summary:       summarize(results),
		}
		if n := len(results) - maxResults; n > 0 {
			rep.Annotations = map[string]string{AnnotationOmitted: strconv.Itoa(n)}
			results = results[:maxResults]
		}
		rep.Results = results
		out = append(out, rep)
	}
	return out
}

// resultsOf is a result per violated rule of one workload.
func resultsOf(w audit.Result, revision, policy string, now time.Time) []v1alpha1.ReportResult {
	subject := corev1.ObjectReference{APIVersion: w.Workload.APIVersion, Kind: w.Workload.Kind,
		Namespace: w.Workload.Namespace, Name: w.Workload.Name, UID: types.UID(w.Workload.UID)}
	outcome := v1alpha1.Result("fail")
	if policy == PolicyShadow {
		outcome = "warn"
	}
	base := func() v1alpha1.ReportResult {
		return v1alpha1.ReportResult{Source: Source, Policy: policy, Result: outcome,
			Timestamp: metav1.Timestamp{Seconds: now.Unix()}, Subjects: []corev1.ObjectReference{subject},
			Properties: map[string]string{PropertyRevision: revision}}
	}
	var out []v1alpha1.ReportResult
	if w.Error != "" {
		r := base()
		r.Rule, r.Severity, r.Result, r.Description = RuleUnreadable, "high", "error", w.Error
		out = append(out, r)
	}
	for _, stage := range []struct {
		list        []evaluator.Violation
		enforcement string
	}{{w.Violations, evaluator.EnforceDeny}, {w.Warned, evaluator.EnforceWarn}, {w.DryRun, evaluator.EnforceDryRun}} {
		for _, v := range stage.list {
			r := base()
			r.Rule, r.Category, r.Description = v.Code, string(v.Dimension), v.Message
			r.Severity = Severity(stage.enforcement)
			r.Properties[PropertyEnforcement] = stage.enforcement
			if w.Workload.Tenant != "" {
				r.Properties[PropertyTenant] = w.Workload.Tenant
			}
			for key, n := range map[string]int{PropertyLimit: v.Limit, PropertyCurrent: v.Current, PropertyNeeds: v.Needs} {
				if n != 0 {
					r.Properties[key] = strconv.Itoa(n)
				}
			}
			if v.Resource != "" {
				r.Properties[PropertyResource] = v.Resource
			}
			out = append(out, r)
		}
	}
	return out
}

// Severity is a violation's severity from its enforcement stage: what the
// model does about it at admission.
func Severity(enforcement string) v1alpha1.ResultSeverity {
	switch enforcement {
	case evaluator.EnforceDeny:
		return "high"
	case evaluator.EnforceWarn:
		return "medium"
	case evaluator.EnforceDryRun:
		return "low"
	}
	return "info"
}

// severityRank orders severities, most severe first.
func severityRank(s v1alpha1.ResultSeverity) int {
	switch s {
	case "critical":
		return 0
	case "high":
		return 1
	case "medium":
		return 2
	case "low":
		return 3
	}
	return 4
}

// lessResult orders results: the active revision's first, then by
// severity, subject and rule.
func lessResult(a, b v1alpha1.ReportResult) bool {
	if a.Policy != b.Policy {
		return a.Policy == PolicyActive
	}
	if ra, rb := severityRank(a.Severity), severityRank(b.Severity); ra != rb {
		return ra < rb
	}
	sa, sb := subjectKey(a), subjectKey(b)
	if sa != sb {
		return sa < sb
	}
	return a.Rule < b.Rule
}

// subjectKey names a result's workload.
func subjectKey(r v1alpha1.ReportResult) string {
	if len(r.Subjects) == 0 {
		return ""
	}
	s := r.Subjects[0]
	return fmt.Sprintf("%s/%s/%s", s.Kind, s.Name, s.APIVersion)
}

// summarize counts results by outcome.
func summarize(results []v1alpha1.ReportResult) v1alpha1.ReportSummary {
	var s v1alpha1.ReportSummary
	for _, r := range results {
		switch r.Result {
		case "pass":
			s.Pass++
		case "fail":
			s.Fail++
		case "warn":
			s.Warn++
		case "error":
			s.Error++
		case "skip":
			s.Skip++
		}
	}
	return s
}
