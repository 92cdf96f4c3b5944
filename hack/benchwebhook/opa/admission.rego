# The plain-OPA peer of Mandate's admission decision in `make bench-webhook`:
# the classic admission-controller policy (`opa run --server
# --set=default_decision=/system/main`, POST /), answering an
# AdmissionReview with the same checks as Mandate's default policies, in
# pure Rego over the cluster facts given as data:
#
#   tenancy   the namespace's mandate.dev/tenant label names a tenant
#   priority  the priority class (spec.priorityClassName, or the model's
#             default for the workload class) is one the tenant may use
#             (its own list or its nearest ancestor's)
#   quota     usage of the tenant and of every ancestor plus the request
#             stays within each ceiling
#   topology  the best-fit placement of evaluator/testdata/reference.rego
#             (data.reference.result, loaded beside this file, not copied)
#             over the nodes' free GPUs; denied when no domain of the
#             required level could ever hold the gang
#
# data.bench holds the model (policies/mandate/model/data.json), the
# namespaces' tenants, each tenant's usage from the running pods, the
# tenants' parent graph and the nodes' capacity per domain;
# data.reference.domains the nodes' free GPUs per domain.
package system

main := {
	"apiVersion": "admission.k8s.io/v1",
	"kind": "AdmissionReview",
	"response": response,
}

default response := {"allowed": true}

response := {"uid": input.request.uid, "allowed": true, "auditAnnotations": _placement_annotation} if count(deny) == 0

response := {
	"uid": input.request.uid,
	"allowed": false,
	"status": {"code": 403, "reason": "Forbidden", "message": concat("; ", sort(deny))},
} if count(deny) > 0

_placement_annotation := {"placement": placement.domain} if placement.fitsNow

else := {"placement": "waits"}

_object := input.request.object

_model := data.bench.model

# Every data reference stands alone in its expression: Gatekeeper, which runs
# this file as a ConstraintTemplate library, moves only those (not ones
# nested in calls, comprehensions or `some … in`) to where its libraries live.
_parents := data.bench.parents

_usage := data.bench.usage

# Pod specs of the workload with their replica counts: the object itself for
# a Pod; every pod template (spec.template, tasks[].template,
# *ReplicaSpecs.*.template) with its sibling replicas or parallelism.
pod_sets[path] := [n, spec] if {
	walk(_object, [p, v])
	count(p) > 0
	p[count(p) - 1] == "template"
	spec := v.spec
	spec.containers
	parent := object.get(_object, array.slice(p, 0, count(p) - 1), {})
	n := object.get(parent, "replicas", object.get(parent, "parallelism", 1))
	path := concat("/", [sprintf("%v", [x]) | some x in p])
}

pod_sets["pod"] := [1, _object.spec] if input.request.kind.kind == "Pod"

_pod_gpus(spec, r) := sum([to_number(object.get(c, ["resources", "limits", r], object.get(c, ["resources", "requests", r], "0"))) |
	some c in spec.containers
])

demand[r] := n if {
	some r, _ in _model.tenants[_].quota
	n := sum([x | some s in pod_sets; x := s[0] * _pod_gpus(s[1], r)])
	n > 0
}

gpu_pods := sum([s[0] | some s in pod_sets; _pod_gpus(s[1], "nvidia.com/gpu") > 0])

gpus_per_pod := max([_pod_gpus(s[1], "nvidia.com/gpu") | some s in pod_sets])

governed if count(demand) > 0

# Tenancy.
tenant := data.bench.namespaces[input.request.namespace]

deny contains msg if {
	governed
	not tenant
	msg := sprintf("tenancy: namespace %s has no tenant (label mandate.dev/tenant)", [input.request.namespace])
}

deny contains msg if {
	governed
	tenant
	not _model.tenants[tenant]
	msg := sprintf("tenancy: tenant %s is not in the authority model", [tenant])
}

# Priority.
_declared := {c | some s in pod_sets; c := s[1].priorityClassName}

_kind_class := "interactive" if input.request.kind.kind == "Pod"

else := "batch" if {
	input.request.kind.kind == "Job"
	input.request.kind.group == "batch"
}

else := "training"

workload_class := object.get(_object, ["metadata", "labels", "mandate.dev/class"], _kind_class)

priority_class := c if {
	count(_declared) == 1
	some c in _declared
} else := _model.classDefaults[workload_class]

ancestors := graph.reachable(_parents, {tenant})

# The tenant's classes, or those of its nearest ancestor that lists any (the
# deepest: the one with the most ancestors of its own).
allowed_classes := max([[count(graph.reachable(_parents, {a})), _model.tenants[a].priorityClasses] |
	some a in ancestors
	_model.tenants[a].priorityClasses
])[1]

deny contains msg if {
	governed
	_model.tenants[tenant]
	not priority_class in allowed_classes
	msg := sprintf("priority: %s may not use priority class %v (allowed: %s)", [tenant, priority_class, concat(", ", allowed_classes)])
}

# Quota: each ceiling on the way to the root.
_used(a, r) := sum([object.get(u, r, 0) |
	some t, u in _usage
	a in graph.reachable(_parents, {t})
])

deny contains msg if {
	governed
	some a in ancestors
	some r, n in demand
	ceiling := _model.tenants[a].quota[r].ceiling
	used := _used(a, r)
	used + n > ceiling
	msg := sprintf("quota: %s would use %d of %s with a ceiling of %d (%d in use)", [a, used + n, r, ceiling, used])
}

# Topology: the level the gang's size requires, then the best fit.
_rule_fits(rule) if not rule.maxGPUs

_rule_fits(rule) if demand["nvidia.com/gpu"] <= rule.maxGPUs

required_level := [rule.required | some rule in _model.topology.rules; _rule_fits(rule)][0]

_placement_request := {"request": {
	"gpusPerPod": gpus_per_pod,
	"requiredLevel": required_level,
	"pods": gpu_pods,
	"product": object.get(_object, ["spec", "nodeSelector", "nvidia.com/gpu.product"], ""),
}}

placement := p if {
	p := data.reference.result with input as _placement_request
}

deny contains msg if {
	demand["nvidia.com/gpu"]
	tenant
	not data.reference.result.fitsNow with input as _placement_request with data.reference.domains as data.bench.capacity
	msg := sprintf("topology: no %s holds %d pods of %d GPUs", [required_level, gpu_pods, gpus_per_pod])
}
