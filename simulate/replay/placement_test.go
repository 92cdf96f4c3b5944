package replay

import (
	"context"
	"encoding/json"
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/policies"
)

// placementEvaluator is the default policies with three tenants on the
// default scheduler: ded, confined to pool c0 (NVLink clique c0), iso,
// isolated at the clique level, and other.
func placementEvaluator(t *testing.T) *evaluator.Evaluator {
	t.Helper()
	quota := map[string]any{"nvidia.com/gpu": map[string]any{"guaranteed": 16, "ceiling": 32}}
	classes := []any{"train", "build-preemptible", "build", "inference"}
	tenants := map[string]any{
		"org":   map[string]any{"scheduler": "default", "priorityClasses": classes, "quota": map[string]any{"nvidia.com/gpu": map[string]any{"guaranteed": 48, "ceiling": 96}}},
		"ded":   map[string]any{"parent": "org", "quota": quota, "placement": map[string]any{"allowed": "c0"}},
		"iso":   map[string]any{"parent": "org", "quota": quota, "placement": map[string]any{"isolation": "clique"}},
		"other": map[string]any{"parent": "org", "quota": quota},
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
			m["topology"].(map[string]any)["pools"] = map[string]any{"c0": map[string]any{"level": "clique", "domains": []any{"c0"}}}
			if data, err = json.Marshal(m); err != nil {
				return err
			}
		}
		files[path] = &fstest.MapFile{Data: data}
		return nil
	}))
	p, err := evaluator.LoadFS(files, "placement")
	require.NoError(t, err)
	ev, err := evaluator.New(context.Background(), p, evaluator.Options{})
	require.NoError(t, err)
	return ev
}

// TestSimulatePlacement: mandate simulate places a confined tenant's work
// only in its pool, and keeps another tenant's work out of a clique an
// isolated tenant runs in (and the isolated tenant's out of another's),
// so work waits there that would otherwise run.
func TestSimulatePlacement(t *testing.T) {
	ev := placementEvaluator(t)
	twoCliques := Supply{Nodes: []*corev1.Node{gpuNode("n0", "c0", 8), gpuNode("n1", "c1", 8)}}
	job := func(name, tenant string, gpus int) Job {
		return Job{Name: name, Tenant: tenant, PriorityClass: "build", Pods: 1, GPUsPerPod: gpus}
	}
	for _, tc := range []struct {
		name    string
		jobs    []Job
		running []string
	}{
		{"a confined tenant waits for its pool while c1 is free", []Job{job("d1", "ded", 8), job("d2", "ded", 8)}, []string{"d1"}},
		{"no clique holds the isolated tenant's work and another's",
			[]Job{job("i1", "iso", 4), job("o1", "other", 4), job("o2", "other", 4), job("o3", "other", 4), job("i2", "iso", 4)},
			[]string{"i1", "i2", "o1", "o2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := RunScenario(context.Background(), Scenario{Jobs: tc.jobs, Supply: twoCliques},
				Options{Decider: ev, Model: ev.Model(), Revision: "placement"})
			require.NoError(t, err)
			running, _ := out.Final()
			assert.Equal(t, tc.running, running, "running; timeline %v", out.Timeline)
		})
	}
}
