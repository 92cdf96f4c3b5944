# METADATA
# title: Mandate decision
# description: |
#   The entrypoints the Go side reads. decision, on every admission: whether
#   the workload is allowed, every violation with its authority dimension and
#   a message a person can act on, warnings and the scheduler directives.
#   explanations, on demand (denials, mandate eval, decision logs): per
#   dimension the verdict, the limit and the current value.
package mandate

import data.mandate.directives
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
	"allowed": count(denies) == 0,
	"violations": [v | some v in sort(denies)],
	"warnings": sort([w.message | some w in (quota.warn | topology.warn)]),
	"directives": array.concat([d | d := directives.directives], [{}])[0],
} if {
	denies := (((tenancy.deny | priority.deny) | quota.deny) | topology.deny) | preemption.deny
}

# METADATA
# entrypoint: true
explanations := [_explain[d] |
	some d in ["tenancy", "priority", "quota", "topology", "preemption"]
	_explain[d]
]
