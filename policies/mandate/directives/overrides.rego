# The user's own scheduler keys.
#
# A workload may ask its scheduler for a queue, a gang minimum or a
# preemptibility through the scheduler's native keys (kai.scheduler/queue,
# scheduling.volcano.sh/queue-name, kai.scheduler/batch-min-member, a
# Volcano Job's spec.queue and spec.minAvailable, volcano.sh/preemptable).
# The Go normaliser lists them as input.workload.schedulerKeys (key, what
# it asks, value), so Rego names no scheduler's key. What the model allows
# is kept; what it decides otherwise is never overwritten silently: each
# override is a SCHEDULER_KEY_OVERRIDDEN message naming the key, the value
# asked and the value set. It is a warning unless the authority data's
# enforcement lists the code, which then stages it (deny, warn, dryrun)
# like any violation. Priority classes need no override: the class asked
# is kept or denied (mandate.priority).
package mandate.directives

import data.mandate.lib
import data.mandate.model
import data.mandate.preemption

# The overrides are warnings unless the enforcement data lists their code.
warn contains v if {
	some v in _overrides
	not _staged
}

deny contains v if {
	some v in _overrides
	_staged
}

_staged if model.enforcement.SCHEDULER_KEY_OVERRIDDEN

_keys := object.get(input.workload, "schedulerKeys", [])

_overrides contains lib.reason("SCHEDULER_KEY_OVERRIDDEN", "tenancy", {"key": k.key, "asked": k.value, "queue": d.queue, "tenant": lib.tenant}, sprintf(
	"%s asks for queue %q, but the authority model sets queue %q for tenant %s",
	[k.key, k.value, d.queue, lib.tenant],
)) if {
	d := directives
	some k in _keys
	k.asks == "queue"
	k.value != d.queue
}

_overrides contains lib.reason("SCHEDULER_KEY_OVERRIDDEN", "preemption", {"key": k.key, "asked": k.value, "limit": d.gangMin}, sprintf(
	"%s asks for a gang minimum of %s pods, but the authority model sets %d (the elastic minimum, else every pod); declare the minimum with mandate.dev/min-available",
	[k.key, k.value, d.gangMin],
)) if {
	d := directives
	d.gangMin > 0
	some k in _keys
	k.asks == "gangMin"
	to_number(k.value) != d.gangMin
}

_overrides contains lib.reason("SCHEDULER_KEY_OVERRIDDEN", "preemption", {"key": input.workload.requestedPreemptibleBy, "class": lib.effective_class, "tenant": lib.tenant}, sprintf(
	"%s asks to be preemptible, but the authority model makes %s work of tenant %s non-preemptible",
	[input.workload.requestedPreemptibleBy, lib.effective_class, lib.tenant],
)) if {
	directives
	input.workload.requestedPreemptible == true
	not preemption.preemptible_flag
}
