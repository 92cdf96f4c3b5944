package schedsync

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/scheduler/facts"
	"github.com/mandate-dev/mandate/workload"
)

// Volcano queue states (status.state).
const (
	volcanoOpen   = "Open"
	volcanoClosed = "Closed"
)

func init() {
	Register(Volcano, Sync{
		Render: func(s model.Model, c Cluster, o Options) ([]Object, error) {
			objs, err := volcanoObjects(s, c)
			return append(objs, volcanoConfigObject(o.VolcanoConfigMap, nested(s))), err
		},
		Holds: volcanoHolds,
		// Volcano closes a queue through its status, and deletes only a
		// closed one.
		Close: func(*unstructured.Unstructured, map[string]any) (map[string]any, error) {
			return map[string]any{"state": volcanoClosed}, nil
		},
	})
}

// volcanoHolds counts the PodGroups in a Volcano Queue and its child
// queues.
func volcanoHolds(ctx context.Context, list Lister, q *unstructured.Unstructured) (int, error) {
	name := q.GetName()
	return sumOf(
		func() (int, error) {
			return countOf(ctx, list, facts.Volcano.GroupKinds[0].GVK, func(u *unstructured.Unstructured) bool { return str(u, "spec", "queue") == name })
		},
		func() (int, error) {
			return countOf(ctx, list, VolcanoQueueKind.GVK, func(u *unstructured.Unstructured) bool { return str(u, "spec", "parent") == name })
		})
}

// volcanoObjects renders a Queue per tenant and the HyperNodes of the
// model's topology.
func volcanoObjects(s model.Model, c Cluster) ([]Object, error) {
	var out []Object
	for _, name := range s.TenantNames() {
		qs := s.Pools(name)
		guaranteed, ceiling := quotaTotals(qs)
		t := s.Tenants[name]
		o := newObject(VolcanoQueueKind, "", s.QueueName(name), map[string]string{workload.LabelTenant: name})
		spec := map[string]any{
			"capability":  resourceList(ceiling),
			"deserved":    resourceList(guaranteed),
			"guarantee":   map[string]any{"resource": resourceList(guaranteed)},
			"reclaimable": s.OverGuaranteeReclaimable(),
		}
		if t.Parent != "" {
			spec["parent"] = s.QueueName(t.Parent)
		}
		o.Object["spec"] = spec
		o.Status = map[string]any{"state": volcanoOpen}
		out = append(out, o)
	}
	return append(out, hyperNodes(s, c)...), nil
}

// hyperNodes renders a HyperNode for every domain of every level above the
// narrowest, built from the nodes' labels. Tiers count as the Volcano
// adapter's networkTopology.highestTierAllowed does: the narrowest level
// (the node) is tier 0, the next one up tier 1, and so on. A tier-1
// HyperNode selects its nodes by the labels of its whole path (so a node
// added to a known domain joins it); a higher one lists the HyperNodes
// below it, and any node whose labels stop at its level.
func hyperNodes(s model.Model, c Cluster) []Object {
	levels := s.Topology.Levels
	n := len(levels)
	if n < 2 {
		return nil
	}
	type domain struct {
		level    int
		path     []string
		children map[string]bool
		nodes    []string
	}
	domains := map[string]*domain{}
	var keys []string
	nodeNames := make([]string, 0, len(c.NodeLabels))
	for node := range c.NodeLabels {
		nodeNames = append(nodeNames, node)
	}
	sort.Strings(nodeNames)
	for _, node := range nodeNames {
		labels := c.NodeLabels[node]
		var path []string
		parent := ""
		for i := 0; i < n-1; i++ {
			v, ok := labels[levels[i].NodeLabel]
			if !ok || v == "" {
				break
			}
			path = append(path, v)
			key := pathKey(path)
			d, ok := domains[key]
			if !ok {
				d = &domain{level: i, path: append([]string(nil), path...), children: map[string]bool{}}
				domains[key] = d
				keys = append(keys, key)
			}
			if parent != "" {
				domains[parent].children[key] = true
			}
			parent = key
		}
		if parent != "" && domains[parent].level < n-2 {
			domains[parent].nodes = append(domains[parent].nodes, node)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := domains[keys[i]], domains[keys[j]]
		if a.level != b.level {
			return a.level > b.level // lowest tier first: members before their parents
		}
		return keys[i] < keys[j]
	})
	var out []Object
	for _, key := range keys {
		d := domains[key]
		o := newObject(HyperNodeKind, "", hyperNodeName(levels[d.level].Name, d.path), nil)
		var members []any
		if d.level == n-2 {
			match := map[string]any{}
			for i, v := range d.path {
				match[levels[i].NodeLabel] = v
			}
			members = append(members, map[string]any{"type": "Node",
				"selector": map[string]any{"labelMatch": map[string]any{"matchLabels": match}}})
		} else {
			children := make([]string, 0, len(d.children))
			for child := range d.children {
				cd := domains[child]
				children = append(children, hyperNodeName(levels[cd.level].Name, cd.path))
			}
			sort.Strings(children)
			for _, child := range children {
				members = append(members, map[string]any{"type": "HyperNode",
					"selector": map[string]any{"exactMatch": map[string]any{"name": child}}})
			}
			for _, node := range d.nodes {
				members = append(members, map[string]any{"type": "Node",
					"selector": map[string]any{"exactMatch": map[string]any{"name": node}}})
			}
		}
		o.Object["spec"] = map[string]any{
			"tier":     int64(n - 1 - d.level),
			"tierName": levels[d.level].Name,
			"members":  members,
		}
		out = append(out, o)
	}
	return out
}

func pathKey(path []string) string { return strings.Join(path, "\x00") }

// hyperNodeName names a domain's HyperNode "<level>-<value>-<hash of the
// path>": readable, and distinct for equal values under different parents.
func hyperNodeName(level string, path []string) string {
	sum := sha256.Sum256([]byte(pathKey(path)))
	base := dnsLabel(level + "-" + path[len(path)-1])
	if len(base) > 50 {
		base = base[:50]
	}
	return strings.Trim(base, "-") + "-" + hex.EncodeToString(sum[:])[:8]
}

// dnsLabel maps s onto the DNS-1123 label alphabet [a-z0-9-].
func dnsLabel(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			b[i] = '-'
		}
	}
	return string(b)
}
