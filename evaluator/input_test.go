package evaluator

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/workload"
)

// jsonValue is the input as JSON would render it (without a raw object):
// the reference the term-by-term conversion must equal.
func jsonValue(t *testing.T, in Input) ast.Value {
	t.Helper()
	b, err := json.Marshal(struct {
		Request   Request                            `json:"request"`
		Namespace workload.Namespace                 `json:"namespace"`
		Workload  workload.Workload                  `json:"workload"`
		Usage     map[string]map[string]ledger.Usage `json:"usage"`
	}{in.Request, in.Namespace, in.Workload, in.Usage})
	require.NoError(t, err)
	v, err := ast.ValueFromReader(bytes.NewReader(b))
	require.NoError(t, err)
	return v
}

func TestInputValueMatchesJSON(t *testing.T) {
	full := Input{
		Request:   Request{Operation: "CREATE", User: "alice", Groups: []string{"a", "b"}, DryRun: true},
		Namespace: workload.Namespace{Name: "ns", Labels: map[string]string{"mandate.dev/tenant": "t"}},
		Workload: workload.Workload{
			Kind: "PyTorchJob", APIVersion: "kubeflow.org/v1", Name: "j", Namespace: "ns", Tenant: "t",
			Class: workload.ClassTraining, Pods: 4, MinPods: 2, GPUsPerPod: 8, TotalGPUs: 32, TotalMilliGPUs: 32000,
			GPUResource: "nvidia.com/gpu", GPUFraction: 0.5, GPUMemoryMiB: 4096, GPUShareMilli: 500, GPUProduct: "H100", PriorityClass: "train",
			Topology: workload.TopologyRequest{Required: "block", Preferred: "clique"}, Scheduler: "volcano",
			Roles:        []workload.Role{{Name: "Master", Replicas: 1, GPUsPerPod: 8}, {Name: "Worker", Replicas: 3, GPUsPerPod: 8}},
			Owner:        &workload.Owner{APIVersion: "batch/v1", Kind: "Job", Name: "o", UID: "u"},
			GenerateName: "j-",
			Labels:       map[string]string{"l": "1"}, Annotations: map[string]string{"a": "2"},
			SchedulerKeys: []workload.SchedulerKey{{Key: "label kai.scheduler/queue", Asks: workload.AsksQueue, Value: "q"}},
		},
		Usage: map[string]map[string]ledger.Usage{"t": {"nvidia.com/gpu": {Total: 3, NonPreemptible: 1}}},
	}
	for _, tc := range []struct {
		name string
		in   Input
	}{{"every field set", full}, {"zero values", Input{}}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.in.value()
			require.NoError(t, err)
			want := jsonValue(t, tc.in)
			require.Equal(t, 0, want.Compare(got), "want %v\n got %v", want, got)
		})
	}
}
