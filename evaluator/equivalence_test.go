package evaluator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

var updateDecisions = flag.Bool("update", false, "rewrite testdata/decisions.golden.json from the current policies")

// decisionsGolden holds what the default policies decided, and explained,
// for every generated variant (decisionVariants) before the work per
// decision was cut (issue 25): a change made for speed must decide every
// one of them exactly as before. Rewrite it (-update) only for a change
// that means to decide differently, and say so in its commit.
const decisionsGolden = "testdata/decisions.golden.json"

// decidedVariant is one variant's decision, without what differs per
// evaluation (its id).
type decidedVariant struct {
	Name     string             `json:"name"`
	Decision evaluator.Decision `json:"decision"`
	Relied   []ledger.Limit     `json:"relied"`
}

// TestDecisionsMatchGolden decides the generated variants with and without
// explanations (two prepared queries) and compares both with the golden.
func TestDecisionsMatchGolden(t *testing.T) {
	ev := defaultEvaluator(t)
	snaps := map[string]*topology.Snapshot{
		"none":  nil,
		"block": fixture(t),
		"full":  cliqueSnapshot(t, [4]string{"z", "s", "b", "c"}, []string{"n1", "n2", "n3", "n4"}, []int{8, 8, 8, 4}),
	}
	var got []decidedVariant
	for _, v := range decisionVariants() {
		in := v.in
		in.Cluster = snaps[v.cluster]
		d, err := ev.Decide(context.Background(), in)
		require.NoError(t, err, v.name)
		in.Explain = true
		explained, err := ev.Decide(context.Background(), in)
		require.NoError(t, err, v.name)
		require.NotEmpty(t, explained.Explanations, v.name)
		d.Explanations = explained.Explanations
		d.ID, explained.ID = "", ""
		require.Equal(t, d, explained, "%s: the decision with explanations decides the same", v.name)
		got = append(got, decidedVariant{Name: v.name, Decision: d, Relied: d.Relied})
	}
	// One variant a line, so that a difference reads as a diff of lines.
	var buf bytes.Buffer
	buf.WriteString("[\n")
	for i, g := range got {
		line, err := json.Marshal(g)
		require.NoError(t, err)
		buf.Write(line)
		if i < len(got)-1 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
	}
	buf.WriteString("]\n")
	if *updateDecisions {
		require.NoError(t, os.WriteFile(filepath.FromSlash(decisionsGolden), buf.Bytes(), 0o644))
	}
	want, err := os.ReadFile(filepath.FromSlash(decisionsGolden))
	require.NoError(t, err)
	var wantList, gotList []decidedVariant
	require.NoError(t, json.Unmarshal(want, &wantList))
	require.NoError(t, json.Unmarshal(buf.Bytes(), &gotList))
	require.Len(t, gotList, len(wantList))
	for i := range wantList {
		require.Equal(t, wantList[i], gotList[i], "variant %s decides as before", wantList[i].Name)
	}
}

// variant is one generated decision input and the cluster it is placed on.
type variant struct {
	name    string
	in      evaluator.Input
	cluster string
}

// decisionVariants crosses the default model's tenants (and a namespace
// with an unknown or no tenant) with workload classes, priority classes,
// GPU resources and products, gang shapes, usage levels, topology asks,
// the user's scheduler keys and clusters; a stride through the product
// keeps three hundred that still vary every dimension.
func decisionVariants() []variant {
	tenants := []string{"helix", "research", "research-llm", "research-vision", "product", "platform", "ghost", ""}
	classes := []workload.Class{workload.ClassTraining, workload.ClassInference, workload.ClassInteractive, workload.ClassBatch}
	priorities := []string{"", "train", "build", "inference", "bogus"}
	resources := [][2]string{{"nvidia.com/gpu", ""}, {"nvidia.com/gpu", "NVIDIA-H100-80GB-HBM3"}, {"nvidia.com/gpu", "NVIDIA-B200"}, {"nvidia.com/mig-1g.10gb", ""}, {"", ""}}
	shapes := [][3]int{{1, 1, 0}, {2, 8, 0}, {3, 8, 0}, {8, 8, 2}, {64, 8, 0}, {1, 0, 0}}
	usages := []int{0, 60, 10000}
	topologies := []workload.TopologyRequest{{}, {Required: "clique"}, {Preferred: "node"}, {Required: "rack"}, {RequiredNodeLabel: "nvidia.com/gpu.clique"}}
	yes, no := true, false
	keys := []func(*workload.Workload){
		func(*workload.Workload) {},
		func(w *workload.Workload) {
			w.SchedulerKeys = []workload.SchedulerKey{{Key: "kai.scheduler/queue", Asks: "queue", Value: "elsewhere"}, {Key: "kai.scheduler/batch-min-member", Asks: "gangMin", Value: "1"}}
		},
		func(w *workload.Workload) {
			w.RequestedPreemptible, w.RequestedPreemptibleBy = &no, "volcano.sh/preemptable=false"
		},
		func(w *workload.Workload) {
			w.RequestedPreemptible, w.RequestedPreemptibleBy = &yes, "volcano.sh/preemptable=true"
		},
	}
	clusters := []string{"none", "block", "full"}
	dims := []int{len(tenants), len(classes), len(priorities), len(resources), len(shapes), len(usages), len(topologies), len(keys), len(clusters)}
	total := 1
	for _, d := range dims {
		total *= d
	}
	var out []variant
	// A stride coprime with every dimension's size visits each value of
	// each dimension evenly.
	for i, n := 0, 0; n < 300; i, n = i+7919, n+1 {
		k := i % total
		idx := make([]int, len(dims))
		for j, d := range dims {
			idx[j], k = k%d, k/d
		}
		tenant := tenants[idx[0]]
		res, shape := resources[idx[3]], shapes[idx[4]]
		in := input(tenant, shape[0], shape[1], nil)
		w := &in.Workload
		w.Name = fmt.Sprintf("v%d", n)
		w.Class, w.PriorityClass = classes[idx[1]], priorities[idx[2]]
		w.GPUResource, w.GPUProduct = res[0], res[1]
		if res[0] == "" {
			w.GPUsPerPod, w.TotalGPUs = 0, 0
		}
		w.MinPods = shape[2]
		w.Roles = []workload.Role{{Name: "worker", Replicas: shape[0], GPUsPerPod: w.GPUsPerPod}}
		w.Topology = topologies[idx[6]]
		keys[idx[7]](w)
		if used := usages[idx[5]]; used > 0 && tenant != "" {
			in.Usage = map[string]map[string]ledger.Usage{}
			for _, t := range []string{tenant, "research", "helix"} {
				in.Usage[t] = map[string]ledger.Usage{
					"nvidia.com/gpu":                       {Total: used, NonPreemptible: used / 2},
					"nvidia.com/gpu@NVIDIA-H100-80GB-HBM3": {Total: used / 2, NonPreemptible: used / 4},
					"nvidia.com/mig-1g.10gb":               {Total: used / 3, NonPreemptible: used / 3},
				}
			}
		}
		out = append(out, variant{
			name:    fmt.Sprintf("%d %s/%s/%s/%s %dx%d min %d used %d %+v keys %d %s", n, tenant, w.Class, w.PriorityClass, res, shape[0], shape[1], shape[2], usages[idx[5]], w.Topology, idx[7], clusters[idx[8]]),
			in:      in,
			cluster: clusters[idx[8]],
		})
	}
	return out
}
