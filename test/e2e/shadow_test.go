package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"

	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/decisionlog"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/openreports"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// candidateDir copies the default policy directory and edits its
// authority model (data.mandate.model), as someone trying a change would.
func candidateDir(t *testing.T, edit func(model map[string]any)) string {
	t.Helper()
	src, dir := "../../policies", t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if rel == filepath.Join("mandate", "model", "data.json") {
			var model map[string]any
			if err := json.Unmarshal(data, &model); err != nil {
				return err
			}
			edit(model)
			if data, err = json.MarshalIndent(model, "", "  "); err != nil {
				return err
			}
		}
		return os.WriteFile(filepath.Join(dir, rel), data, 0o644)
	})
	if err != nil {
		t.Fatalf("candidate policy directory: %v", err)
	}
	return dir
}

// metric reads one sample from a Prometheus text exposition at url;
// 0 when it is not there yet.
func metric(t *testing.T, url, sample string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if value, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				t.Fatalf("%s: %v", sample, err)
			}
			return v
		}
	}
	return 0
}

// TestShadowBundleIsNeverEnforced: the active revision (a bundle file)
// admits a research-vision training Job; the shadow, a candidate policy
// directory that takes "train" from research-vision's priority classes,
// would deny it. The API server
// stores the Job as the active revision mutated it, and the shadow's
// denial shows in Review.Shadow, in the metrics and in /bundle/status, with
// both revisions.
func TestShadowBundleIsNeverEnforced(t *testing.T) {
	active := fixtures.BundleFile(t, "../../policies", "active-r1")
	// The candidate is a policy directory, as a policy author has it.
	candidate := candidateDir(t, func(model map[string]any) {
		tenants := model["tenants"].(map[string]any)
		tenants["research-vision"].(map[string]any)["priorityClasses"] = []any{"build-preemptible"}
	})
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	var lines syncBuffer
	decisions, err := decisionlog.New(slog.NewJSONHandler(&lines, nil), decisionlog.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	s := startWith(t, startOptions{decisions: decisions, env: []envtest.Option{envtest.WithOpenReportsCRDs()}, config: func(c *config.Serve) {
		c.MetricsAddr = metricsAddr
		c.Bundle.Source, c.Bundle.Shadow.Source, c.Bundle.Interval = active, candidate, time.Hour
		c.OpenReports.Interval = reportsInterval
	}})
	s.populate(t)
	metrics := "http://" + metricsAddr + "/metrics"
	const deniedSample = `mandate_shadow_differences_total{kind="allowed_to_denied"}`
	const differentSample = `mandate_shadow_decisions_total{agreement="different"}`
	envtest.WaitFor(t, 10*time.Second, "the metrics server", func() bool {
		resp, err := http.Get(metrics)
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	deniedBefore, differentBefore := metric(t, metrics, deniedSample), metric(t, metrics, differentSample)

	// Created: the candidate's denial is not enforced.
	job := s.create(t, fixtures.VisionSweep)
	expect(t, job, "metadata.annotations.mandate\\.dev/policy-revision", "active-r1")
	expect(t, job, "spec.template.spec.priorityClassName", "train")

	if got := metric(t, metrics, deniedSample); got != deniedBefore+1 {
		t.Errorf("%s = %v after the create, want %v", deniedSample, got, deniedBefore+1)
	}
	if got := metric(t, metrics, differentSample); got != differentBefore+1 {
		t.Errorf("%s = %v after the create, want %v", differentSample, got, differentBefore+1)
	}

	// What the server's reviewer reports about the same workload.
	review, err := s.srv.Handlers.Mutator.Reviewer.Review(context.Background(), object(t, fixtures.VisionSweep),
		evaluator.Request{Operation: "CREATE", User: "admin", DryRun: true})
	if err != nil {
		t.Fatalf("Review: %v", err)
	}
	if !review.Decision.Allowed || review.Decision.Revision != "active-r1" {
		t.Errorf("active decision: allowed %v by %q, want allowed by active-r1", review.Decision.Allowed, review.Decision.Revision)
	}
	sh := review.Shadow
	if sh == nil {
		t.Fatal("Review.Shadow is nil, want the candidate's decision")
	}
	// A directory outside Git: its revision is its content hash.
	if !strings.HasPrefix(sh.Revision, "sha256-") || sh.Decision.Allowed {
		t.Errorf("shadow decision: allowed %v by %q, want denied by the candidate directory's sha256- revision", sh.Decision.Allowed, sh.Revision)
	}
	want := []string{"allowed: true -> false", "violations: [] -> [PRIORITY_NOT_ALLOWED]"}
	for _, w := range want {
		found := false
		for _, d := range sh.Differences {
			found = found || d == w
		}
		if !found {
			t.Errorf("Review.Shadow.Differences = %q, want %q among them", sh.Differences, w)
		}
	}

	// The decision log line of the create names both revisions and the
	// differences.
	var logged map[string]any
	for _, l := range decisionLines(t, lines.Bytes()) {
		if l["name"] == job.GetName() && l["reinvocation"] == false {
			logged = l
		}
	}
	if logged == nil {
		t.Fatalf("no decision line for %s in %s", job.GetName(), lines.Bytes())
	}
	shadowLine, _ := logged["shadow"].(map[string]any)
	if logged["revision"] != "active-r1" || logged["result"] != "allowed" || shadowLine == nil ||
		shadowLine["revision"] != sh.Revision || shadowLine["result"] != "denied" {
		t.Errorf("decision line = %v, want allowed by active-r1 with the shadow %s denying", logged, sh.Revision)
	}
	if diffs := fmt.Sprint(shadowLine["differences"]); !strings.Contains(diffs, "allowed: true -> false") {
		t.Errorf("decision line's shadow differences = %s, want allowed: true -> false among them", diffs)
	}

	// /bundle/status names both revisions and their sources.
	resp, err := http.Get("http://" + metricsAddr + bundles.StatusPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st bundles.ServingStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("%s: %v", bundles.StatusPath, err)
	}
	if st.Active.Revision != "active-r1" || st.Active.Source != active || st.Active.LastError != "" {
		t.Errorf("status of the active bundle = %+v", st.Active)
	}
	if st.Shadow == nil || st.Shadow.Revision != sh.Revision || st.Shadow.Source != candidate {
		t.Errorf("status of the shadow bundle = %+v", st.Shadow)
	}

	// The background audit decides it against the shadow too: its Report
	// holds the candidate's would-be denial as a warning of the shadow's
	// policy, and nothing of the active revision, which admits it.
	c := s.env.Client
	if err := v1alpha1.Install(c.Scheme()); err != nil {
		t.Fatal(err)
	}
	var shadowResult v1alpha1.ReportResult
	envtest.WaitFor(t, 60*time.Second, "the shadow's result for "+job.GetName(), func() bool {
		var ok bool
		shadowResult, ok = result(t, c, job.GetNamespace(), job, "PRIORITY_NOT_ALLOWED")
		return ok
	})
	if shadowResult.Policy != openreports.PolicyShadow || shadowResult.Result != "warn" ||
		shadowResult.Properties[openreports.PropertyRevision] != sh.Revision {
		t.Errorf("result %+v, want policy %s, result warn, revision %s", shadowResult, openreports.PolicyShadow, sh.Revision)
	}
	for _, r := range report(t, c, job.GetNamespace()).Results {
		if r.Policy == openreports.PolicyActive {
			t.Errorf("the active revision admits %s, yet its Report holds %+v", job.GetName(), r)
		}
	}
}
