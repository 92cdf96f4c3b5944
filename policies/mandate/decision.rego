# METADATA
# title: Mandate decision
# description: |
#   The one entrypoint the Go side reads: whether the workload is allowed,
#   every violation with its authority dimension and a message a person can
#   act on, warnings, the scheduler directives and a per-dimension
#   explanation (verdict, limit, current value).
# entrypoint: true
package mandate

import data.mandate.directives
import data.mandate.preemption
import data.mandate.priority
import data.mandate.quota
import data.mandate.tenancy
import data.mandate.topology

_denies := (((tenancy.deny | priority.deny) | quota.deny) | topology.deny) | preemption.deny

_warns := quota.warn | topology.warn

_explains contains tenancy.explain

_explains contains priority.explain

_explains contains quota.explain

_explains contains topology.explain

_explains contains preemption.explain

decision := {
	"allowed": count(_denies) == 0,
	"violations": [v | some v in sort(_denies)],
	"warnings": sort([w.message | some w in _warns]),
	"directives": _directives,
	"explanations": [e |
		some d in ["tenancy", "priority", "quota", "topology", "preemption"]
		some e in _explains
		e.dimension == d
	],
}

_directives := directives.directives if {
	directives.directives
} else := {}
