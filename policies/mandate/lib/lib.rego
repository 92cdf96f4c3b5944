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

workload := input.workload

# The tenant comes from the namespace label, never from the workload.
tenant := input.namespace.labels["mandate.dev/tenant"]

tenant_known if model.tenants[tenant]

# The tenant and its ancestors, nearest first. Hierarchies up to six deep.
chain := [t |
	some t in [tenant, _a1, _a2, _a3, _a4, _a5]
	t != ""
]

_up(t) := p if {
	p := model.tenants[t].parent
} else := ""

_a1 := _up(tenant)

_a2 := _up(_a1)

_a3 := _up(_a2)

_a4 := _up(_a3)

_a5 := _up(_a4)

# inherited(key) is the value of key on the nearest tenant of the chain that
# sets it.
inherited(key) := [v |
	some t in chain
	v := model.tenants[t][key]
][0]

# The priority classes the tenant may use (its own list, else its parent's).
allowed_classes := inherited("priorityClasses")

# The class the workload runs at: what it asked for, else the default for its
# workload class.
effective_class := workload.priorityClass if {
	workload.priorityClass != ""
} else := model.classDefaults[workload.class]

tier := model.priorities[effective_class]

gpu_workload if workload.totalGPUs > 0

# The number of pods that must run together: the elastic minimum, else all.
gang_size := workload.minPods if {
	workload.minPods > 0
} else := workload.pods

violation(code, dimension, message) := {
	"code": code,
	"dimension": dimension,
	"message": message,
}

# verdict summarises a dimension's denials and warnings.
verdict(deny, warn) := "deny" if {
	count(deny) > 0
} else := "warn" if {
	count(warn) > 0
} else := "ok"

# describe_classes renders classes with their values: "train (50), build (100)".
describe_classes(classes) := concat(", ", [sprintf("%s (%d)", [c, model.priorities[c].value]) |
	some c in classes
])

# tenant_names lists the tenants of the model, sorted.
tenant_names := concat(", ", sort(object.keys(model.tenants)))
