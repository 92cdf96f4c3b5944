package slurm

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/mandate-dev/mandate/model"
)

// The files Sync writes into Slurm's configuration directory. slurm.conf
// includes the partitions (`Include mandate-partitions.conf`) and names
// TopologyPlugin=topology/tree.
const (
	TopologyFile   = "topology.conf"
	PartitionsFile = "mandate-partitions.conf"
)

// Header starts every file Sync writes; a file without it is a hand-made
// one and is never overwritten.
const Header = "# Written by mandate sync --target slurm from the authority model. Do not edit: the next sync overwrites it.\n"

func renderFiles(m model.Model, nodes Nodes, o Options) ([]File, error) {
	topo, err := topologyConf(m, nodes)
	if err != nil {
		return nil, err
	}
	return []File{
		{Name: PartitionsFile, Content: Header + partitionsConf(m, nodes, o.ProductLabel)},
		{Name: TopologyFile, Content: Header + topo},
	}, nil
}

// partitionsConf is one partition per GPU product, named by its gres type,
// holding the nodes of that product, and one per pool of the model's
// placement rules (topology.pools), named pool-<pool>, holding the pool's
// nodes with AllowAccounts naming the tenants confined to it (their
// accounts; descendants that inherit the pool are listed too). The
// tenants a pool confines may run nowhere else: the product partitions
// deny their accounts (DenyAccounts), so Slurm refuses their jobs there.
func partitionsConf(m model.Model, nodes Nodes, productLabel string) string {
	byProduct := map[string][]string{}
	for n, labels := range nodes {
		if p := labels[productLabel]; p != "" {
			byProduct[GresType(p)] = append(byProduct[GresType(p)], n)
		}
	}
	var confined []string
	for _, t := range m.TenantNames() {
		if _, _, _, ok := m.AllowedPool(t, ""); ok {
			confined = append(confined, t)
		}
	}
	sort.Strings(confined)
	var b strings.Builder
	for _, p := range sortedKeys(byProduct) {
		sort.Strings(byProduct[p])
		fmt.Fprintf(&b, "PartitionName=%s Nodes=%s State=UP", p, strings.Join(byProduct[p], ","))
		if len(confined) > 0 {
			fmt.Fprintf(&b, " DenyAccounts=%s", strings.Join(confined, ","))
		}
		b.WriteString("\n")
	}
	for _, pool := range m.PoolNames() {
		sel, ok := m.PoolSelector(pool)
		accounts := m.TenantsInPool(pool)
		if !ok || len(accounts) == 0 {
			continue
		}
		var in []string
		for n, labels := range nodes {
			if sel.Matches(labels) {
				in = append(in, n)
			}
		}
		if len(in) == 0 {
			continue // Slurm refuses a partition without nodes
		}
		sort.Strings(in)
		fmt.Fprintf(&b, "PartitionName=%s Nodes=%s State=UP AllowAccounts=%s\n", PoolPartition(pool), strings.Join(in, ","), strings.Join(accounts, ","))
	}
	return b.String()
}

// PoolPartition is the Slurm partition of a pool of the model.
func PoolPartition(pool string) string { return "pool-" + pool }

// switchName names a topology domain as a switch: its level and value.
func switchName(level, value string) string { return level + "-" + value }

// topologyConf is the tree of switches of the model's topology levels,
// widest first in the model, written leaf first: the narrowest level above
// the node (the node label kubernetes.io/hostname) is the leaf switch, and
// each wider level's switch links the narrower domains of its nodes. A
// node without a level's label links to the next wider domain it has.
func topologyConf(m model.Model, nodes Nodes) (string, error) {
	var levels []string
	var labels []string
	for _, l := range m.Topology.Levels {
		if l.NodeLabel == corev1.LabelHostname {
			continue
		}
		levels = append(levels, l.Name)
		labels = append(labels, l.NodeLabel)
	}
	type sw struct{ nodes, switches map[string]bool }
	switches := map[string]*sw{}
	order := map[string]int{}
	get := func(name string, level int) *sw {
		s, ok := switches[name]
		if !ok {
			s = &sw{nodes: map[string]bool{}, switches: map[string]bool{}}
			switches[name] = s
			order[name] = level
		}
		return s
	}
	owner := map[string]string{}
	for n, nl := range nodes {
		below := "" // the narrower switch of the node seen so far
		for i := len(levels) - 1; i >= 0; i-- {
			v := nl[labels[i]]
			if v == "" {
				continue
			}
			name := switchName(levels[i], v)
			s := get(name, i)
			if below == "" {
				s.nodes[n] = true
			} else {
				if o, ok := owner[below]; ok && o != name {
					return "", fmt.Errorf("topology: %s is in both %s and %s", below, o, name)
				}
				owner[below] = name
				s.switches[below] = true
			}
			below = name
		}
	}
	names := sortedKeys(switches)
	sort.SliceStable(names, func(i, j int) bool { return order[names[i]] > order[names[j]] })
	var b strings.Builder
	for _, name := range names {
		s := switches[name]
		fmt.Fprintf(&b, "SwitchName=%s", name)
		if len(s.switches) > 0 {
			fmt.Fprintf(&b, " Switches=%s", strings.Join(sortedKeys(s.switches), ","))
		}
		if len(s.nodes) > 0 {
			fmt.Fprintf(&b, " Nodes=%s", strings.Join(sortedKeys(s.nodes), ","))
		}
		b.WriteString("\n")
	}
	return b.String(), nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
