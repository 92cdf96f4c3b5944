package openreports

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/mandate-dev/mandate/audit"
	"github.com/mandate-dev/mandate/evaluator"
)

func violation(code string, dim evaluator.Dimension, enforcement string) evaluator.Violation {
	return evaluator.Violation{Code: code, Dimension: dim, Message: code + " message", Enforcement: enforcement,
		Facts: evaluator.Facts{Limit: 4, Current: 2, Needs: 6, Resource: "nvidia.com/gpu"}}
}

func workload(ns, name string) audit.WorkloadRef {
	return audit.WorkloadRef{APIVersion: "batch/v1", Kind: "Job", Namespace: ns, Name: name, UID: "uid-" + name, Tenant: "t-" + ns}
}

func TestBuild(t *testing.T) {
	now := time.Unix(1700000000, 0)
	active := &audit.Report{Revision: "r1", Workloads: []audit.Result{
		{Workload: workload("a", "denied"), Verdict: audit.VerdictDeny,
			Violations: []evaluator.Violation{violation("QUOTA_EXCEEDS_CEILING", evaluator.DimensionQuota, evaluator.EnforceDeny)}},
		{Workload: workload("a", "staged"), Verdict: audit.VerdictUnchanged,
			Warned: []evaluator.Violation{violation("PRIORITY_NOT_ALLOWED", evaluator.DimensionPriority, evaluator.EnforceWarn)},
			DryRun: []evaluator.Violation{violation("TOPOLOGY_UNSATISFIABLE", evaluator.DimensionTopology, evaluator.EnforceDryRun)}},
		{Workload: workload("b", "clean"), Verdict: audit.VerdictUnchanged},
	}}
	shadow := &audit.Report{Revision: "r2", Workloads: []audit.Result{
		{Workload: workload("c", "shadowed"), Verdict: audit.VerdictDeny,
			Violations: []evaluator.Violation{violation("PRIORITY_NOT_ALLOWED", evaluator.DimensionPriority, evaluator.EnforceDeny)}},
	}}
	reps := Build(active, shadow, Options{Now: now})
	type row struct{ NS, Policy, Rule, Category, Subject, Result, Severity, Revision, Enforcement, Limit string }
	var got []row
	for _, r := range reps {
		for _, res := range r.Results {
			got = append(got, row{r.Namespace, res.Policy, res.Rule, res.Category, res.Subjects[0].Name, string(res.Result), string(res.Severity),
				res.Properties[PropertyRevision], res.Properties[PropertyEnforcement], res.Properties[PropertyLimit]})
		}
	}
	want := []row{
		{"a", PolicyActive, "QUOTA_EXCEEDS_CEILING", "quota", "denied", "fail", "high", "r1", "deny", "4"},
		{"a", PolicyActive, "PRIORITY_NOT_ALLOWED", "priority", "staged", "fail", "medium", "r1", "warn", "4"},
		{"a", PolicyActive, "TOPOLOGY_UNSATISFIABLE", "topology", "staged", "fail", "low", "r1", "dryrun", "4"},
		{"c", PolicyShadow, "PRIORITY_NOT_ALLOWED", "priority", "shadowed", "warn", "high", "r2", "deny", "4"},
	}
	assert.Equal(t, want, got, "results")
	if len(reps) != 2 {
		t.Fatalf("%d Reports, want 2 (namespace b has no violation)", len(reps))
	}
	if s := reps[0].Summary; s.Fail != 3 || s.Warn != 0 {
		t.Errorf("summary of a = %+v, want 3 fail", s)
	}
	if s := reps[1].Summary; s.Warn != 1 || s.Fail != 0 {
		t.Errorf("summary of c = %+v, want 1 warn", s)
	}
}

// TestBuildCapsResults: past MaxResults the most severe results stay, the
// summary counts them all and the annotation says how many were left out.
func TestBuildCapsResults(t *testing.T) {
	rep := &audit.Report{Revision: "r1"}
	for _, name := range []string{"w1", "w2", "w3"} {
		rep.Workloads = append(rep.Workloads, audit.Result{Workload: workload("a", name),
			DryRun: []evaluator.Violation{violation("TOPOLOGY_UNSATISFIABLE", evaluator.DimensionTopology, evaluator.EnforceDryRun)}})
	}
	rep.Workloads = append(rep.Workloads, audit.Result{Workload: workload("a", "w4"),
		Violations: []evaluator.Violation{violation("QUOTA_EXCEEDS_CEILING", evaluator.DimensionQuota, evaluator.EnforceDeny)}})
	reps := Build(rep, nil, Options{MaxResults: 2})
	if len(reps) != 1 {
		t.Fatalf("%d Reports, want 1", len(reps))
	}
	r := reps[0]
	if len(r.Results) != 2 || r.Results[0].Subjects[0].Name != "w4" {
		t.Errorf("results %+v, want 2, the denied w4 first", r.Results)
	}
	if r.Summary.Fail != 4 || r.Annotations[AnnotationOmitted] != "2" || r.Configuration.Limits.MaxResults != 2 {
		t.Errorf("summary %+v, annotations %v, limits %+v; want 4 fail, 2 omitted, maxResults 2", r.Summary, r.Annotations, r.Configuration.Limits)
	}
}

// TestUnchangedResultsKeepTheirTimestamp: a result seen before keeps its
// first timestamp, so a Report whose results did not change is the same
// as the one stored and is not written again.
func TestUnchangedResultsKeepTheirTimestamp(t *testing.T) {
	rep := &audit.Report{Revision: "r1", Workloads: []audit.Result{{Workload: workload("a", "w1"),
		Violations: []evaluator.Violation{violation("QUOTA_EXCEEDS_CEILING", evaluator.DimensionQuota, evaluator.EnforceDeny)}}}}
	old := Build(rep, nil, Options{Now: time.Unix(100, 0)})[0]
	next := Build(rep, nil, Options{Now: time.Unix(200, 0)})[0]
	keepTimestamps(next, old)
	if !same(next, old) || next.Results[0].Timestamp.Seconds != 100 {
		t.Errorf("unchanged result: same = %v, timestamp %d; want same, 100", same(next, old), next.Results[0].Timestamp.Seconds)
	}
	rep.Revision = "r2"
	changed := Build(rep, nil, Options{Now: time.Unix(300, 0)})[0]
	keepTimestamps(changed, old)
	if same(changed, old) || changed.Results[0].Timestamp.Seconds != 300 {
		t.Errorf("changed result: same = %v, timestamp %d; want different, 300", same(changed, old), changed.Results[0].Timestamp.Seconds)
	}
}

// TestLoopAuditsANewRevisionBeforeTheInterval: with an interval of an
// hour, a change of revision alone runs the audit again.
func TestLoopAuditsANewRevisionBeforeTheInterval(t *testing.T) {
	var revision atomic.Value
	revision.Store("r1")
	audits := make(chan string, 10)
	l := &Loop{
		Interval:  time.Hour,
		Revisions: func() string { return revision.Load().(string) },
		Audit: func(context.Context) (Audits, error) {
			audits <- revision.Load().(string)
			return Audits{}, ErrNoPolicy
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- l.run(ctx, func(context.Context) (Written, error) { _, err := l.Audit(ctx); return Written{}, err })
	}()
	if got := <-audits; got != "r1" {
		t.Fatalf("first audit of %q, want r1", got)
	}
	revision.Store("r2")
	if got := <-audits; got != "r2" {
		t.Fatalf("second audit of %q, want r2", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
