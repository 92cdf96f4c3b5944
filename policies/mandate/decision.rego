# METADATA
# title: Mandate decision
# description: |
#   The entrypoints the Go side reads. decision, on every admission: whether
#   the workload is allowed, every violation with its authority dimension and
#   a message a person can act on, warnings and the scheduler directives.
#   Violations are staged by data.mandate.model.enforcement (see
#   mandate.enforcement): violations holds the deny-stage ones (any denies),
#   warned the warn-stage ones (admitted; their messages, prefixed with the
#   code, are among warnings) and dryrun the dryrun-stage ones (admitted
#   silently, only recorded). Every violation carries the facts its message
#   is rendered from (mandate.lib.reason); reasons are the warnings as such
#   data, each with the text it is shown as among warnings.
#   relied lists the quota limits the decision took from input.usage (see
#   mandate.quota.relied), so that it can be committed without deciding
#   under a lock.
#   explanations, on demand (denials, mandate eval, decision logs): per
#   dimension the verdict, the limit and the current value.
package mandate

import data.mandate.directives
import data.mandate.enforcement
import data.mandate.preemption
import data.mandate.priority
import data.mandate.quota
import data.mandate.tenancy
import data.mandate.topology

_explain["tenancy"] := tenancy.explain

_explain["priority"] := priority.explain

_explain["quota"] := quota.explain

_explain["topology"] := topology.explain

_explain["preemption"] := preemption.explain

# METADATA
# entrypoint: true
decision := {
	"allowed": count(violations) == 0,
	"violations": violations,
	"warned": warned,
	"dryrun": dryrun,
	"warnings": sort(array.concat(
		[r.warning | some r in reasons],
		[m | some v in staged; m := _staged_warning(v)],
	)),
	"reasons": reasons,
	"directives": array.concat([d | d := directives.directives], [{}])[0],
	"relied": quota.relied,
} if {
	denies := ((((tenancy.deny | priority.deny) | quota.deny) | topology.deny) | preemption.deny) | directives.deny

	# Each violation carries its enforcement action (data, not Rego, says
	# which): only deny-stage ones deny.
	staged := [object.union(v, {"enforcement": enforcement.action(v)}) | some v in sort(denies)]
	violations := [v | some v in staged; v.enforcement == "deny"]
	warned := [v | some v in staged; v.enforcement == "warn"]
	dryrun := [v | some v in staged; v.enforcement == "dryrun"]
}

# reasons are the warn-set warnings as data: each with its code,
# dimension, message and facts (see mandate.lib.reason), and warning, the
# text it is shown as among the decision's warnings (an override's message
# prefixed with its code). The warnings are made from them, so a decision
# pays for the texts once.
reasons := array.concat(
	[object.union(w, {"warning": w.message}) | some w in (quota.warn | topology.warn)],
	[object.union(w, {"warning": sprintf("%s: %s", [w.code, w.message])}) | some w in directives.warn],
)

# _staged_warning(v) is what the user is told about a staged violation: a
# warn-stage one's message, prefixed with its code, or why an enforcement
# entry was not understood.
_staged_warning(v) := sprintf("%s: %s", [v.code, v.message]) if v.enforcement == "warn"

_staged_warning(v) := enforcement.misconfigured(v)

# METADATA
# entrypoint: true
explanations := [_explain[d] |
	some d in ["tenancy", "priority", "quota", "topology", "preemption"]
	_explain[d]
]
