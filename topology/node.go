package topology

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// missingValue stands for an ancestor level whose label a node lacks, inside
// a domain key. It cannot clash with a real value: a Kubernetes label value
// must begin and end with an alphanumeric character.
const missingValue = "_"

// keySeparator joins the label values of levels 0..i into a level-i domain
// key. Label values cannot contain it.
const keySeparator = "/"

// nodeInfo is what the model keeps of a Node: only what affects capacity.
type nodeInfo struct {
	// keys[i] is the node's domain at level i, "" when it is in none.
	keys []string
	// masks[i] has bit j set when keys[i] holds missingValue at level j.
	masks   []uint32
	product string
	// usable is false when the node counts as no capacity.
	usable bool
	// alloc is the allocatable count of each GPU resource, zeros left out.
	alloc map[string]int
	// pools are the Config's pools the node is in, sorted.
	pools []string
}

func (a *nodeInfo) equal(b *nodeInfo) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.product == b.product && a.usable == b.usable &&
		slices.Equal(a.keys, b.keys) && maps.Equal(a.alloc, b.alloc) && slices.Equal(a.pools, b.pools)
}

// withDevices is a's info with what the node's DRA ResourceSlices publish:
// their untainted devices add to its capacity, their product names it
// when its label does not. a is not changed.
func (a *nodeInfo) withDevices(d NodeDevices) *nodeInfo {
	if d.Empty() {
		return a
	}
	out := *a
	out.alloc = addDevices(a.alloc, d)
	if out.product == "" {
		out.product = d.Product
	}
	return &out
}

// rules decides which nodes count and where they sit; built once from a
// validated, defaulted Config.
type rules struct {
	levels              []Level
	productLabel        string
	unhealthyLabel      string
	unhealthyValues     map[string]bool
	unhealthyConditions map[corev1.NodeConditionType]bool
	toleratedTaints     map[string]bool
	gpuMemory           GPUMemory
	pools               map[string]PoolSelector
}

func newRules(cfg Config) *rules {
	r := &rules{
		levels:              cfg.Levels,
		productLabel:        cfg.ProductLabel,
		unhealthyLabel:      cfg.UnhealthyLabel,
		unhealthyValues:     make(map[string]bool, len(cfg.UnhealthyValues)),
		unhealthyConditions: make(map[corev1.NodeConditionType]bool, len(cfg.UnhealthyConditions)),
		toleratedTaints:     make(map[string]bool, len(cfg.ToleratedTaints)),
		gpuMemory:           cfg.GPUMemoryMiB,
		pools:               cfg.Pools,
	}
	for _, v := range cfg.UnhealthyValues {
		r.unhealthyValues[v] = true
	}
	for _, c := range cfg.UnhealthyConditions {
		r.unhealthyConditions[corev1.NodeConditionType(c)] = true
	}
	for _, t := range cfg.ToleratedTaints {
		r.toleratedTaints[t] = true
	}
	return r
}

// nodeInfo extracts what the model keeps of node.
func (r *rules) nodeInfo(node *corev1.Node) *nodeInfo {
	keys, masks := domainKeys(r.levels, node.Name, node.Labels)
	return &nodeInfo{
		keys:    keys,
		masks:   masks,
		product: node.Labels[r.productLabel],
		usable:  r.usable(node),
		alloc:   gpuAllocatable(node),
		pools:   r.poolsOf(node.Labels),
	}
}

// poolsOf lists the pools a node with these labels is in, sorted; nil for
// none.
func (r *rules) poolsOf(labels map[string]string) []string {
	var out []string
	for name, sel := range r.pools {
		if sel.Matches(labels) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// usable reports whether the node may take new pods: not cordoned, no
// untolerated NoSchedule/NoExecute taint, not NotReady, not marked unhealthy
// by label or condition. A node without a Ready condition is taken as ready
// so that hand-written fixtures need not spell one out.
func (r *rules) usable(node *corev1.Node) bool {
	if node.Spec.Unschedulable {
		return false
	}
	for _, t := range node.Spec.Taints {
		if (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute) &&
			!r.toleratedTaints[t.Key] {
			return false
		}
	}
	if r.unhealthyLabel != "" {
		if v, ok := node.Labels[r.unhealthyLabel]; ok && r.unhealthyValue(v) {
			return false
		}
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			return false
		}
		if r.unhealthyConditions[c.Type] && c.Status == corev1.ConditionTrue {
			return false
		}
	}
	return true
}

// unhealthy reports whether the node is marked unhealthy by the configured
// label or a configured condition (cordons, taints and readiness aside).
func (r *rules) unhealthy(node *corev1.Node) bool {
	if r.unhealthyLabel != "" {
		if v, ok := node.Labels[r.unhealthyLabel]; ok && r.unhealthyValue(v) {
			return true
		}
	}
	for _, c := range node.Status.Conditions {
		if r.unhealthyConditions[c.Type] && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// unhealthyValue reports whether v, the value of the unhealthy label, marks
// the node unhealthy: one of the configured values, or when none are
// configured anything but "false".
func (r *rules) unhealthyValue(v string) bool {
	if len(r.unhealthyValues) > 0 {
		return r.unhealthyValues[v]
	}
	return v != "false"
}

// levelValue is the node's value for level l, false when it has none. An
// empty value counts as none. kubernetes.io/hostname falls back to the node
// name, since every node has one.
func levelValue(l Level, nodeName string, labels map[string]string) (string, bool) {
	if v := labels[l.NodeLabel]; v != "" {
		return v, true
	}
	if l.NodeLabel == corev1.LabelHostname && nodeName != "" {
		return nodeName, true
	}
	return "", false
}

// domainKeys returns the node's domain key at each level: the label values of
// levels 0..i joined by "/", so a leaf block named the same under two spines
// stays two domains. A node without the label of level i is in no domain of
// that level (key ""); it still counts at the levels above and in the
// cluster. A missing ancestor value is written "_" in the key, so a node with
// no zone label but block b1 is in block "_/b1". masks[i] records which
// ancestors of keys[i] are missing.
func domainKeys(levels []Level, nodeName string, labels map[string]string) (keys []string, masks []uint32) {
	keys = make([]string, len(levels))
	masks = make([]uint32, len(levels))
	var path strings.Builder
	var missing uint32
	for i, l := range levels {
		v, ok := levelValue(l, nodeName, labels)
		if i > 0 {
			path.WriteString(keySeparator)
		}
		if ok {
			path.WriteString(v)
			keys[i] = path.String()
			masks[i] = missing
		} else {
			path.WriteString(missingValue)
			missing |= 1 << i
		}
	}
	return keys, masks
}
