# METADATA
# title: Tenant quota
# description: |
#   Each tenant has guaranteed and ceiling GPUs per GPU resource, and may
#   have them per GPU product of the resource too (quota[r].products[p]:
#   nvidia.com/gpu × NVIDIA-H100-80GB-HBM3). A workload that names a product
#   (input.workload.gpuProduct) is held to that product's quota and to the
#   resource's, which covers every product together; one that names none to
#   the resource's only. Every ancestor caps its descendants. A workload
#   larger than a ceiling could never run and is denied. Non-preemptible
#   work may only use guaranteed GPUs: beyond the guarantee it is denied or
#   turned preemptible, as data.mandate.model.quotaPolicy.overGuarantee says. Current usage comes
#   from the cluster snapshot in input.usage (rolled up per tenant, keyed by
#   resource and by "resource@product").
package mandate.quota

import data.mandate.lib
import data.mandate.model

# Per decision, one pass over the chain: the quotas that limit the workload
# (nearest tenant first; a tenant's product quota before its resource
# quota) with their usage and what they count ("nvidia.com/gpu", or
# "NVIDIA-B200 nvidia.com/gpu" for a product's). Written without function
# calls: on the admission path each call costs some thirty allocations.
_limited := [l |
	r := input.workload.gpuResource
	p := object.get(input.workload, "gpuProduct", "")
	some t in lib.chain
	q := model.tenants[t].quota[r]
	some l in array.concat(
		[pl |
			p != ""
			pq := q.products[p]
			key := sprintf("%s@%s", [r, p])
			pl := {"tenant": t, "quota": pq, "key": key, "usage": object.get(input, ["usage", t, key], _no_usage), "what": sprintf("%s %s", [p, r]), "product": p}
		],
		[{"tenant": t, "quota": q, "key": r, "usage": object.get(input, ["usage", t, r], _no_usage), "what": r}],
	)
]

_no_usage := {"total": 0, "nonPreemptible": 0}

# _facts(l, limit, current) are the facts of a reason about limit l: the
# tenant that holds it, its resource and product ("" for the resource's
# quota over every product), the limit, the current value against it and
# what the workload needs. The warnings, on the admission path, build the
# same object inline.
_facts(l, limit, current) := {
	"tenant": l.tenant,
	"resource": input.workload.gpuResource,
	"product": object.get(l, "product", ""),
	"limit": limit,
	"current": current,
	"needs": input.workload.totalGPUs,
}

# The limited tenants whose ceiling the workload exceeds on its own, whose
# ceiling it exceeds with their current usage, and whose guarantee it exceeds
# with their non-preemptible usage. Each is a rule of its own, so a decision
# computes only those its rules ask for (a preemptible workload never needs
# the guarantees).
_breach := [l |
	some l in _limited
	input.workload.totalGPUs > l.quota.ceiling
]

_busy := [l |
	some l in _limited
	n := input.workload.totalGPUs
	n <= l.quota.ceiling
	l.usage.total + n > l.quota.ceiling
]

_guarantee := [l |
	some l in _limited
	l.usage.nonPreemptible + input.workload.totalGPUs > l.quota.guaranteed
]

# relied: every quota limit this decision read usage of, with what it saw
# and the outcomes it took from it, so that the decision can be made
# without holding the tenant tree's lock and committed only if no
# concurrent reservation flipped one of them (the Go side re-checks each
# against the usage at commit: cluster.State.DecideExcluding). busy: the
# limit's usage and the demand exceed its ceiling; overGuarantee: its
# non-preemptible usage and the demand exceed its guarantee. Exported by
# data.mandate.decision as "relied"; a custom quota policy that reads
# input.usage must list there every limit it read, or export no "relied"
# at all (then every change of the tenant chain's usage counts as a flip).
relied := [r |
	lib.gpu_workload
	n := input.workload.totalGPUs
	some l in _limited
	r := {
		"tenant": l.tenant,
		"usage": l.key,
		"ceiling": l.quota.ceiling,
		"guaranteed": l.quota.guaranteed,
		"demand": n,
		"seen": l.usage,
		"busy": (l.usage.total + n) > l.quota.ceiling,
		"overGuarantee": (l.usage.nonPreemptible + n) > l.quota.guaranteed,
	}
]

deny contains v if {
	lib.tenant_known
	lib.gpu_workload
	count(_limited) == 0
	facts := {
		"tenant": lib.tenant,
		"resource": input.workload.gpuResource,
		"product": object.get(input.workload, "gpuProduct", ""),
		"needs": input.workload.totalGPUs,
	}
	v := lib.reason("QUOTA_NO_RESOURCE", "quota", facts, sprintf(
		"tenant %s has no quota for %s (neither it nor its parents %v); ask for a quota or request a GPU resource it has",
		[lib.tenant, input.workload.gpuResource, array.slice(lib.chain, 1, count(lib.chain))],
	))
}

deny contains v if {
	lib.gpu_workload
	l := _breach[0]
	v := lib.reason("QUOTA_EXCEEDS_CEILING", "quota", _facts(l, l.quota.ceiling, l.usage.total), sprintf(
		"the workload needs %d %s but tenant %s's ceiling is %d, so it could never run; ask for at most %d or have the ceiling of %s raised",
		[input.workload.totalGPUs, l.what, l.tenant, l.quota.ceiling, l.quota.ceiling, l.tenant],
	))
}

warn contains v if {
	lib.gpu_workload
	count(_breach) == 0
	l := _busy[0]
	n := input.workload.totalGPUs
	free := l.quota.ceiling - l.usage.total

	# The facts inline, not through _facts: on the admission path a
	# function call costs about thirty allocations.
	facts := {"tenant": l.tenant, "resource": input.workload.gpuResource, "product": object.get(l, "product", ""), "limit": l.quota.ceiling, "current": l.usage.total, "needs": n}
	v := lib.reason("QUOTA_CEILING_BUSY", "quota", facts, sprintf(
		"tenant %s uses %d of its %d %s ceiling; this workload needs %d and waits in the queue until %d more are released",
		[l.tenant, l.usage.total, l.quota.ceiling, l.what, n, n - free],
	))
}

# over_guarantee: this non-preemptible workload would go beyond a guarantee.
over_guarantee if {
	lib.gpu_workload
	lib.tier.preemptible == false
	_guarantee[0]
}

_over_guarantee_message(l) := sprintf(
	"non-preemptible work may only use guaranteed GPUs: tenant %s has %d of %d guaranteed %s in non-preemptible use and this workload needs %d more",
	[l.tenant, l.usage.nonPreemptible, l.quota.guaranteed, l.what, input.workload.totalGPUs],
)

deny contains v if {
	model.quotaPolicy.overGuarantee == "deny"
	over_guarantee
	l := _guarantee[0]
	facts := object.union(_facts(l, l.quota.guaranteed, l.usage.nonPreemptible), {"classes": _preemptible_allowed})
	v := lib.reason("QUOTA_OVER_GUARANTEE", "quota", facts, sprintf(
		"%s; use a preemptible class (%s)",
		[_over_guarantee_message(l), lib.describe_classes(_preemptible_allowed)],
	))
}

warn contains v if {
	model.quotaPolicy.overGuarantee == "preemptible"
	over_guarantee
	l := _guarantee[0]
	facts := {"tenant": l.tenant, "resource": input.workload.gpuResource, "product": object.get(l, "product", ""), "limit": l.quota.guaranteed, "current": l.usage.nonPreemptible, "needs": input.workload.totalGPUs}
	v := lib.reason("QUOTA_TURNED_PREEMPTIBLE", "quota", facts, sprintf(
		"%s, so it runs preemptible: it may be stopped when guaranteed work needs the GPUs",
		[_over_guarantee_message(l)],
	))
}

_preemptible_allowed := [c |
	some c in lib.allowed_classes
	model.priorities[c].preemptible
]

# The tenant whose numbers explain the verdict: the one in breach, else the
# nearest one with a quota.
_shown := l if {
	l := _breach[0]
} else := l if {
	l := _busy[0]
} else := l if {
	over_guarantee
	l := _guarantee[0]
} else := _limited[0]

explain := {
	"dimension": "quota",
	"verdict": lib.verdict(deny, warn),
	"limit": sprintf("tenant %s: guaranteed %d, ceiling %d %s", [_shown.tenant, _shown.quota.guaranteed, _shown.quota.ceiling, _shown.what]),
	"current": sprintf("%d in use (%d non-preemptible) + %d requested%s", [_shown.usage.total, _shown.usage.nonPreemptible, input.workload.totalGPUs, _by_product(_shown.tenant)]),
} if {
	lib.gpu_workload
	_shown
}

# The tenant's usage of the workload's resource per GPU product, for the
# explanation: "; by product: NVIDIA-B200 8 (8 non-preemptible), …"; "" when
# none of its usage names a product.
_by_product(t) := sprintf("; by product: %s", [concat(", ", parts)]) if {
	prefix := sprintf("%s@", [input.workload.gpuResource])
	parts := [sprintf("%s %d (%d non-preemptible)", [trim_prefix(key, prefix), u.total, u.nonPreemptible]) |
		some key in sort(object.keys(object.get(input, ["usage", t], {})))
		startswith(key, prefix)
		u := input.usage[t][key]
	]
	count(parts) > 0
} else := ""

explain := {
	"dimension": "quota",
	"verdict": "ok",
	"limit": "GPU quota",
	"current": "no GPUs requested",
} if {
	lib.tenant_known
	not lib.gpu_workload
}
