# METADATA
# title: Mandate shared lookups
# description: |
#   Lookups over the authority model (data.mandate.model) and the admission
#   input that every dimension shares: the tenant and its ancestors, the
#   effective priority class, the GPU request, and the violation shape.
package mandate.lib

# The authority model: tenants, priority tiers, quota policy, preemption
# rules and topology levels.
import data.mandate.model

# What each violation does: deny, warn or dryrun.
import data.mandate.enforcement

workload := input.workload

# The tenant comes from the namespace label, never from the workload.
tenant := input.namespace.labels["mandate.dev/tenant"]

tenant_known if model.tenants[tenant]

# The tenant and its ancestors, nearest first. Hierarchies up to six deep:
# the model's one depth limit (MaxDepth of the Go package model), which the
# model checker enforces before a model is trusted; a Go test ties this walk
# to it. One comprehension walks the parents (a tenant without one has
# parent "").
chain := [t |
	a1 := object.get(model.tenants, [tenant, "parent"], "")
	a2 := object.get(model.tenants, [a1, "parent"], "")
	a3 := object.get(model.tenants, [a2, "parent"], "")
	a4 := object.get(model.tenants, [a3, "parent"], "")
	a5 := object.get(model.tenants, [a4, "parent"], "")
	some t in [tenant, a1, a2, a3, a4, a5]
	t != ""
]

# inherited(key) is the value of key on the nearest tenant of the chain that
# sets it.
inherited(key) := [v |
	some t in chain
	v := model.tenants[t][key]
][0]

# The priority classes the tenant may use (its own list, else its parent's).
allowed_classes := [v |
	some t in chain
	v := model.tenants[t].priorityClasses
][0]

# The class the workload runs at: what it asked for, else the default for its
# workload class.
effective_class := c if {
	c := workload.priorityClass
	c != ""
} else := model.classDefaults[workload.class]

tier := model.priorities[effective_class]

# The priority class of a non-preemptible tier's work beyond a guarantee,
# admitted preemptible: it runs below every guaranteed tier, so schedulers
# that rank victims by value evict it first (Go: model.BorrowedClass, whose
# test keeps the two names in step).
borrowed_class(t) := sprintf("%s-borrowed", [t])

gpu_workload if workload.totalGPUs > 0

# The number of pods that must run together: the elastic minimum, else all.
gang_size := n if {
	n := workload.minPods
	n > 0
} else := workload.pods

violation(code, dimension, message) := {
	"code": code,
	"dimension": dimension,
	"message": message,
}

# reason is a violation or warning with the facts its message is rendered
# from, as data the Go side reads instead of the text: the tenant whose
# quota holds it, the resource and product, the limit, the current value
# and what the workload needs, the topology level and domain, the classes,
# keys and namespace it names (each only where it applies; see the Facts of
# the Go package evaluator). Every violation and warning goes through
# violation or reason: a test rewords every message here and checks that
# explain, the cluster report and the authority gauges do not change. (The
# object is written out rather than made by violation: one function call
# less on the admission path.)
reason(code, dimension, facts, message) := object.union(facts, {"code": code, "dimension": dimension, "message": message})

# verdict summarises a dimension's denials, as their enforcement stages them
# (see mandate.enforcement), and warnings: "deny", "warn", "dryrun" (only
# dryrun-stage denials: it would deny) or "ok".
verdict(deny, warn) := "deny" if {
	some v in deny
	enforcement.action(v) == "deny"
} else := "warn" if {
	count(warn) > 0
} else := "warn" if {
	some v in deny
	enforcement.action(v) == "warn"
} else := "dryrun" if {
	count(deny) > 0
} else := "ok"

# describe_classes renders classes with their values: "train (50), build (100)".
describe_classes(classes) := concat(", ", [sprintf("%s (%d)", [c, model.priorities[c].value]) |
	some c in classes
])

# tenant_names lists the tenants of the model, sorted.
tenant_names := concat(", ", sort(object.keys(model.tenants)))
