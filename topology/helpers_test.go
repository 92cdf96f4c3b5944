package topology_test

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/topology/topologytest"
)

// testLevels is a small zone / block / node topology.
var testLevels = []topology.Level{
	{Name: "zone", NodeLabel: "topology.kubernetes.io/zone"},
	{Name: "block", NodeLabel: "example.com/block"},
	{Name: "node", NodeLabel: "kubernetes.io/hostname"},
}

type nodeOpt func(*corev1.Node)

// gpuNode is a Ready node with gpus nvidia.com/gpu in zone z1, block b1,
// tainted nvidia.com/gpu:NoSchedule as GPU nodes usually are.
func gpuNode(name string, gpus int, opts ...nodeOpt) corev1.Node {
	n := corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"topology.kubernetes.io/zone": "z1",
			"example.com/block":           "b1",
			"nvidia.com/gpu.product":      "H100",
		}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("64"),
				"nvidia.com/gpu":   *resource.NewQuantity(int64(gpus), resource.DecimalSI),
			},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	for _, o := range opts {
		o(&n)
	}
	return n
}

func withLabels(kv map[string]string) nodeOpt {
	return func(n *corev1.Node) { maps.Copy(n.Labels, kv) }
}

func withoutLabel(k string) nodeOpt {
	return func(n *corev1.Node) { delete(n.Labels, k) }
}

func withAllocatable(name string, v int) nodeOpt {
	return func(n *corev1.Node) {
		n.Status.Allocatable[corev1.ResourceName(name)] = *resource.NewQuantity(int64(v), resource.DecimalSI)
	}
}

func withTaint(key string, effect corev1.TaintEffect) nodeOpt {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: effect}) }
}

func withCondition(typ corev1.NodeConditionType, status corev1.ConditionStatus) nodeOpt {
	return func(n *corev1.Node) {
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == typ {
				n.Status.Conditions[i].Status = status
				return
			}
		}
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: typ, Status: status})
	}
}

func withNoConditions(n *corev1.Node) { n.Status.Conditions = nil }

func cordoned(n *corev1.Node) { n.Spec.Unschedulable = true }

type podOpt func(*corev1.Pod)

// gpuPod is a Running pod bound to node with one container limited to gpus
// nvidia.com/gpu.
func gpuPod(name, node string, gpus int, opts ...podOpt) corev1.Pod {
	p := topologytest.GPUPod("team-a", name, int64(gpus), topologytest.OnNode(node), topologytest.InPhase(corev1.PodRunning))
	p.Spec.Containers[0].Name = "main"
	for _, o := range opts {
		o(p)
	}
	return *p
}

// container asks for n of res as a limit, or as a request when asRequest.
func container(name, res string, n int, asRequest bool) corev1.Container {
	q := corev1.ResourceList{corev1.ResourceName(res): *resource.NewQuantity(int64(n), resource.DecimalSI)}
	c := corev1.Container{Name: name}
	if asRequest {
		c.Resources.Requests = q
	} else {
		c.Resources.Limits = q
	}
	return c
}

func withPhase(phase corev1.PodPhase) podOpt {
	return func(p *corev1.Pod) { p.Status.Phase = phase }
}

func withContainers(cs ...corev1.Container) podOpt {
	return func(p *corev1.Pod) { p.Spec.Containers = cs }
}

func withInit(cs ...corev1.Container) podOpt {
	return func(p *corev1.Pod) { p.Spec.InitContainers = cs }
}

func sidecar(c corev1.Container) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}
