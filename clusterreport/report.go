// Package clusterreport is the cluster-wide answer to "capacity exists, why
// is nothing running?": per tenant (rolled up the hierarchy) guarantee,
// ceiling, used, idle within guarantee and blocked demand by dimension and
// rule; per GPU resource and product free, stranded and unhealthy capacity;
// free GPUs per topology domain; and the headline of idle GPUs while work
// is blocked, and by which authority. It reads the same state a decision
// reads and explains every workload through package explain.
package clusterreport

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/explain"
	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
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

// TenantRow is one tenant and one GPU resource — or one GPU product of
// it, where the model sets a quota for the product — usage rolled up over
// its subtree.
type TenantRow struct {
	Tenant   string `json:"tenant"`
	Parent   string `json:"parent"`
	Depth    int    `json:"depth"`
	Resource string `json:"resource"`
	// Product is the GPU product (node label nvidia.com/gpu.product) the
	// row is about; "" for the resource, every product together.
	Product string `json:"product,omitempty"`
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

// ResourceName names the row's resource for people: the resource, and the
// GPU product in parentheses on a product's row.
func (t TenantRow) ResourceName() string {
	if t.Product == "" {
		return t.Resource
	}
	return t.Resource + " (" + t.Product + ")"
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
	Workload string `json:"workload"`
	Tenant   string `json:"tenant"`
	GPUs     int    `json:"gpus"`
	Resource string `json:"resource"`
	// Product is the GPU product the workload asks for; "" for none.
	Product   string `json:"product,omitempty"`
	Dimension string `json:"dimension"`
	Rule      string `json:"rule"`
	Message   string `json:"message"`
	Unblock   string `json:"unblock"`
}

// Options say what to report against: the revision and its authority
// model (explain.Options.Model), whose guarantees and ceilings, per
// resource and GPU product, the tenant rows carry.
type Options struct {
	explain.Options
}

// Build reports on inv (and the schedulers' objects in sched).
func Build(ctx context.Context, inv *inventory.Inventory, sched *explain.SchedulerState, o Options) (*Report, error) {
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
	// And what admitted workloads hold beyond their pods so far, as the
	// replicas count it.
	state.LoadHolds(inv.Owners, func(u *unstructured.Unstructured) (ledger.Hold, bool) { return review.HoldOf(u, o.Model) })
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
			Workload: e.Workload.String(), Tenant: e.Workload.Tenant, GPUs: e.Shape.TotalGPUs, Resource: e.Shape.Resource, Product: e.Shape.Product,
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
	nodes, err := nodesOf(inv, o.Model, state.NodeDevices())
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
	for t := range m.Tenants {
		out[t] = state.Usage(t)[t]
	}
	return out
}

// count feeds state inv's nodes, namespaces and pods
// (inventory.Inventory.Count).
func count(state *cluster.State, inv *inventory.Inventory) error {
	if err := inv.Count(state); err != nil {
		return fmt.Errorf("unable to count the cluster: %w", err)
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

// tenants rolls usage, quota and blocked demand up the hierarchy: a row
// per tenant and GPU resource, and one per GPU product the model sets a
// quota for.
func tenants(o Options, used, reserved map[string]map[string]ledger.Usage, blocked []BlockedRow) []TenantRow {
	m := o.Model
	// Order: depth-first under each root, children by name.
	var order []string
	var walk func(string)
	walk = func(p string) {
		for _, k := range m.Children(p) {
			order = append(order, k)
			walk(k)
		}
	}
	walk("")
	type key struct{ resource, product string }
	pending := map[string]map[key][2]int{} // tenant → resource/product → {workloads, gpus}
	blockedBy := map[string]map[key]map[string]int{}
	for _, b := range blocked {
		keys := []key{{b.Resource, ""}}
		if b.Product != "" {
			keys = append(keys, key{b.Resource, b.Product})
		}
		for _, t := range m.Chain(b.Tenant) {
			if pending[t] == nil {
				pending[t] = map[key][2]int{}
				blockedBy[t] = map[key]map[string]int{}
			}
			for _, k := range keys {
				p := pending[t][k]
				pending[t][k] = [2]int{p[0] + 1, p[1] + b.GPUs}
				if blockedBy[t][k] == nil {
					blockedBy[t][k] = map[string]int{}
				}
				blockedBy[t][k][b.Dimension+"/"+b.Rule] += b.GPUs
			}
		}
	}
	var rows []TenantRow
	for _, t := range order {
		usage := used[t]
		withReservations := reserved[t]
		resources := map[string]bool{}
		for _, r := range m.Resources(t) {
			resources[r] = true
		}
		for r := range usage {
			// The ledger also counts usage per resource@product; those
			// rows are shown only where the model sets a quota for them.
			if !topology.IsProductKey(r) {
				resources[r] = true
			}
		}
		for k := range pending[t] {
			resources[k.resource] = true
		}
		rs := make([]string, 0, len(resources))
		for r := range resources {
			rs = append(rs, r)
		}
		sort.Strings(rs)
		for _, r := range rs {
			for _, p := range append([]string{""}, m.Products(t, r)...) {
				k, usageKey := key{r, p}, r
				if p != "" {
					usageKey = topology.ProductKey(r, p)
				}
				row := TenantRow{Tenant: t, Parent: m.Tenants[t].Parent, Depth: m.Depth(t), Resource: r, Product: p,
					Guaranteed: -1, Ceiling: -1, Used: usage[usageKey].Total, NonPreemptible: usage[usageKey].NonPreemptible,
					Reserved:         withReservations[usageKey].Total - usage[usageKey].Total,
					PendingWorkloads: pending[t][k][0], PendingGPUs: pending[t][k][1], BlockedBy: blockedBy[t][k]}
				if q, ok := m.QuotaOf(t, r, p); ok {
					row.Guaranteed, row.Ceiling = int(q.Guaranteed), int(q.Ceiling)
				}
				if row.Guaranteed > row.Used+row.Reserved {
					row.IdleInGuarantee = row.Guaranteed - row.Used - row.Reserved
				}
				rows = append(rows, row)
			}
		}
	}
	return rows
}

// node is one node as the report counts it.
type node struct {
	name  string
	view  topology.NodeView
	alloc map[string]int
	used  map[string]int
}

// nodesOf is inv's nodes with the GPUs the pods use on each
// (topology.PodUsage: a bound pod's own on its node, the devices of a
// DRA claim on the claim's node, a shared claim once, shared GPUs as the
// whole devices they occupy of a node), their capacity what the state
// counts (topology.NodeCapacity: allocatable and DRA devices, as devices).
func nodesOf(inv *inventory.Inventory, m model.Model, devices map[string]topology.NodeDevices) ([]node, error) {
	cfg := m.TopologyConfig()
	claims, err := inv.ClaimLookup()
	if err != nil {
		return nil, err
	}
	claims = topology.ClaimsOnce(claims)
	counting := m.Counting()
	nodeProduct := map[string]string{}
	views, err := inv.TypedNodes()
	if err != nil {
		return nil, err
	}
	for _, n := range views {
		nodeProduct[n.Name] = cmp.Or(topology.ViewNode(cfg, n).Product, devices[n.Name].Product)
	}
	used := map[string]map[string]int{}
	err = inv.EachPod(func(pod *corev1.Pod) error {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			return nil
		}
		// A gpu-memory share is mapped with its node's product, as the
		// topology model maps it.
		product := nodeProduct[pod.Spec.NodeName]
		if product == "" {
			product = workload.PodProduct(&pod.Spec)
		}
		for n, gpus := range topology.PodUsage(pod, product, counting, claims).OnNode(pod.Spec.NodeName) {
			if used[n] == nil {
				used[n] = map[string]int{}
			}
			for r, v := range gpus {
				used[n][r] += v
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for n, gpus := range used {
		used[n] = topology.Fold(gpus)
	}
	out := make([]node, 0, len(views))
	for _, n := range views {
		view := topology.ViewNode(cfg, n)
		view.Product = nodeProduct[n.Name]
		out = append(out, node{name: n.Name, view: view, alloc: topology.NodeCapacity(n, devices[n.Name]), used: used[n.Name]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}
