# METADATA
# title: Tenant quota
# description: |
#   Each tenant has guaranteed and ceiling GPUs per GPU resource, and every
#   ancestor caps its descendants. A workload larger than a ceiling could
#   never run and is denied. Non-preemptible work may only use guaranteed
#   GPUs: beyond the guarantee it is denied or turned preemptible, as
#   data.mandate.model.quotaPolicy.overGuarantee says. Current usage comes
#   from the cluster snapshot in input.usage (rolled up per tenant).
package mandate.quota

import data.mandate.lib
import data.mandate.model

_resource := lib.workload.gpuResource

_request := lib.workload.totalGPUs

# The tenants of the chain that set a quota for the resource, nearest first.
_limited := [t |
	some t in lib.chain
	model.tenants[t].quota[_resource]
]

_quota(t) := _quotas[t]

_usage(t) := _usages[t]

# Quota and usage per limited tenant, computed once per decision.
_quotas := {t: model.tenants[t].quota[_resource] | some t in _limited}

_usages := {t: object.get(input, ["usage", t, _resource], _no_usage) | some t in _limited}

_no_usage := {"total": 0, "nonPreemptible": 0}

deny contains v if {
	lib.tenant_known
	lib.gpu_workload
	count(_limited) == 0
	v := lib.violation("QUOTA_NO_RESOURCE", "quota", sprintf(
		"tenant %s has no quota for %s (neither it nor its parents %v); ask for a quota or request a GPU resource it has",
		[lib.tenant, _resource, array.slice(lib.chain, 1, count(lib.chain))],
	))
}

# The nearest tenant whose ceiling the workload alone exceeds.
_ceiling_breach := [t |
	some t in _limited
	_request > _quota(t).ceiling
][0]

deny contains v if {
	lib.gpu_workload
	t := _ceiling_breach
	v := lib.violation("QUOTA_EXCEEDS_CEILING", "quota", sprintf(
		"the workload needs %d %s but tenant %s's ceiling is %d, so it could never run; ask for at most %d or have the ceiling of %s raised",
		[_request, _resource, t, _quota(t).ceiling, _quota(t).ceiling, t],
	))
}

# The nearest tenant whose ceiling is too full right now.
_ceiling_busy := [t |
	some t in _limited
	_request <= _quota(t).ceiling
	_usage(t).total + _request > _quota(t).ceiling
][0]

warn contains v if {
	lib.gpu_workload
	not _ceiling_breach
	t := _ceiling_busy
	free := _quota(t).ceiling - _usage(t).total
	v := lib.violation("QUOTA_CEILING_BUSY", "quota", sprintf(
		"tenant %s uses %d of its %d %s ceiling; this workload needs %d and waits in the queue until %d more are released",
		[t, _usage(t).total, _quota(t).ceiling, _resource, _request, _request - free],
	))
}

# The nearest tenant whose guarantee non-preemptible work would exceed.
_guarantee_breach := [t |
	some t in _limited
	_usage(t).nonPreemptible + _request > _quota(t).guaranteed
][0]

# over_guarantee: this non-preemptible workload would go beyond a guarantee.
over_guarantee if {
	lib.gpu_workload
	lib.tier.preemptible == false
	_guarantee_breach
}

_over_guarantee_message(t) := sprintf(
	"non-preemptible work may only use guaranteed GPUs: tenant %s has %d of %d guaranteed %s in non-preemptible use and this workload needs %d more",
	[t, _usage(t).nonPreemptible, _quota(t).guaranteed, _resource, _request],
)

deny contains v if {
	over_guarantee
	model.quotaPolicy.overGuarantee == "deny"
	v := lib.violation("QUOTA_OVER_GUARANTEE", "quota", sprintf(
		"%s; use a preemptible class (%s)",
		[_over_guarantee_message(_guarantee_breach), lib.describe_classes(_preemptible_allowed)],
	))
}

warn contains v if {
	over_guarantee
	model.quotaPolicy.overGuarantee == "preemptible"
	v := lib.violation("QUOTA_TURNED_PREEMPTIBLE", "quota", sprintf(
		"%s, so it runs preemptible: it may be stopped when guaranteed work needs the GPUs",
		[_over_guarantee_message(_guarantee_breach)],
	))
}

_preemptible_allowed := [c |
	some c in lib.allowed_classes
	model.priorities[c].preemptible
]

# The tenant whose numbers explain the verdict: the one in breach, else the
# nearest one with a quota.
_shown := t if {
	t := _ceiling_breach
} else := t if {
	t := _ceiling_busy
} else := t if {
	over_guarantee
	t := _guarantee_breach
} else := _limited[0]

explain := {
	"dimension": "quota",
	"verdict": lib.verdict(deny, warn),
	"limit": sprintf("tenant %s: guaranteed %d, ceiling %d %s", [_shown, _quota(_shown).guaranteed, _quota(_shown).ceiling, _resource]),
	"current": sprintf("%d in use (%d non-preemptible) + %d requested", [_usage(_shown).total, _usage(_shown).nonPreemptible, _request]),
} if {
	lib.gpu_workload
	_shown
}

explain := {
	"dimension": "quota",
	"verdict": "ok",
	"limit": "GPU quota",
	"current": "no GPUs requested",
} if {
	lib.tenant_known
	not lib.gpu_workload
}
