package explain

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

// ErrBadTarget is wrapped when the workload asked about cannot be found or
// is not governed: bad input, not a blocked workload.
var ErrBadTarget = errors.New("no such workload")

// holders are the GPU-holding workloads of each tenant, read from the
// inventory's running pods, and the unhealthy capacity, for the changes
// that would unblock a workload.
type holders struct {
	byTenant map[string][]holder
	model    model.Model
	// unhealthy are the nodes marked unhealthy, by name; tainted the
	// nodes some of whose DRA devices are tainted, by name.
	unhealthy []sick
	tainted   []taintedNode
	// pods are the GPU-holding pods, and domains each node's domain keys.
	pods    []podHold
	domains map[string][]string
}

// podHold is one running pod's GPUs and whose they are.
type podHold struct {
	holder
	node string
}

// sick is an unhealthy node: its GPU product and GPUs.
type sick struct {
	name    string
	product string
	gpus    map[string]int
}

// taintedNode is a node some of whose DRA devices taints keep from new
// claims: how many of how many, of which resource, and the taints.
type taintedNode struct {
	name    string
	product string
	devices topology.NodeDevices
}

type holder struct {
	name        string
	tenant      string
	gpus        int
	preemptible bool
}

func holdersOf(inv *inventory.Inventory, m model.Model) holders {
	h := holders{byTenant: map[string][]holder{}, model: m, domains: map[string][]string{}}
	tenantOf := map[string]string{}
	for _, ns := range inv.Namespaces {
		tenantOf[ns.GetName()] = ns.GetLabels()[workload.LabelTenant]
	}
	preemptible := m.PreemptibleClasses()
	sums := map[string]*holder{}
	counting := m.Counting()
	// audit has already refused a malformed pod and claim
	claims, _ := inv.ClaimLookup()
	claims = topology.ClaimsOnce(claims)
	_ = inv.EachPod(func(pod *corev1.Pod) error {
		if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			return nil
		}
		gpus := 0
		for _, n := range topology.PodUsage(pod, workload.PodProduct(&pod.Spec), counting, claims).Whole() {
			gpus += n
		}
		if gpus == 0 {
			return nil
		}
		name := "Pod " + pod.Namespace + "/" + pod.Name
		if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
			name = ref.Kind + " " + pod.Namespace + "/" + ref.Name
		}
		s, ok := sums[name]
		if !ok {
			s = &holder{name: name, tenant: tenantOf[pod.Namespace], preemptible: preemptible[pod.Spec.PriorityClassName]}
			sums[name] = s
		}
		s.gpus += gpus
		h.pods = append(h.pods, podHold{holder: holder{name: name, tenant: s.tenant, gpus: gpus, preemptible: s.preemptible}, node: pod.Spec.NodeName})
		return nil
	})
	for _, s := range sums {
		h.byTenant[s.tenant] = append(h.byTenant[s.tenant], *s)
	}
	for _, list := range h.byTenant {
		sort.Slice(list, func(i, j int) bool {
			if list[i].gpus != list[j].gpus {
				return list[i].gpus > list[j].gpus
			}
			return list[i].name < list[j].name
		})
	}
	cfg := m.TopologyConfig()
	for _, obj := range inv.Nodes {
		node := &corev1.Node{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, node); err != nil {
			continue
		}
		v := topology.ViewNode(cfg, node)
		h.domains[node.Name] = v.Keys
		if v.Unhealthy {
			h.unhealthy = append(h.unhealthy, sick{name: node.Name, product: v.Product, gpus: topology.NodeGPUs(node)})
		}
	}
	sort.Slice(h.unhealthy, func(i, j int) bool { return h.unhealthy[i].name < h.unhealthy[j].name })
	for name, d := range nodeDevices(inv, m) {
		if len(d.Tainted) > 0 {
			h.tainted = append(h.tainted, taintedNode{name: name, product: d.Product, devices: d})
		}
	}
	sort.Slice(h.tainted, func(i, j int) bool { return h.tainted[i].name < h.tainted[j].name })
	return h
}

// nodeDevices is what the DRA ResourceSlices of inv publish on each node,
// counted as the cluster state counts them under m; none when inv holds
// no slice.
func nodeDevices(inv *inventory.Inventory, m model.Model) map[string]topology.NodeDevices {
	if len(inv.Devices) == 0 {
		return nil
	}
	state, err := cluster.New(m)
	if err != nil {
		return nil // the decision itself has failed on this model
	}
	for _, obj := range inv.Devices {
		_ = state.Add(obj) // audit has already refused a malformed one
	}
	return state.NodeDevices()
}

// under lists the holders of tenant and every tenant below it, biggest
// first.
func (h holders) under(tenant string) []holder {
	var out []holder
	for t, list := range h.byTenant {
		if slices.Contains(h.model.Chain(t), tenant) {
			out = append(out, list...)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].gpus != out[j].gpus {
			return out[i].gpus > out[j].gpus
		}
		return out[i].name < out[j].name
	})
	return out
}

// in lists the holders of GPUs on the nodes of domain, biggest first.
func (h holders) in(domain string) []holder {
	sums := map[string]*holder{}
	var order []string
	for _, p := range h.pods {
		if !slices.Contains(h.domains[p.node], domain) {
			continue
		}
		s, ok := sums[p.name]
		if !ok {
			c := p.holder
			c.gpus = 0
			s = &c
			sums[p.name] = s
			order = append(order, p.name)
		}
		s.gpus += p.gpus
	}
	out := make([]holder, 0, len(order))
	for _, n := range order {
		out = append(out, *sums[n])
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].gpus != out[j].gpus {
			return out[i].gpus > out[j].gpus
		}
		return out[i].name < out[j].name
	})
	return out
}

// describe names at most three holders.
func describe(list []holder) string {
	var parts []string
	for i, x := range list {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(list)-3))
			break
		}
		p := ""
		if x.preemptible {
			p = ", preemptible"
		}
		parts = append(parts, fmt.Sprintf("%s of %s holds %d%s", x.name, x.tenant, x.gpus, p))
	}
	return strings.Join(parts, "; ")
}

// classes names priority classes with their values: "train (50), build (100)".
func (h holders) classes(names []string) string {
	parts := make([]string, len(names))
	for i, c := range names {
		parts[i] = fmt.Sprintf("%s (%d)", c, h.model.Priorities[c].Value)
	}
	return strings.Join(parts, ", ")
}

// what names the GPUs a quota reason counts: the resource, after the
// product when the quota is a product's ("NVIDIA-B200 nvidia.com/gpu").
func what(v evaluator.Violation) string {
	if v.Product != "" {
		return v.Product + " " + v.Resource
	}
	return v.Resource
}

// blockOf turns a violation or a waiting reason into a block with its
// dimension's limit and current value and the change that would unblock
// it, from the reason's facts (never its message, which is only shown).
func blockOf(v evaluator.Violation, limits map[string]evaluator.Explanation, e *Explanation, h holders) Block {
	x := limits[string(v.Dimension)]
	b := Block{Dimension: string(v.Dimension), Code: v.Code, Message: v.Message, Limit: x.Limit, Current: x.Current}
	switch v.Code {
	case "QUOTA_CEILING_BUSY":
		b.Unblock = "release GPUs of the tenant or raise its ceiling in the authority model"
		if v.Tenant == "" {
			break // a rule of the policy's own, without the facts
		}
		short := v.Current + v.Needs - v.Limit
		b.Limit = fmt.Sprintf("tenant %s ceiling %d %s", v.Tenant, v.Limit, what(v))
		b.Current = fmt.Sprintf("%d in use", v.Current)
		b.Unblock = fmt.Sprintf("release %d %s of tenant %s, or raise its ceiling to %d", short, what(v), v.Tenant, v.Limit+short)
		if list := h.under(v.Tenant); len(list) > 0 {
			b.Unblock += " (" + describe(list) + ")"
		}
	case "QUOTA_EXCEEDS_CEILING":
		b.Unblock = "ask for fewer GPUs, or change the tenant's quota in the authority model"
		if v.Tenant != "" {
			b.Unblock = fmt.Sprintf("ask for at most %d or have the ceiling of %s raised", v.Limit, v.Tenant)
		}
	case "QUOTA_NO_RESOURCE":
		b.Unblock = "ask for a quota or request a GPU resource it has"
	case "QUOTA_OVER_GUARANTEE":
		b.Unblock = "ask for fewer GPUs, or change the tenant's quota in the authority model"
		if len(v.Classes) > 0 {
			b.Unblock = "use a preemptible class (" + h.classes(v.Classes) + ")"
		}
	case "PRIORITY_NOT_ALLOWED", "PRIORITY_UNKNOWN", "PRIORITY_NO_DEFAULT":
		b.Unblock = "use an allowed priority class (" + h.classes(v.Classes) + "), or allow this one for the tenant in the authority model"
	case "TENANT_MISSING", "TENANT_UNKNOWN":
		b.Unblock = fmt.Sprintf("label namespace %s with %s naming a tenant of the authority model", e.Workload.Namespace, workload.LabelTenant)
	case "TOPOLOGY_NEVER_FITS":
		switch {
		case v.Level == "":
			b.Unblock = "it can never run as asked: ask for fewer pods or GPUs per pod"
		case v.Limit > 0:
			b.Unblock = fmt.Sprintf("ask for at most %d pods or fewer GPUs per pod", v.Limit)
		default: // no healthy node offers what each pod needs
			b.Unblock = "ask for another GPU product or fewer GPUs per pod"
		}
		if v.Pool != "" {
			b.Unblock += fmt.Sprintf(", or widen pool %s, to which the tenant's placement confines it, in the authority model", v.Pool)
		}
		b.Unblock += h.repair(v)
	case "TOPOLOGY_WAITS":
		b.Unblock = "free GPUs within one domain of the required level (finish or preempt work there)"
		if v.Domain != "" {
			if list := h.in(v.Domain); len(list) > 0 {
				b.Unblock = fmt.Sprintf("free GPUs in %s, the roomiest: %s", v.Domain, describe(list))
			}
		}
		b.Unblock += h.repair(v)
	case "PREEMPTION_SELF_EXEMPT":
		b.Unblock = "remove the key (only the model grants exemptions)"
	case "SCHEDULER_KEY_OVERRIDDEN":
		b.Unblock = "change what the rule " + v.Code + " objects to"
		if v.Limit > 0 { // a gang minimum
			b.Unblock = "declare the minimum with mandate.dev/min-available"
		}
	default:
		b.Unblock = "change what the rule " + v.Code + " objects to"
	}
	return b
}

// repair suggests repairing the unhealthy nodes that could take the
// workload: those of the GPU product it asks for or of none; of any product
// when it names none and no domain could take it at all. "" when there are
// none.
func (h holders) repair(v evaluator.Violation) string {
	var names []string
	gpus := map[string]int{}
	anyProduct := v.Product == "" && v.Domain == ""
	for _, n := range h.unhealthy {
		if n.product != "" && n.product != v.Product && !anyProduct {
			continue
		}
		names = append(names, n.name)
		for r, g := range n.gpus {
			gpus[r] += g
		}
	}
	out := ""
	if len(names) > 0 {
		var parts []string
		for r, g := range gpus {
			parts = append(parts, fmt.Sprintf("%d %s", g, r))
		}
		sort.Strings(parts)
		out = fmt.Sprintf("; or repair the unhealthy nodes %s (%s out of the fit)", strings.Join(names, ", "), strings.Join(parts, ", "))
	}
	var tainted []string
	for _, n := range h.tainted {
		if n.product != "" && n.product != v.Product && !anyProduct {
			continue
		}
		for _, r := range slices.Sorted(maps.Keys(n.devices.Tainted)) {
			bad := n.devices.Tainted[r]
			tainted = append(tainted, fmt.Sprintf("%d of %d %s on node %s are tainted (%s)", bad, bad+n.devices.GPUs[r], r, n.name, strings.Join(n.devices.Taints, ", ")))
		}
	}
	if len(tainted) > 0 {
		out += "; or clear the DRA device taints: " + strings.Join(tainted, "; ")
	}
	return out
}
