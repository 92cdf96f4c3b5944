package ledger

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/mandate-dev/mandate/topology/topologytest"
	"github.com/mandate-dev/mandate/workload"
)

const (
	h100 = topologytest.ProductH100
	b200 = topologytest.ProductB200
)

func productPod(namespace, name, class string, gpus int64, product, node string) *corev1.Pod {
	p := topologytest.GPUPod(namespace, name, gpus, topologytest.WithPriorityClass(class), topologytest.InPhase(corev1.PodRunning), topologytest.OnNode(node))
	if product != "" {
		p.Spec.NodeSelector = map[string]string{workload.LabelProduct: product}
	}
	return p
}

func TestUsageIsKeyedByResourceAndProduct(t *testing.T) {
	gpu := "nvidia.com/gpu"
	l := New(testConfig)
	l.UpsertNamespace(ns("p", "product"))
	// Asked for: counted against the product it names, bound or not.
	l.UpsertPod(productPod("p", "h", "build", 8, h100, ""))
	l.UpsertPod(productPod("p", "b", "train", 4, b200, ""))
	// Asked for none: counted against its node's product once bound, and
	// against the resource only while pending.
	l.UpsertPod(productPod("p", "any-bound", "build", 2, "", "node-b"))
	l.UpsertPod(productPod("p", "any-pending", "build", 1, "", ""))
	got := l.Usage("product")["product"]
	require.Equal(t, map[string]Usage{
		gpu:                   {Total: 15, NonPreemptible: 11},
		ProductKey(gpu, h100): {Total: 8, NonPreemptible: 8},
		ProductKey(gpu, b200): {Total: 4},
	}, got, "node-b's product is not known yet")

	l.SetNodeProduct("node-b", b200)
	got = l.Usage("product")["org"]
	require.Equal(t, Usage{Total: 6, NonPreemptible: 2}, got[ProductKey(gpu, b200)], "the bound pod counts against its node's product")
	require.Equal(t, Usage{Total: 15, NonPreemptible: 11}, got[gpu], "the resource total is unchanged")

	l.SetNodeProduct("node-b", h100)
	got = l.Usage("product")["product"]
	require.Equal(t, Usage{Total: 4}, got[ProductKey(gpu, b200)], "relabelled node: its pods move")
	require.Equal(t, Usage{Total: 10, NonPreemptible: 10}, got[ProductKey(gpu, h100)])

	l.DeletePod("p", "any-bound")
	l.SetNodeProduct("node-b", "")
	got = l.Usage("product")["product"]
	require.Equal(t, Usage{Total: 8, NonPreemptible: 8}, got[ProductKey(gpu, h100)])
	require.Equal(t, Usage{Total: 13, NonPreemptible: 9}, got[gpu])
}

func TestProductReservationIsConsumedByItsPods(t *testing.T) {
	gpu := "nvidia.com/gpu"
	l := New(testConfig)
	l.UpsertNamespace(ns("p", "product"))
	key := WorkloadKey("v1", "Pod", "p", "h")
	l.Reserve(key, "product", WithProduct(map[string]int{gpu: 8}, h100), false, time.Minute)
	got := l.Usage("product")["product"]
	require.Equal(t, Usage{Total: 8, NonPreemptible: 8}, got[ProductKey(gpu, h100)], "reserved against the product")
	require.Equal(t, Usage{Total: 8, NonPreemptible: 8}, got[gpu], "and against the resource")

	l.UpsertPod(productPod("p", "h", "build", 8, h100, "node-h"))
	got = l.Usage("product")["product"]
	require.Equal(t, Usage{Total: 8, NonPreemptible: 8}, got[ProductKey(gpu, h100)], "the pod consumes its reservation: counted once")
	require.Equal(t, Usage{Total: 8, NonPreemptible: 8}, got[gpu])
	require.Zero(t, l.Reservations())
}

func TestWithProduct(t *testing.T) {
	require.Equal(t, map[string]int{"r": 2}, WithProduct(map[string]int{"r": 2}, ""))
	require.Equal(t, map[string]int{"r": 2, "r@P": 2}, WithProduct(map[string]int{"r": 2}, "P"))
	require.Equal(t, map[string]int{"r": 2, "r@P": 2}, WithProduct(map[string]int{"r": 2, "r@P": 0}, "P"))
}
