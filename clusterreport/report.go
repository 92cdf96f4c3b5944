// Package clusterreport is the cluster-wide answer to "capacity exists, why
// is nothing running?": per tenant (rolled up the hierarchy) guarantee,
// ceiling, used, idle within guarantee and blocked demand by dimension and
// rule; per GPU resource and product free, stranded and unhealthy capacity;
// free GPUs per topology domain; and the headline of idle GPUs while work
// is blocked, and by which authority. It reads the same state a decision
// reads and explains every workload through package explain.
package clusterreport

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mandate-dev/mandate/audit"
	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/explain"
	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/topology"
)

// Report is the cluster report.
type Report struct {
	Revision string `json:"revision"`
	Source   string `json:"source"`
	// Headline: idle GPUs while work is blocked, and by which authority.
	Headline string `json:"headline"`
	// IdleGPUs are free GPUs on healthy, schedulable nodes; StrandedGPUs
	// those of them no blocked gang could use at its required level.
	IdleGPUs     int `json:"idleGPUs"`
	StrandedGPUs int `json:"strandedGPUs"`
	// UnhealthyGPUs are on nodes the model's health rules mark;
	// UnavailableGPUs on cordoned, NotReady or tainted ones.
	UnhealthyGPUs   int `json:"unhealthyGPUs"`
	UnavailableGPUs int `json:"unavailableGPUs"`
	// BlockedWorkloads and BlockedGPUs count pending demand that cannot
	// run; BlockedBy splits the GPUs by dimension of the first block.
	BlockedWorkloads int            `json:"blockedWorkloads"`
	BlockedGPUs      int            `json:"blockedGPUs"`
	BlockedBy        map[string]int `json:"blockedBy"`
	Tenants          []TenantRow    `json:"tenants"`
	Capacity         []CapacityRow  `json:"capacity"`
	// HeatLevel is the level Domains describes (the narrowest above nodes).
	HeatLevel string       `json:"heatLevel"`
	Domains   []DomainRow  `json:"domains"`
	Blocked   []BlockedRow `json:"blocked"`
	Notes     []string     `json:"notes,omitempty"`
}

// TenantRow is one tenant and one GPU resource, usage rolled up over its
// subtree.
type TenantRow struct {
	Tenant   string `json:"tenant"`
	Parent   string `json:"parent"`
	Depth    int    `json:"depth"`
	Resource string `json:"resource"`
	// Guaranteed and Ceiling from the authority model; -1 when the model
	// sets none.
	Guaranteed     int `json:"guaranteed"`
	Ceiling        int `json:"ceiling"`
	Used           int `json:"used"`
	NonPreemptible int `json:"nonPreemptible"`
	// Reserved are GPUs admitted but not yet seen on pods: the unexpired
	// reservations of the shared quota ledger's TenantLedger objects (none
	// without quota.shared, where each replica keeps them in memory).
	Reserved int `json:"reserved"`
	// IdleInGuarantee is the guarantee not used.
	IdleInGuarantee  int `json:"idleInGuarantee"`
	PendingWorkloads int `json:"pendingWorkloads"`
	PendingGPUs      int `json:"pendingGPUs"`
	// BlockedBy counts pending GPUs by "dimension/RULE".
	BlockedBy map[string]int `json:"blockedBy"`
}

// CapacityRow is one GPU resource and product.
type CapacityRow struct {
	Resource    string `json:"resource"`
	Product     string `json:"product"`
	Total       int    `json:"total"`
	Used        int    `json:"used"`
	Free        int    `json:"free"`
	Stranded    int    `json:"stranded"`
	Unhealthy   int    `json:"unhealthy"`
	Unavailable int    `json:"unavailable"`
}

// DomainRow is one domain of HeatLevel.
type DomainRow struct {
	Domain    string `json:"domain"`
	Product   string `json:"product"`
	Total     int    `json:"total"`
	Free      int    `json:"free"`
	Unhealthy int    `json:"unhealthy"`
}

// BlockedRow is one pending workload that cannot run.
type BlockedRow struct {
	Workload  string `json:"workload"`
	Tenant    string `json:"tenant"`
	GPUs      int    `json:"gpus"`
	Resource  string `json:"resource"`
	Dimension string `json:"dimension"`
	Rule      string `json:"rule"`
	Message   string `json:"message"`
	Unblock   string `json:"unblock"`
}

// Options say what to report against.
type Options struct {
	explain.Options
	// Data is the policy data, for the tenants' quotas.
	Data map[string]any
}

// Build reports on inv (and the schedulers' objects in sched).
func Build(ctx context.Context, inv *audit.Inventory, sched *explain.SchedulerState, o Options) (*Report, error) {
	state, err := cluster.New(o.Model)
	if err != nil {
		return nil, err
	}
	if err := count(state, inv); err != nil {
		return nil, err
	}
	// The workloads are decided against the same state (each one's own
	// pods taken out and put back), not a second one of the whole cluster.
	eo := o.Options
	eo.State = state
	exps, err := explain.All(ctx, inv, sched, eo)
	if err != nil {
		return nil, err
	}
	// Used is what pods hold; reserved what the shared ledger's
	// reservations hold beyond them: the same state's usage read again once
	// the reservations are loaded (one state, not two: at 150,000 pods a
	// state is hundreds of MiB).
	used := usageOf(state, o.Model)
	for _, obj := range inv.Ledgers {
		if err := state.LoadReservations(obj); err != nil {
			return nil, fmt.Errorf("unable to read the reservations: %w", err)
		}
	}
	withReservations := usageOf(state, o.Model)
	rep := &Report{Revision: o.Revision, Source: inv.Source, BlockedBy: map[string]int{}, Notes: slices.Clone(inv.Notes)}
	var gangs []gang
	for _, e := range exps {
		if e.CanRunNow || e.Subtracted.Pods > 0 || e.Shape.TotalGPUs == 0 {
			continue // runs, or holds nothing
		}
		b := e.Blocks[0]
		rep.BlockedWorkloads++
		rep.BlockedGPUs += e.Shape.TotalGPUs
		rep.BlockedBy[b.Dimension] += e.Shape.TotalGPUs
		rep.Blocked = append(rep.Blocked, BlockedRow{
			Workload: e.Workload.String(), Tenant: e.Workload.Tenant, GPUs: e.Shape.TotalGPUs, Resource: e.Shape.Resource,
			Dimension: b.Dimension, Rule: b.Code, Message: b.Message, Unblock: b.Unblock,
		})
		if e.Directives != nil {
			gangs = append(gangs, gang{pods: e.Shape.Pods, gpus: e.Shape.GPUsPerPod, resource: e.Shape.Resource,
				product: e.Shape.Product, level: e.Directives.RequiredLevel})
		}
	}
	sort.SliceStable(rep.Blocked, func(i, j int) bool {
		if rep.Blocked[i].GPUs != rep.Blocked[j].GPUs {
			return rep.Blocked[i].GPUs > rep.Blocked[j].GPUs
		}
		return rep.Blocked[i].Workload < rep.Blocked[j].Workload
	})
	rep.Tenants = tenants(o, used, withReservations, rep.Blocked)
	nodes, err := nodesOf(inv, o.Model.TopologyConfig())
	if err != nil {
		return nil, err
	}
	capacity(rep, nodes, gangs, o.Model.TopologyConfig().Levels)
	rep.Headline = headline(rep)
	return rep, nil
}

// usageOf is every tenant's usage in state, rolled up over its subtree.
func usageOf(state *cluster.State, m model.Model) map[string]map[string]ledger.Usage {
	out := map[string]map[string]ledger.Usage{}
	for t := range m.Parents() {
		out[t] = state.Usage(t)[t]
	}
	return out
}

// count feeds state inv's nodes, namespaces and pods.
func count(state *cluster.State, inv *audit.Inventory) error {
	for _, obj := range slices.Concat(inv.Nodes, inv.Namespaces) {
		if err := state.Add(obj); err != nil {
			return fmt.Errorf("unable to count %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	err := inv.EachPod(func(p *corev1.Pod) error {
		state.UpsertPod(p)
		return nil
	})
	if err != nil {
		return fmt.Errorf("unable to count the pods: %w", err)
	}
	return nil
}

// headline says how many GPUs sit idle while work is blocked, and by which
// authority.
func headline(r *Report) string {
	if r.BlockedWorkloads == 0 {
		return fmt.Sprintf("%d idle GPUs (%d stranded); no work is blocked", r.IdleGPUs, r.StrandedGPUs)
	}
	dims := make([]string, 0, len(r.BlockedBy))
	for d := range r.BlockedBy {
		dims = append(dims, d)
	}
	sort.Slice(dims, func(i, j int) bool {
		if r.BlockedBy[dims[i]] != r.BlockedBy[dims[j]] {
			return r.BlockedBy[dims[i]] > r.BlockedBy[dims[j]]
		}
		return dims[i] < dims[j]
	})
	var by []string
	for _, d := range dims {
		by = append(by, fmt.Sprintf("%s %d", d, r.BlockedBy[d]))
	}
	return fmt.Sprintf("%d idle GPUs (%d stranded) while %d workloads wanting %d GPUs are blocked: by %s",
		r.IdleGPUs, r.StrandedGPUs, r.BlockedWorkloads, r.BlockedGPUs, strings.Join(by, ", "))
}

// tenants rolls usage, quota and blocked demand up the hierarchy.
func tenants(o Options, used, reserved map[string]map[string]ledger.Usage, blocked []BlockedRow) []TenantRow {
	quotas := quotasOf(o.Data)
	parents := o.Model.Parents()
	names := make([]string, 0, len(parents))
	for t := range parents {
		names = append(names, t)
	}
	depth := func(t string) int {
		d := 0
		for p := parents[t]; p != "" && d < model.MaxDepth; p = parents[p] {
			d++
		}
		return d
	}
	// Order: depth-first under each root, children by name.
	children := map[string][]string{}
	for _, t := range names {
		children[parents[t]] = append(children[parents[t]], t)
	}
	var order []string
	var walk func(string)
	walk = func(p string) {
		kids := children[p]
		sort.Strings(kids)
		for _, k := range kids {
			order = append(order, k)
			walk(k)
		}
	}
	walk("")
	pending := map[string]map[string][2]int{} // tenant → resource → {workloads, gpus}
	blockedBy := map[string]map[string]map[string]int{}
	for _, b := range blocked {
		for t, d := b.Tenant, 0; t != "" && d < model.MaxDepth; t, d = parents[t], d+1 {
			if pending[t] == nil {
				pending[t] = map[string][2]int{}
				blockedBy[t] = map[string]map[string]int{}
			}
			p := pending[t][b.Resource]
			pending[t][b.Resource] = [2]int{p[0] + 1, p[1] + b.GPUs}
			if blockedBy[t][b.Resource] == nil {
				blockedBy[t][b.Resource] = map[string]int{}
			}
			blockedBy[t][b.Resource][b.Dimension+"/"+b.Rule] += b.GPUs
		}
	}
	var rows []TenantRow
	for _, t := range order {
		usage := used[t]
		withReservations := reserved[t]
		resources := map[string]bool{}
		for r := range quotas[t] {
			resources[r] = true
		}
		for r := range usage {
			// The ledger also counts usage per resource@product; those
			// rows are shown only where the model sets a quota for them.
			if !strings.Contains(r, "@") {
				resources[r] = true
			}
		}
		for r := range pending[t] {
			resources[r] = true
		}
		rs := make([]string, 0, len(resources))
		for r := range resources {
			rs = append(rs, r)
		}
		sort.Strings(rs)
		for _, r := range rs {
			q, ok := quotas[t][r]
			if !ok {
				q = quota{Guaranteed: -1, Ceiling: -1}
			}
			row := TenantRow{Tenant: t, Parent: parents[t], Depth: depth(t), Resource: r,
				Guaranteed: q.Guaranteed, Ceiling: q.Ceiling, Used: usage[r].Total, NonPreemptible: usage[r].NonPreemptible,
				Reserved:         withReservations[r].Total - usage[r].Total,
				PendingWorkloads: pending[t][r][0], PendingGPUs: pending[t][r][1], BlockedBy: blockedBy[t][r]}
			if q.Guaranteed > row.Used+row.Reserved {
				row.IdleInGuarantee = q.Guaranteed - row.Used - row.Reserved
			}
			rows = append(rows, row)
		}
	}
	return rows
}

type quota struct {
	Guaranteed int
	Ceiling    int
}

// quotasOf reads data.mandate.model.tenants[*].quota.
func quotasOf(data map[string]any) map[string]map[string]quota {
	out := map[string]map[string]quota{}
	mandate, _ := data["mandate"].(map[string]any)
	m, _ := mandate["model"].(map[string]any)
	ts, _ := m["tenants"].(map[string]any)
	for name, raw := range ts {
		t, _ := raw.(map[string]any)
		qs, _ := t["quota"].(map[string]any)
		for r, rawQ := range qs {
			q, _ := rawQ.(map[string]any)
			if out[name] == nil {
				out[name] = map[string]quota{}
			}
			out[name][r] = quota{Guaranteed: number(q["guaranteed"]), Ceiling: number(q["ceiling"])}
		}
	}
	return out
}

func number(v any) int {
	switch n := v.(type) {
	case float64:
		return int(n)
	case int:
		return n
	case int64:
		return int(n)
	case interface{ Int64() (int64, error) }:
		i, _ := n.Int64()
		return int(i)
	}
	return 0
}

// node is one node as the report counts it.
type node struct {
	name  string
	view  topology.NodeView
	alloc map[string]int
	used  map[string]int
}

func nodesOf(inv *audit.Inventory, cfg topology.Config) ([]node, error) {
	used := map[string]map[string]int{}
	err := inv.EachPod(func(pod *corev1.Pod) error {
		if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			return nil
		}
		for r, n := range topology.PodGPURequests(pod) {
			if used[pod.Spec.NodeName] == nil {
				used[pod.Spec.NodeName] = map[string]int{}
			}
			used[pod.Spec.NodeName][r] += n
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]node, 0, len(inv.Nodes))
	for _, obj := range inv.Nodes {
		n := &corev1.Node{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, n); err != nil {
			return nil, fmt.Errorf("malformed Node %s: %w", obj.GetName(), err)
		}
		out = append(out, node{name: n.Name, view: topology.ViewNode(cfg, n), alloc: topology.NodeGPUs(n), used: used[n.Name]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}
