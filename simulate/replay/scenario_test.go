package replay

import (
	"context"
	"encoding/json"
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/policies"
)

// preemptionModel is the default policies with tenants for issue 32's
// scenarios, one parent per scheduler: lab (Kueue) over alpha and beta, 8
// GPUs guaranteed and 16 ceiling each in a cohort of 16; shop (the default
// scheduler) over ta and tc; vo (Volcano) over va and vc.
func preemptionModel(t *testing.T) *evaluator.Evaluator {
	t.Helper()
	gpus := func(guaranteed, ceiling int) map[string]any {
		return map[string]any{"nvidia.com/gpu": map[string]any{"guaranteed": guaranteed, "ceiling": ceiling}}
	}
	classes := []any{"train", "build-preemptible", "build", "inference"}
	tenants := map[string]any{
		"lab":   map[string]any{"scheduler": "kueue", "queue": "lab", "priorityClasses": classes, "quota": gpus(16, 16)},
		"alpha": map[string]any{"parent": "lab", "queue": "alpha", "quota": gpus(8, 16)},
		"beta":  map[string]any{"parent": "lab", "queue": "beta", "quota": gpus(8, 16)},
		"shop":  map[string]any{"scheduler": "default", "queue": "shop", "priorityClasses": classes, "quota": gpus(16, 16)},
		"ta":    map[string]any{"parent": "shop", "queue": "ta", "quota": gpus(8, 16)},
		"tc":    map[string]any{"parent": "shop", "queue": "tc", "quota": gpus(4, 16)},
		"vo":    map[string]any{"scheduler": "volcano", "queue": "vo", "priorityClasses": classes, "quota": gpus(16, 16)},
		"va":    map[string]any{"parent": "vo", "queue": "va", "quota": gpus(8, 16)},
		"vc":    map[string]any{"parent": "vo", "queue": "vc", "quota": gpus(4, 16)},
	}
	files := fstest.MapFS{}
	require.NoError(t, fs.WalkDir(policies.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(policies.FS, path)
		if err != nil {
			return err
		}
		if path == "mandate/model/data.json" {
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				return err
			}
			m["tenants"] = tenants
			if data, err = json.Marshal(m); err != nil {
				return err
			}
		}
		files[path] = &fstest.MapFile{Data: data}
		return nil
	}))
	p, err := evaluator.LoadFS(files, "preemption")
	require.NoError(t, err)
	ev, err := evaluator.New(context.Background(), p, evaluator.Options{})
	require.NoError(t, err)
	return ev
}

// nodes is n nodes of 8 GPUs.
func nodes(n int) Supply {
	var s Supply
	for i := range n {
		s.Nodes = append(s.Nodes, gpuNode("n"+string(rune('0'+i)), "c0", 8))
	}
	return s
}

// TestPreemptionScenarios: issue 32's scenarios and the victims every
// scheduler Mandate renders for chooses once configured: borrowed work
// only, the lowest value first, never work within a guarantee, a gang
// whole (or on Volcano, whose gang plugin vetoes a victim below the
// gang's minimum, not at all).
func TestPreemptionScenarios(t *testing.T) {
	ev := preemptionModel(t)
	job := func(name, tenant, class string, pods, gpus int) Job {
		return Job{Name: name, Tenant: tenant, PriorityClass: class, Pods: pods, GPUsPerPod: gpus}
	}
	for _, tc := range []struct {
		name             string
		supply           Supply
		jobs             []Job
		running, evicted []string
	}{
		{"Kueue: beta's guaranteed build reclaims alpha's borrowed inference, never alpha's guaranteed build", nodes(2),
			[]Job{job("a1", "alpha", "build", 1, 8), job("a2", "alpha", "inference", 1, 8), job("b1", "beta", "build", 1, 8)},
			[]string{"a1", "b1"}, []string{"a2"}},
		{"default scheduler: another tenant's guaranteed inference evicts no guaranteed build", nodes(1),
			[]Job{job("ta1", "ta", "build", 1, 4), job("ta2", "ta", "build", 1, 4), job("tc1", "tc", "inference", 1, 4)},
			[]string{"ta1", "ta2"}, []string{}},
		{"default scheduler: nor does its borrowed inference", nodes(1),
			[]Job{job("ta1", "ta", "build", 1, 4), job("ta2", "ta", "build", 1, 4), job("tc1", "tc", "inference", 1, 4), job("tc2", "tc", "inference", 1, 4)},
			[]string{"ta1", "ta2"}, []string{}},
		{"default scheduler: a guaranteed build evicts another tenant's borrowed build, not its guaranteed one", nodes(1),
			[]Job{job("tc1", "tc", "build", 1, 4), job("tc2", "tc", "build", 1, 4), job("ta1", "ta", "build", 1, 4)},
			[]string{"ta1", "tc1"}, []string{"tc2"}},
		{"default scheduler: a 4-pod borrowed gang is evicted whole", nodes(1),
			[]Job{job("tc-gang", "tc", "build", 4, 2), job("ta1", "ta", "build", 1, 8)},
			[]string{"ta1"}, []string{"tc-gang"}},
		{"Volcano: a borrowed gang at its minimum is never evicted", nodes(1),
			[]Job{job("vc-gang", "vc", "build", 4, 2), job("va1", "va", "build", 1, 8)},
			[]string{"vc-gang"}, []string{}},
		{"Volcano: a borrowed single pod is evicted for guaranteed work", nodes(1),
			[]Job{job("vc1", "vc", "build", 1, 4), job("vc2", "vc", "build", 1, 4), job("va1", "va", "build", 1, 4)},
			[]string{"va1", "vc1"}, []string{"vc2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := RunScenario(context.Background(), Scenario{Jobs: tc.jobs, Supply: tc.supply},
				Options{Decider: ev, Model: ev.Model(), Revision: "preemption"})
			require.NoError(t, err)
			running, evicted := out.Final()
			assert.Equal(t, tc.running, running, "running; timeline %v", out.Timeline)
			assert.Equal(t, tc.evicted, evicted, "evicted; timeline %v", out.Timeline)
		})
	}
}

// TestScenarioOutcomeAt: the outcome after each arrival, as an e2e test
// compares it with a real scheduler's.
func TestScenarioOutcomeAt(t *testing.T) {
	o := ScenarioOutcome{Arrivals: []float64{0, 1, 2}, Timeline: []JobEvent{
		{At: 0, Job: "a", What: EventStart}, {At: 1, Job: "b", What: EventStart},
		{At: 2, Job: "a", What: EventEvict}, {At: 2, Job: "c", What: EventStart}, {At: 3, Job: "b", What: EventEnd}}}
	running, evicted := o.At(1)
	assert.Equal(t, []string{"a", "b"}, running)
	assert.Equal(t, []string{}, evicted)
	running, evicted = o.Final()
	assert.Equal(t, []string{"b", "c"}, running)
	assert.Equal(t, []string{"a"}, evicted)
}
