package schedsync

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/scheduler/facts"
	"github.com/mandate-dev/mandate/topology"
)

// Cluster is what rendering needs from the cluster besides the model: the
// nodes' labels (HyperNodes are built from them) and the namespaces of each
// tenant (LocalQueues go there).
type Cluster struct {
	// NodeLabels maps each node's name to its labels.
	NodeLabels map[string]map[string]string
	// TenantNamespaces maps a tenant to its namespaces (those labelled
	// mandate.dev/tenant=<tenant>).
	TenantNamespaces map[string][]string
}

// Options chooses what Render produces.
type Options struct {
	// Schedulers are the schedulers to configure; nil means those the
	// model's tenants use (SchedulersOf).
	Schedulers []string
	// ProductLabel is the node label naming the GPU product (default
	// nvidia.com/gpu.product).
	ProductLabel string
	// VolcanoConfigMap is the ConfigMap Volcano's scheduler reads
	// volcano-scheduler.conf from (default: the chart's,
	// volcano-system/volcano-scheduler-configmap).
	VolcanoConfigMap VolcanoConfigMap
}

// SchedulersOf lists the schedulers the model's tenants use that Sync can
// configure, sorted.
func SchedulersOf(s model.Model) []string {
	seen := map[string]bool{}
	for name := range s.Tenants {
		if sch := s.SchedulerOf(name); slices.Contains(AllSchedulers(), sch) {
			seen[sch] = true
		}
	}
	out := make([]string, 0, len(seen))
	for sch := range seen {
		out = append(out, sch)
	}
	sort.Strings(out)
	return out
}

// Render returns the objects the model wants, in creation order. Every
// scheduler configured gets the whole tenant hierarchy, so that each
// tenant's queue has its parents whichever scheduler its work goes to.
func Render(s model.Model, c Cluster, o Options) ([]Object, error) {
	schedulers := o.Schedulers
	if schedulers == nil {
		schedulers = SchedulersOf(s)
	}
	renderers := make([]Renderer, len(schedulers))
	for i, sch := range schedulers {
		in, ok := syncOf(sch)
		if !ok {
			return nil, fmt.Errorf("unknown scheduler %q: Sync configures %v", sch, AllSchedulers())
		}
		renderers[i] = in.Render
	}
	if o.ProductLabel == "" {
		o.ProductLabel = topology.DefaultProductLabel
	}
	out := priorityClasses(s)
	for i, sch := range schedulers {
		objs, err := renderers[i](s, c, o)
		if err != nil {
			return nil, fmt.Errorf("unable to render the %s configuration: %w", sch, err)
		}
		out = append(out, objs...)
	}
	sortObjects(out)
	return out, nil
}

// Renderer renders one scheduler's configuration from the model.
type Renderer func(s model.Model, c Cluster, o Options) ([]Object, error)

// Sync is how Sync configures one scheduler.
type Sync struct {
	// Render renders its objects, of its facts.Scheduler.SyncKinds.
	Render Renderer
	// Holds counts the workloads (and child queues) one of its queues q
	// still holds, listing what it needs through list: a queue that holds
	// any is closed, never deleted. Nil: its queues hold nothing Sync
	// knows of.
	Holds func(ctx context.Context, list Lister, q *unstructured.Unstructured) (int, error)
	// Close closes one of its live queues that the model no longer has
	// but that still holds work: it changes spec (a copy of the live
	// queue's) and returns the status to apply, nil for none. Nil: the
	// queue is only labelled closed.
	Close func(live *unstructured.Unstructured, spec map[string]any) (status map[string]any, err error)
}

var renderers = struct {
	sync.RWMutex
	byName map[string]Sync
}{byName: map[string]Sync{}}

// Register makes s how Sync configures the scheduler the registry
// (package facts) names name. It panics when the registry has no such
// scheduler, it has no sync kinds, or s has no Render: a programming
// error.
func Register(name string, s Sync) {
	if f, ok := facts.Lookup(name); !ok || !f.Syncs() || s.Render == nil {
		panic(fmt.Sprintf("schedsync: Register(%q): the scheduler must be in the registry with sync kinds, and have a renderer", name))
	}
	renderers.Lock()
	defer renderers.Unlock()
	renderers.byName[name] = s
}

// Unregister removes a scheduler's renderer (for tests that register one
// of their own).
func Unregister(name string) {
	renderers.Lock()
	defer renderers.Unlock()
	delete(renderers.byName, name)
}

func syncOf(name string) (Sync, bool) {
	renderers.RLock()
	defer renderers.RUnlock()
	s, ok := renderers.byName[name]
	return s, ok
}

// sortObjects orders objects by kind (creation order) and keeps the order
// Render gave within a kind (parents before children).
func sortObjects(objs []Object) {
	sort.SliceStable(objs, func(i, j int) bool {
		_, a := kindOf(objs[i].GroupVersionKind())
		_, b := kindOf(objs[j].GroupVersionKind())
		return a < b
	})
}

// priorityClasses renders one PriorityClass per class of the model (each
// tier's and each borrowed class, model.Classes). Kubernetes can say only
// whether a class preempts at all (preemptionPolicy), not which tiers it
// may preempt nor whether it may be preempted: the borrowed band below
// every guaranteed tier and the eviction guard keep guaranteed work safe
// (docs/architecture.md, "Eviction obeys the authority").
func priorityClasses(s model.Model) []Object {
	var out []Object
	for _, c := range s.Classes() {
		o := newObject(PriorityClassKind, "", c.Name, nil)
		o.Object["value"] = int64(c.Value)
		policy := "Never"
		if c.Preempts {
			policy = "PreemptLowerPriority"
		}
		o.Object["preemptionPolicy"] = policy
		if c.Description != "" {
			o.Object["description"] = c.Description
		}
		out = append(out, o)
	}
	return out
}

// resourceList renders per-resource amounts as a Kubernetes resource list.
func resourceList(m map[string]int64) map[string]any {
	out := make(map[string]any, len(m))
	for r, n := range m {
		out[r] = fmt.Sprint(n)
	}
	return out
}
