package explain

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mandate-dev/mandate/audit"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/topology"
)

// ErrBadTarget is wrapped when the workload asked about cannot be found or
// is not governed: bad input, not a blocked workload.
var ErrBadTarget = errors.New("no such workload")

// busyCeiling reads QUOTA_CEILING_BUSY's message.
var busyCeiling = regexp.MustCompile(`tenant (\S+) uses (\d+) of its (\d+) (\S+) ceiling; this workload needs (\d+) and waits in the queue until (\d+) more are released`)

// holders are the GPU-holding workloads of each tenant, read from the
// inventory's running pods, and the unhealthy capacity, for the changes
// that would unblock a workload.
type holders struct {
	byTenant map[string][]holder
	parents  map[string]string
	// unhealthy GPUs by resource, and the nodes.
	unhealthy      map[string]int
	unhealthyNodes []string
}

type holder struct {
	name        string
	tenant      string
	gpus        int
	preemptible bool
}

func holdersOf(inv *audit.Inventory, m model.Model) holders {
	h := holders{byTenant: map[string][]holder{}, parents: m.Parents(), unhealthy: map[string]int{}}
	tenantOf := map[string]string{}
	for _, ns := range inv.Namespaces {
		tenantOf[ns.GetName()] = ns.GetLabels()["mandate.dev/tenant"]
	}
	preemptible := m.PreemptibleClasses()
	sums := map[string]*holder{}
	for _, obj := range inv.Pods {
		pod := &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, pod); err != nil {
			continue // audit has already refused a malformed pod
		}
		if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		gpus := 0
		for _, n := range topology.PodGPURequests(pod) {
			gpus += n
		}
		if gpus == 0 {
			continue
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
	}
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
		if !topology.ViewNode(cfg, node).Unhealthy {
			continue
		}
		for r, n := range topology.NodeGPUs(node) {
			h.unhealthy[r] += n
		}
		h.unhealthyNodes = append(h.unhealthyNodes, node.Name)
	}
	sort.Strings(h.unhealthyNodes)
	return h
}

// under lists the holders of tenant and every tenant below it, biggest
// first.
func (h holders) under(tenant string) []holder {
	var out []holder
	for t, list := range h.byTenant {
		for a, depth := t, 0; a != "" && depth < model.MaxDepth; a, depth = h.parents[a], depth+1 {
			if a == tenant {
				out = append(out, list...)
				break
			}
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

// blockOf turns a violation into a block with its dimension's limit and
// current value and the change that would unblock it.
func blockOf(v evaluator.Violation, limits map[string]evaluator.Explanation, e *Explanation, h holders) Block {
	x := limits[string(v.Dimension)]
	b := Block{Dimension: string(v.Dimension), Code: v.Code, Message: v.Message, Limit: x.Limit, Current: x.Current}
	switch v.Code {
	case "QUOTA_CEILING_BUSY":
		b.Unblock = "release GPUs of the tenant or raise its ceiling in the authority model"
		if m := busyCeiling.FindStringSubmatch(v.Message); m != nil {
			tenant, used, ceiling, resource, short := m[1], m[2], m[3], m[4], m[6]
			c, _ := strconv.Atoi(ceiling)
			s, _ := strconv.Atoi(short)
			b.Limit = fmt.Sprintf("tenant %s ceiling %s %s", tenant, ceiling, resource)
			b.Current = fmt.Sprintf("%s in use", used)
			b.Unblock = fmt.Sprintf("release %s %s of tenant %s, or raise its ceiling to %d", short, resource, tenant, c+s)
			if list := h.under(tenant); len(list) > 0 {
				b.Unblock += " (" + describe(list) + ")"
			}
		}
	case "QUOTA_EXCEEDS_CEILING", "QUOTA_NO_RESOURCE", "QUOTA_OVER_GUARANTEE":
		b.Unblock = suggestion(v.Message, "ask for fewer GPUs, or change the tenant's quota in the authority model")
	case "PRIORITY_NOT_ALLOWED", "PRIORITY_UNKNOWN", "PRIORITY_NO_DEFAULT":
		b.Unblock = "use an allowed priority class (" + strings.TrimPrefix(x.Limit, "allowed: ") + "), or allow this one for the tenant in the authority model"
	case "TENANT_MISSING", "TENANT_UNKNOWN":
		b.Unblock = fmt.Sprintf("label namespace %s with mandate.dev/tenant naming a tenant of the authority model", e.Workload.Namespace)
	case "TOPOLOGY_NEVER_FITS":
		b.Unblock = suggestion(v.Message, "it can never run as asked: ask for fewer pods or GPUs per pod")
	case "TOPOLOGY_WAITS":
		b.Unblock = "free GPUs within one domain of the required level (finish or preempt work there)"
		if x.Current != "" {
			b.Unblock += "; now " + x.Current
		}
		if len(h.unhealthyNodes) > 0 {
			var parts []string
			for r, n := range h.unhealthy {
				parts = append(parts, fmt.Sprintf("%d %s", n, r))
			}
			sort.Strings(parts)
			b.Unblock += fmt.Sprintf("; or repair the unhealthy nodes %s (%s out of the fit)",
				strings.Join(h.unhealthyNodes, ", "), strings.Join(parts, ", "))
		}
	default:
		b.Unblock = suggestion(v.Message, "change what the rule "+v.Code+" objects to")
	}
	return b
}

// suggestion is the message's own advice (after its last "; "), or def.
func suggestion(msg, def string) string {
	if i := strings.LastIndex(msg, "; "); i >= 0 {
		return msg[i+2:]
	}
	return def
}
