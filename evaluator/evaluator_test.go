package evaluator_test

import (
	"context"
	"errors"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/topology"
)

func defaultEvaluator(t *testing.T) *evaluator.Evaluator {
	t.Helper()
	return fixtures.Evaluator(t, "test", nil)
}

// cliqueSnapshot is a cluster of 8-GPU nodes named names, with used[i]
// GPUs of node i taken, all in one clique; domain names its zone, spine
// block, leaf block and clique.
func cliqueSnapshot(t *testing.T, domain [4]string, names []string, used []int) *topology.Snapshot {
	t.Helper()
	var nodes []topology.FixtureNode
	for i, name := range names {
		nodes = append(nodes, topology.FixtureNode{
			Name: name,
			Labels: map[string]string{
				"topology.kubernetes.io/zone": domain[0], "mandate.dev/spine-block": domain[1], "mandate.dev/leaf-block": domain[2],
				"nvidia.com/gpu.clique": domain[3], "kubernetes.io/hostname": name,
			},
			Allocatable: map[string]int{"nvidia.com/gpu": 8},
			Used:        map[string]int{"nvidia.com/gpu": used[i]},
		})
	}
	s, err := topology.FromFixture(topology.Fixture{Levels: defaultEvaluator(t).Model().Topology.Levels, Nodes: nodes})
	require.NoError(t, err)
	return s
}

// fixture is a block of four 8-GPU nodes, two of them free.
func fixture(t *testing.T) *topology.Snapshot {
	t.Helper()
	return cliqueSnapshot(t, [4]string{"z", "s", "b", "c"}, []string{"n1", "n2", "n3", "n4"}, []int{8, 0, 0, 8})
}

func input(tenant string, pods, gpus int, usage map[string]map[string]ledger.Usage) evaluator.Input {
	in := fixtures.JobInput(tenant, pods, gpus)
	in.Usage = usage
	return in
}

func TestDecide(t *testing.T) {
	ev := defaultEvaluator(t)
	snap := fixture(t)
	for _, tc := range []struct {
		name          string
		in            evaluator.Input
		wantAllowed   bool
		wantCodes     []string
		wantWarnings  int
		wantScheduler string
	}{
		{name: "fits now", in: input("research-llm", 2, 8, nil), wantAllowed: true, wantScheduler: "volcano"},
		{name: "waits for capacity", in: input("research-llm", 3, 8, nil), wantAllowed: true, wantWarnings: 1, wantScheduler: "volcano"},
		{name: "never fits", in: input("research-llm", 5, 8, nil), wantCodes: []string{"TOPOLOGY_NEVER_FITS"}},
		{name: "no tenant", in: input("", 1, 8, nil), wantCodes: []string{"TENANT_MISSING"}},
		{name: "above ceiling", in: input("research-vision", 9, 8, nil), wantCodes: []string{"QUOTA_EXCEEDS_CEILING", "TOPOLOGY_NEVER_FITS"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Cluster = snap
			d, err := ev.Decide(context.Background(), tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.wantAllowed, d.Allowed)
			var codes []string
			for _, v := range d.Violations {
				codes = append(codes, v.Code)
				require.NotEmpty(t, v.Message)
				require.NotEmpty(t, v.Dimension)
			}
			require.Equal(t, tc.wantCodes, codes)
			require.Len(t, d.Warnings, tc.wantWarnings)
			require.Equal(t, "test", d.Revision)
			require.Len(t, d.ID, 16)
			if tc.wantAllowed {
				require.Equal(t, tc.wantScheduler, d.Directives.Scheduler)
			}
		})
	}
}

func TestDecideWithoutSnapshotWarns(t *testing.T) {
	d, err := defaultEvaluator(t).Decide(context.Background(), input("research-llm", 1, 8, nil))
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.Equal(t, []string{"no cluster snapshot was available, so topology placement was not checked"}, d.Warnings)
}

func TestDecideUsesUsage(t *testing.T) {
	usage := map[string]map[string]ledger.Usage{"product": {"nvidia.com/gpu": {Total: 128, NonPreemptible: 128}}}
	in := input("product", 1, 8, usage)
	in.Workload.PriorityClass = "build"
	in.Cluster = fixture(t)
	d, err := defaultEvaluator(t).Decide(context.Background(), in)
	require.NoError(t, err)
	require.True(t, d.Directives.Preemptible, "work beyond the guarantee is turned preemptible")
}

// TestDecideExportsReliedLimits: the default policies list the quota
// limits of the tenant chain with the usage they saw and the outcomes they
// took from it; a policy without decision.relied says it exported none.
func TestDecideExportsReliedLimits(t *testing.T) {
	usage := map[string]map[string]ledger.Usage{
		"product": {"nvidia.com/gpu": {Total: 128, NonPreemptible: 124}},
		"helix":   {"nvidia.com/gpu": {Total: 200, NonPreemptible: 150}},
	}
	in := input("product", 1, 8, usage)
	in.Workload.PriorityClass = "build"
	in.Cluster = fixture(t)
	d, err := defaultEvaluator(t).Decide(context.Background(), in)
	require.NoError(t, err)
	require.True(t, d.ReliedKnown)
	require.Equal(t, []ledger.Limit{
		{Tenant: "product", Key: "nvidia.com/gpu", Ceiling: 160, Guaranteed: 128, Demand: 8,
			Seen: ledger.Usage{Total: 128, NonPreemptible: 124}, Busy: false, OverGuarantee: true},
		{Tenant: "helix", Key: "nvidia.com/gpu", Ceiling: 384, Guaranteed: 320, Demand: 8,
			Seen: ledger.Usage{Total: 200, NonPreemptible: 150}, Busy: false, OverGuarantee: false},
	}, d.Relied)

	ev, err := evaluator.New(context.Background(), policy(t, "package mandate\ndecision := {\"allowed\": true}"), evaluator.Options{})
	require.NoError(t, err)
	d, err = ev.Decide(context.Background(), input("t", 1, 1, nil))
	require.NoError(t, err)
	require.False(t, d.ReliedKnown)
	require.Empty(t, d.Relied)
}

// policy is a minimal authority model with the given decision rules.
func policy(t *testing.T, rego string) *evaluator.Policy {
	t.Helper()
	fsys := fstest.MapFS{
		"mandate/decision.rego":   {Data: []byte(rego)},
		"mandate/model/data.json": {Data: []byte(`{"tenants": {}, "topology": {"levels": [{"name": "node", "nodeLabel": "kubernetes.io/hostname"}]}}`)},
	}
	p, err := evaluator.LoadFS(fsys, "r1")
	require.NoError(t, err)
	return p
}

func TestDecideDeadline(t *testing.T) {
	p := policy(t, `package mandate
decision := {"allowed": count([x | some x in numbers.range(1, 100000000)]) > 0}`)
	ev, err := evaluator.New(context.Background(), p, evaluator.Options{Timeout: 20 * time.Millisecond})
	require.NoError(t, err)
	_, err = ev.Decide(context.Background(), input("t", 1, 1, nil))
	require.ErrorIs(t, err, evaluator.ErrTimeout)
}

func TestDecideErrorNamesTheRule(t *testing.T) {
	p := policy(t, `package mandate
decision := {"allowed": true} if input.workload.pods > 0
decision := {"allowed": false} if input.workload.pods > 0`)
	ev, err := evaluator.New(context.Background(), p, evaluator.Options{})
	require.NoError(t, err)
	_, err = ev.Decide(context.Background(), input("t", 1, 1, nil))
	require.ErrorContains(t, err, "mandate/decision.rego:")
	require.ErrorContains(t, err, `revision "r1"`)
}

func TestDecideRejectsMalformedDecisions(t *testing.T) {
	for _, tc := range []struct{ name, rego, want string }{
		{"allowed not a boolean", `decision := {"allowed": "yes"}`, "decision.allowed is string"},
		{"deny without a reason", `decision := {"allowed": false, "violations": []}`, "denies without a violation"},
		{"violations of the wrong shape", `decision := {"allowed": false, "violations": "no"}`, "decision.violations"},
		{"undefined", `decision := {"allowed": true} if false`, "is undefined"},
		{"warned of the wrong shape", `decision := {"allowed": true, "warned": {"a": 1}}`, "decision.warned is map"},
		{"dryrun entry not an object", `decision := {"allowed": true, "dryrun": ["x"]}`, "decision.dryrun[0] is string, want an object"},
		{"unknown enforcement", `decision := {"allowed": true, "warned": [{"code": "X", "enforcement": "maybe"}]}`,
			`decision.warned[0].enforcement is "maybe", want deny, warn or dryrun`},
		{"fact of the wrong type", `decision := {"allowed": true, "reasons": [{"code": "X", "limit": "8"}]}`,
			"decision.reasons[0].limit is string"},
		{"classes not strings", `decision := {"allowed": false, "violations": [{"code": "X", "classes": [1]}]}`,
			"decision.violations[0].classes[0] is json.Number, want a string"},
		{"relied limit without outcomes", `decision := {"allowed": true, "relied": [{"tenant": "t", "usage": "g", "seen": {}}]}`,
			"decision.relied[0].busy is missing"},
		{"relied ceiling not a number", `decision := {"allowed": true, "relied": [{"tenant": "t", "ceiling": "8", "seen": {}, "busy": false, "overGuarantee": false}]}`,
			"decision.relied[0].ceiling is string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := evaluator.New(context.Background(), policy(t, "package mandate\n"+tc.rego), evaluator.Options{})
			require.NoError(t, err)
			_, err = ev.Decide(context.Background(), input("t", 1, 1, nil))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestNewRejectsBrokenPolicies(t *testing.T) {
	_, err := evaluator.New(context.Background(), policy(t, "package mandate\ndecision := {\"allowed\": undefined_thing}"), evaluator.Options{})
	require.ErrorContains(t, err, "unable to compile policies")

	p := policy(t, "package mandate\ndecision := {\"allowed\": true}")
	delete(p.Data, "mandate")
	_, err = evaluator.New(context.Background(), p, evaluator.Options{})
	require.ErrorContains(t, err, "no mandate.model")

	p = policy(t, "package mandate\ndecision := {\"allowed\": true}")
	p.Data["mandate"].(map[string]any)["model"].(map[string]any)["tenants"] = map[string]any{"a": map[string]any{"parent": "ghost"}}
	_, err = evaluator.New(context.Background(), p, evaluator.Options{})
	require.ErrorContains(t, err, `names unknown tenant "ghost"`)
}

func TestLoadPathsNeedsRego(t *testing.T) {
	_, err := evaluator.LoadPaths([]string{t.TempDir()}, "x")
	require.ErrorContains(t, err, "no Rego modules found")
	_, err = evaluator.LoadPaths([]string{"does-not-exist"}, "x")
	require.Error(t, err)
	require.False(t, errors.Is(err, evaluator.ErrTimeout))
}

// fixtureSnapshot is the cluster of the Rego tests' fixture, in Go.
func fixtureSnapshot(t *testing.T) *topology.Snapshot {
	t.Helper()
	return cliqueSnapshot(t, [4]string{"zone-a", "s1", "b1", "c1"}, []string{"h1", "h2", "h3", "h4"}, []int{8, 0, 4, 0})
}

func TestExplanationsOnDemand(t *testing.T) {
	ev := defaultEvaluator(t)
	in := input("research-llm", 2, 8, nil)
	in.Cluster = fixture(t)
	d, err := ev.Decide(context.Background(), in)
	require.NoError(t, err)
	require.Nil(t, d.Explanations, "admissions do not pay for explanations")

	in.Explain = true
	explained, err := ev.Decide(context.Background(), in)
	require.NoError(t, err)
	var dims []evaluator.Dimension
	for _, e := range explained.Explanations {
		dims = append(dims, e.Dimension)
		require.Contains(t, []string{"ok", "warn", "dryrun", "deny"}, e.Verdict)
		require.NotEmpty(t, e.Limit)
		require.NotEmpty(t, e.Current)
	}
	require.Equal(t, []evaluator.Dimension{"tenancy", "priority", "quota", "topology", "preemption"}, dims)
	require.Equal(t, d.Directives, explained.Directives, "both queries decide the same")
}
