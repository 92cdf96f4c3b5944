package explain_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/explain"
	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/topology/topologytest"
)

// TestExplainNamesTaintedDevices: on a node whose ResourceSlice has 3 of
// its 8 GPUs tainted NoSchedule, a Job of one pod claiming 8 GPUs through
// a ResourceClaimTemplate never fits, and explain names the tainted
// devices as the change that would unblock it.
func TestExplainNamesTaintedDevices(t *testing.T) {
	slice := topologytest.GPUSlice("n0", 8, "NVIDIA H100 80GB HBM3")
	for i := range 3 {
		slice.Spec.Devices[i].Taints = []resourcev1.DeviceTaint{{Key: "gpu.nvidia.com/xid", Effect: resourcev1.DeviceTaintEffectNoSchedule}}
	}
	docs := []string{`apiVersion: v1
kind: Node
metadata: {name: n0, labels: {kubernetes.io/hostname: n0, nvidia.com/gpu.clique: c0}}
status: {conditions: [{type: Ready, status: "True"}]}`, `apiVersion: v1
kind: Namespace
metadata: {name: llm, labels: {mandate.dev/tenant: research-llm}}`}
	for _, o := range []any{slice, topologytest.GPUDeviceClass()} {
		b, err := yaml.Marshal(o)
		require.NoError(t, err)
		docs = append(docs, string(b))
	}
	job, err := os.ReadFile("../examples/workloads/10-llm-dra-gang.yaml")
	require.NoError(t, err)
	docs = append(docs, strings.Replace(string(job), "parallelism: 2\n  completions: 2", "parallelism: 1\n  completions: 1", 1))
	path := filepath.Join(t.TempDir(), "snapshot.yaml")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")), 0o600))
	inv, err := inventory.ReadSnapshot(path)
	require.NoError(t, err)
	ev := decider(t)
	e, err := explain.Explain(context.Background(), inv, nil, explain.Target{Kind: "job", Namespace: "llm", Name: "dra-pretrain"},
		explain.Options{Decider: ev, Model: ev.Model(), Revision: "dra"})
	require.NoError(t, err)
	require.NotEmpty(t, e.Blocks)
	require.Equal(t, "TOPOLOGY_NEVER_FITS", e.Blocks[0].Code, "%+v", e.Blocks)
	require.Contains(t, e.Blocks[0].Unblock, "3 of 8 nvidia.com/gpu on node n0 are tainted (gpu.nvidia.com/xid:NoSchedule)")
}
