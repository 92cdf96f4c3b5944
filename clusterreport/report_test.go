package clusterreport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/clusterreport"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/explain"
	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/policies"
)

// fixtureFiles are explain's fixture: the example cluster, pending
// workloads of each blocking kind, and the schedulers' queues.
var fixtureFiles = []string{"../examples/cluster.yaml", "../explain/testdata/pending.yaml",
	"../explain/testdata/fragmented.yaml", "../explain/testdata/queues.yaml"}

func fixtureReport(t *testing.T, extra ...string) *clusterreport.Report {
	t.Helper()
	var all bytes.Buffer
	for _, f := range fixtureFiles {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		all.Write(b)
		all.WriteString("\n---\n")
	}
	for _, doc := range extra {
		all.WriteString(doc + "\n---\n")
	}
	path := filepath.Join(t.TempDir(), "snapshot.yaml")
	require.NoError(t, os.WriteFile(path, all.Bytes(), 0o600))
	inv, err := inventory.ReadSnapshot(path)
	require.NoError(t, err)
	inv.Source = "fixture"
	sched, err := explain.ReadSchedulerState(bytes.NewReader(all.Bytes()))
	require.NoError(t, err)
	p, err := evaluator.LoadFS(policies.FS, "embedded")
	require.NoError(t, err)
	ev, err := evaluator.New(context.Background(), p, evaluator.Options{})
	require.NoError(t, err)
	rep, err := clusterreport.Build(context.Background(), inv, sched, clusterreport.Options{
		Options: explain.Options{Decider: ev, Model: ev.Model(), Revision: "fixture"},
	})
	require.NoError(t, err)
	return rep
}

// TestReportFixture: the counts match the fixture computed by hand.
//
// Free GPUs on healthy nodes: H100 256 allocatable − 194 used = 62, B200
// 128 − 24 = 104, MIG 1g.10gb 56 − 10 = 46: 212 idle. The blocked gangs
// that were admitted (ci-ceiling 2×8 per clique, llama-finetune 8×8 per
// block, vit-sweep-lr 2×4 on one node, rerank-distill 1×8 on one node) all
// need a node with 8 free GPUs, so every free GPU on a node with 1 to 7
// free is stranded: H100 6 (h100-b4-6), B200 24 (4 each on b200-b5-0..2 and
// b200-b6-0..2); MIG is wanted by no blocked gang, so none of it is. The
// two GB200 nodes (16 GPUs) are unhealthy: one by label, one by condition.
func TestReportFixture(t *testing.T) {
	rep := fixtureReport(t)
	assert.Equal(t, 212, rep.IdleGPUs)
	assert.Equal(t, 30, rep.StrandedGPUs)
	assert.Equal(t, 16, rep.UnhealthyGPUs)
	assert.Equal(t, 0, rep.UnavailableGPUs)
	assert.Equal(t, 7, rep.BlockedWorkloads)
	assert.Equal(t, 208, rep.BlockedGPUs)
	assert.Equal(t, map[string]int{"topology": 168, "quota": 16, "scheduler": 16, "priority": 8}, rep.BlockedBy)
	assert.Equal(t, "212 idle GPUs (30 stranded) while 7 workloads wanting 208 GPUs are blocked: by topology 168, quota 16, scheduler 16, priority 8", rep.Headline)

	capacity := map[string]clusterreport.CapacityRow{}
	for _, c := range rep.Capacity {
		capacity[c.Resource+" "+c.Product] = c
	}
	assert.Equal(t, clusterreport.CapacityRow{Resource: "nvidia.com/gpu", Product: "NVIDIA-H100-80GB-HBM3", Total: 256, Used: 194, Free: 62, Stranded: 6},
		capacity["nvidia.com/gpu NVIDIA-H100-80GB-HBM3"])
	assert.Equal(t, clusterreport.CapacityRow{Resource: "nvidia.com/gpu", Product: "NVIDIA-B200", Total: 128, Used: 24, Free: 104, Stranded: 24},
		capacity["nvidia.com/gpu NVIDIA-B200"])
	assert.Equal(t, clusterreport.CapacityRow{Resource: "nvidia.com/gpu", Product: "NVIDIA-GB200", Total: 16, Unhealthy: 16},
		capacity["nvidia.com/gpu NVIDIA-GB200"])

	rules := map[string]string{}
	for _, b := range rep.Blocked {
		rules[b.Workload] = b.Dimension + "/" + b.Rule
		assert.NotEmpty(t, b.Unblock, b.Workload)
	}
	assert.Equal(t, map[string]string{
		"Job llm/pretrain-13b":          "topology/TOPOLOGY_NEVER_FITS",
		"PyTorchJob llm/llama-finetune": "topology/TOPOLOGY_WAITS",
		"Job platform/ci-ceiling":       "quota/QUOTA_CEILING_BUSY",
		"Job llm/gb200-eval":            "topology/TOPOLOGY_NEVER_FITS",
		"Job product/rerank-distill":    "scheduler/QUEUE_MISSING",
		"Job vision/detr-urgent":        "priority/PRIORITY_NOT_ALLOWED",
		"Job vision/vit-sweep-lr":       "scheduler/QUEUE_CLOSED",
	}, rules)

	tenants := map[string]clusterreport.TenantRow{}
	for _, r := range rep.Tenants {
		tenants[r.Tenant+" "+r.Resource] = r
	}
	platform := tenants["platform nvidia.com/gpu"]
	assert.Equal(t, []int{8, 16, 2, 6, 1, 16}, []int{platform.Guaranteed, platform.Ceiling, platform.Used, platform.IdleInGuarantee, platform.PendingWorkloads, platform.PendingGPUs})
	assert.Equal(t, map[string]int{"quota/QUOTA_CEILING_BUSY": 16}, platform.BlockedBy)
	research := tenants["research nvidia.com/gpu"]
	assert.Equal(t, 5, research.PendingWorkloads, "rolled up from research-llm and research-vision")
	assert.Equal(t, 184, research.PendingGPUs)
}

// TestReportReservations: the reservations a shared ledger's TenantLedger
// holds are reported as reserved, rolled up the hierarchy, and are not idle
// guarantee; expired ones and gang claims hold nothing.
func TestReportReservations(t *testing.T) {
	ledger := `apiVersion: mandate.dev/v1alpha1
kind: TenantLedger
metadata: {name: helix}
spec:
  reservations: |
    /Pod/platform/notebook-bob platform N 4102444800 nvidia.com/gpu=3
    /Pod/platform/old platform N 1000 nvidia.com/gpu=5
    claim:/Pod/platform/x platform C 4102444800 owner=0b1c2d3e
`
	before, after := fixtureReport(t), fixtureReport(t, ledger)
	row := func(rep *clusterreport.Report, tenant string) clusterreport.TenantRow {
		for _, r := range rep.Tenants {
			if r.Tenant == tenant && r.Resource == "nvidia.com/gpu" {
				return r
			}
		}
		t.Fatalf("no nvidia.com/gpu row for %s", tenant)
		return clusterreport.TenantRow{}
	}
	for _, tenant := range []string{"platform", "helix"} {
		b, a := row(before, tenant), row(after, tenant)
		assert.Zero(t, b.Reserved, "%s without a ledger", tenant)
		assert.Equal(t, 3, a.Reserved, "%s: the unexpired reservation of 3, rolled up", tenant)
		assert.Equal(t, b.Used, a.Used, "%s: used is what pods hold", tenant)
		if b.IdleInGuarantee >= 3 {
			assert.Equal(t, b.IdleInGuarantee-3, a.IdleInGuarantee, "%s: reserved guarantee is not idle", tenant)
		}
	}
}

// TestReportPerProductQuota: where the model sets a quota per GPU product
// (tenant product: H100 120 guaranteed of 144, B200 8 of 32, within 128 of
// 160 for every product together), the report has a row per product
// beside the resource's, with the product's guarantee and ceiling and the
// GPUs of that product in use (its pods run on H100 nodes), in -o json
// too; a tenant without product quotas has none.
func TestReportPerProductQuota(t *testing.T) {
	rep := fixtureReport(t)
	var b bytes.Buffer
	require.NoError(t, clusterreport.WriteJSON(&b, rep))
	var out struct {
		Tenants []map[string]any `json:"tenants"`
	}
	require.NoError(t, json.Unmarshal(b.Bytes(), &out))
	rows := map[string][]float64{}
	for _, r := range out.Tenants {
		if r["tenant"] != "product" && r["tenant"] != "platform" {
			continue
		}
		product, _ := r["product"].(string)
		rows[fmt.Sprintf("%s %s %s", r["tenant"], r["resource"], product)] = []float64{
			r["guaranteed"].(float64), r["ceiling"].(float64), r["used"].(float64), r["idleInGuarantee"].(float64)}
	}
	assert.Equal(t, map[string][]float64{
		"product nvidia.com/gpu ":                      {128, 160, 112, 16},
		"product nvidia.com/gpu NVIDIA-B200":           {8, 32, 0, 8},
		"product nvidia.com/gpu NVIDIA-H100-80GB-HBM3": {120, 144, 112, 8},
		"product nvidia.com/mig-1g.10gb ":              {28, 56, 10, 18},
		"platform nvidia.com/gpu ":                     {8, 16, 2, 6},
	}, rows)

	var table bytes.Buffer
	require.NoError(t, clusterreport.WriteTable(&table, rep))
	assert.Contains(t, table.String(), "nvidia.com/gpu (NVIDIA-B200)")
}

// TestReportHolds: an admitted workload whose pods are not there yet (its
// operator has not made them) holds its GPUs for its whole life, as the
// replicas count it: reported as reserved, rolled up, until it finishes.
func TestReportHolds(t *testing.T) {
	job := `apiVersion: batch/v1
kind: Job
metadata:
  name: late-pods
  namespace: platform
  uid: 5e1f
  generation: 1
  annotations:
    mandate.dev/directives: '{"scheduler":"kai","queue":"platform","priorityClass":"build","preemptible":false,"gangMin":1}'
spec:
  parallelism: 1
  completions: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: registry.example/train:1
        resources: {limits: {nvidia.com/gpu: 2}}
`
	row := func(rep *clusterreport.Report, tenant string) clusterreport.TenantRow {
		for _, r := range rep.Tenants {
			if r.Tenant == tenant && r.Resource == "nvidia.com/gpu" {
				return r
			}
		}
		t.Fatalf("no nvidia.com/gpu row for %s", tenant)
		return clusterreport.TenantRow{}
	}
	held := fixtureReport(t, job)
	finished := fixtureReport(t, job+`status:
  conditions:
  - {type: Complete, status: "True"}
`)
	for _, tenant := range []string{"platform", "helix"} {
		assert.Equal(t, 2, row(held, tenant).Reserved, "%s: the Job's hold of 2, rolled up", tenant)
		assert.Zero(t, row(finished, tenant).Reserved, "%s: a finished Job holds nothing", tenant)
	}
}

// TestReportDRACluster: the example cluster as DRA publishes its GPUs,
// with no workload yet, is reported: its capacity per product is the
// allocatable cluster's, from the ResourceSlices' devices and their
// productName attribute.
func TestReportDRACluster(t *testing.T) {
	inv, err := inventory.ReadCluster("../examples/cluster-dra.yaml")
	require.NoError(t, err)
	p, err := evaluator.LoadFS(policies.FS, "embedded")
	require.NoError(t, err)
	ev, err := evaluator.New(context.Background(), p, evaluator.Options{})
	require.NoError(t, err)
	rep, err := clusterreport.Build(context.Background(), inv, nil, clusterreport.Options{
		Options: explain.Options{Decider: ev, Model: ev.Model(), Revision: "fixture"},
	})
	require.NoError(t, err)
	capacity := map[string]clusterreport.CapacityRow{}
	for _, c := range rep.Capacity {
		capacity[c.Resource+" "+c.Product] = c
	}
	assert.Equal(t, clusterreport.CapacityRow{Resource: "nvidia.com/gpu", Product: "NVIDIA-H100-80GB-HBM3", Total: 256, Free: 256},
		capacity["nvidia.com/gpu NVIDIA-H100-80GB-HBM3"])
	assert.Equal(t, clusterreport.CapacityRow{Resource: "nvidia.com/gpu", Product: "NVIDIA-B200", Total: 128, Free: 128},
		capacity["nvidia.com/gpu NVIDIA-B200"])
	assert.Equal(t, 0, rep.BlockedWorkloads)
}
