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

_denies := (((tenancy.deny | priority.deny) | quota.deny) | topology.deny) | preemption.deny

_warns := quota.warn | topology.warn

_explain["tenancy"] := tenancy.explain

_explain["priority"] := priority.explain

_explain["quota"] := quota.explain

_explain["topology"] := topology.explain

_explain["preemption"] := preemption.explain

# METADATA
# entrypoint: true
decision := {
	"allowed": count(_denies) == 0,
	"violations": [v | some v in sort(_denies)],
	"warnings": sort([w.message | some w in _warns]),
	"directives": _directives,
}

# METADATA
# entrypoint: true
explanations := [_explain[d] |
	some d in ["tenancy", "priority", "quota", "topology", "preemption"]
	_explain[d]
]

_directives := directives.directives if {
	directives.directives
} else := {}
