package evaluator

import (
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

// The Rego input is built term by term rather than through JSON: it is made
// on every admission. Field names follow the json tags of the Go types; the
// test TestInputValueMatchesJSON holds the two equal.

// The input's field names are interned once (at init, as OPA requires), so
// str returns one shared term for each instead of allocating it again on
// every admission.
func init() {
	ast.InternStringTerm(
		"request", "operation", "user", "groups", "dryRun",
		"namespace", "name", "labels",
		"workload", "kind", "apiVersion", "tenant", "class", "pods", "minPods",
		"gpusPerPod", "totalGPUs", "gpuResource", "gpuProduct", "priorityClass",
		"topology", "required", "preferred", "scheduler", "roles", "replicas",
		"annotations", "gpuFraction", "gpuMemoryMiB", "generateName", "owner", "uid",
		"requestedPreemptible", "requestedPreemptibleBy", "schedulerKeys", "key", "asks", "value", "totalMilliGPUs",
		"gpuShareMilli",
		"usage", "total", "nonPreemptible", "object",
	)
	// Values most inputs carry: the operations, the tenant label, the
	// workload classes, every registered kind's kind and apiVersion (the
	// registry is filled by workload's init, which runs first) and the
	// default GPU resource.
	ast.InternStringTerm("CREATE", "UPDATE", workload.LabelTenant, topology.DefaultGPUResource,
		string(workload.ClassTraining), string(workload.ClassInference), string(workload.ClassInteractive), string(workload.ClassBatch))
	for _, k := range workload.Kinds() {
		ast.InternStringTerm(k.GVK.Kind, k.GVK.GroupVersion().String())
	}
}

func str(s string) *ast.Term { return ast.InternedTerm(s) }

func num(n int) *ast.Term { return ast.InternedTerm(n) }

func strMap(m map[string]string) *ast.Term {
	if m == nil {
		return ast.InternedNullTerm
	}
	items := make([][2]*ast.Term, 0, len(m))
	for k, v := range m {
		items = append(items, [2]*ast.Term{str(k), str(v)})
	}
	return ast.ObjectTerm(items...)
}

func requestTerm(r Request) *ast.Term {
	groups := ast.InternedNullTerm
	if r.Groups != nil {
		terms := make([]*ast.Term, len(r.Groups))
		for i, g := range r.Groups {
			terms[i] = str(g)
		}
		groups = ast.ArrayTerm(terms...)
	}
	return ast.ObjectTerm(
		ast.Item(str("operation"), str(r.Operation)),
		ast.Item(str("user"), str(r.User)),
		ast.Item(str("groups"), groups),
		ast.Item(str("dryRun"), ast.InternedTerm(r.DryRun)),
	)
}

func namespaceTerm(n workload.Namespace) *ast.Term {
	return ast.ObjectTerm(
		ast.Item(str("name"), str(n.Name)),
		ast.Item(str("labels"), strMap(n.Labels)),
	)
}

func workloadTerm(w *workload.Workload) *ast.Term {
	roles := ast.InternedNullTerm
	if w.Roles != nil {
		terms := make([]*ast.Term, len(w.Roles))
		for i, r := range w.Roles {
			terms[i] = ast.ObjectTerm(
				ast.Item(str("name"), str(r.Name)),
				ast.Item(str("replicas"), num(r.Replicas)),
				ast.Item(str("gpusPerPod"), num(r.GPUsPerPod)),
			)
		}
		roles = ast.ArrayTerm(terms...)
	}
	items := [][2]*ast.Term{
		ast.Item(str("kind"), str(w.Kind)),
		ast.Item(str("apiVersion"), str(w.APIVersion)),
		ast.Item(str("name"), str(w.Name)),
		ast.Item(str("namespace"), str(w.Namespace)),
		ast.Item(str("tenant"), str(w.Tenant)),
		ast.Item(str("class"), str(string(w.Class))),
		ast.Item(str("pods"), num(w.Pods)),
		ast.Item(str("minPods"), num(w.MinPods)),
		ast.Item(str("gpusPerPod"), num(w.GPUsPerPod)),
		ast.Item(str("totalGPUs"), num(w.TotalGPUs)),
		ast.Item(str("totalMilliGPUs"), ast.InternedTerm(w.TotalMilliGPUs)),
		ast.Item(str("gpuResource"), str(w.GPUResource)),
		ast.Item(str("gpuProduct"), str(w.GPUProduct)),
		ast.Item(str("priorityClass"), str(w.PriorityClass)),
		ast.Item(str("topology"), topologyTerm(w.Topology)),
		ast.Item(str("scheduler"), str(w.Scheduler)),
		ast.Item(str("roles"), roles),
		ast.Item(str("labels"), strMap(w.Labels)),
		ast.Item(str("annotations"), strMap(w.Annotations)),
	}
	if w.GPUFraction != 0 {
		items = append(items, ast.Item(str("gpuFraction"), ast.FloatNumberTerm(w.GPUFraction)))
	}
	if w.GPUMemoryMiB != 0 {
		items = append(items, ast.Item(str("gpuMemoryMiB"), ast.InternedTerm(w.GPUMemoryMiB)))
	}
	if w.GPUShareMilli != 0 {
		items = append(items, ast.Item(str("gpuShareMilli"), num(w.GPUShareMilli)))
	}
	if w.GenerateName != "" {
		items = append(items, ast.Item(str("generateName"), str(w.GenerateName)))
	}
	if w.RequestedPreemptible != nil {
		items = append(items,
			ast.Item(str("requestedPreemptible"), ast.BooleanTerm(*w.RequestedPreemptible)),
			ast.Item(str("requestedPreemptibleBy"), str(w.RequestedPreemptibleBy)))
	}
	if len(w.SchedulerKeys) > 0 {
		keys := make([]*ast.Term, len(w.SchedulerKeys))
		for i, k := range w.SchedulerKeys {
			keys[i] = ast.ObjectTerm(
				ast.Item(str("key"), str(k.Key)),
				ast.Item(str("asks"), str(k.Asks)),
				ast.Item(str("value"), str(k.Value)),
			)
		}
		items = append(items, ast.Item(str("schedulerKeys"), ast.ArrayTerm(keys...)))
	}
	if w.Owner != nil {
		items = append(items, ast.Item(str("owner"), ast.ObjectTerm(
			ast.Item(str("apiVersion"), str(w.Owner.APIVersion)),
			ast.Item(str("kind"), str(w.Owner.Kind)),
			ast.Item(str("name"), str(w.Owner.Name)),
			ast.Item(str("uid"), str(w.Owner.UID)),
		)))
	}
	return ast.ObjectTerm(items...)
}

func usageTerm(u map[string]map[string]ledger.Usage) *ast.Term {
	if u == nil {
		return ast.InternedNullTerm
	}
	tenants := make([][2]*ast.Term, 0, len(u))
	for tenant, byRes := range u {
		res := make([][2]*ast.Term, 0, len(byRes))
		for r, v := range byRes {
			res = append(res, ast.Item(str(r), ast.ObjectTerm(
				ast.Item(str("total"), num(v.Total)),
				ast.Item(str("nonPreemptible"), num(v.NonPreemptible)),
			)))
		}
		tenants = append(tenants, ast.Item(str(tenant), ast.ObjectTerm(res...)))
	}
	return ast.ObjectTerm(tenants...)
}

// topologyTerm is input.workload.topology; requiredNodeLabel only when set,
// as in the Workload's JSON.
func topologyTerm(t workload.TopologyRequest) *ast.Term {
	items := [][2]*ast.Term{
		ast.Item(str("required"), str(t.Required)),
		ast.Item(str("preferred"), str(t.Preferred)),
	}
	if t.RequiredNodeLabel != "" {
		items = append(items, ast.Item(str("requiredNodeLabel"), ast.StringTerm(t.RequiredNodeLabel)))
	}
	return ast.ObjectTerm(items...)
}
