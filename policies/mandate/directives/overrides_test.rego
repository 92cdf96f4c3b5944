package mandate.directives_test

import data.mandate
import data.mandate.directives
import data.mandate.testing

_keys(keys) := {"schedulerKeys": keys}

test_queue_the_model_sets_is_kept_silently if {
	inp := testing.input_for("lab-a", _keys([{"key": "label kai.scheduler/queue", "asks": "queue", "value": "lab-a-queue"}]))
	count(directives.warn) == 0 with input as inp with data.mandate.model as testing.model
}

test_overridden_queue_is_named_with_both_values if {
	inp := testing.input_for("lab-a", _keys([{"key": "label kai.scheduler/queue", "asks": "queue", "value": "root-eng-prod"}]))
	w := directives.warn with input as inp with data.mandate.model as testing.model
	w == {{
		"code": "SCHEDULER_KEY_OVERRIDDEN", "dimension": "tenancy",
		"message": "label kai.scheduler/queue asks for queue \"root-eng-prod\", but the authority model sets queue \"lab-a-queue\" for tenant lab-a",
		"key": "label kai.scheduler/queue", "asked": "root-eng-prod", "queue": "lab-a-queue", "tenant": "lab-a",
	}}
}

test_override_is_a_warning_in_the_decision if {
	inp := testing.input_for("lab-a", object.union(testing.gang(3, 8), _keys([{"key": "spec.queue", "asks": "queue", "value": "default"}])))
	d := mandate.decision with input as inp with data.mandate.model as testing.model with data.mandate.cluster as testing.cluster
	d.allowed
	"SCHEDULER_KEY_OVERRIDDEN: spec.queue asks for queue \"default\", but the authority model sets queue \"lab-a-queue\" for tenant lab-a" in d.warnings
}

test_enforcement_can_deny_overrides if {
	inp := testing.input_for("lab-a", _keys([{"key": "spec.queue", "asks": "queue", "value": "default"}]))
	m := object.union(testing.model, {"enforcement": {"SCHEDULER_KEY_OVERRIDDEN": "deny"}})
	count(directives.warn) == 0 with input as inp with data.mandate.model as m
	count(directives.deny) == 1 with input as inp with data.mandate.model as m
}

test_gang_minimum_the_model_keeps_is_silent if {
	inp := testing.input_for("lab-a", object.union(
		{"pods": 6, "minPods": 2, "gpusPerPod": 8, "totalGPUs": 48},
		_keys([{"key": "annotation kai.scheduler/batch-min-member", "asks": "gangMin", "value": "2"}]),
	))
	directives.directives.gangMin == 2 with input as inp with data.mandate.model as testing.model
	count(directives.warn) == 0 with input as inp with data.mandate.model as testing.model
}

test_overridden_gang_minimum_is_named if {
	inp := testing.input_for("lab-a", object.union(
		{"pods": 6, "minPods": 3, "gpusPerPod": 8, "totalGPUs": 48},
		_keys([{"key": "spec.minAvailable", "asks": "gangMin", "value": "2"}]),
	))
	some w in directives.warn with input as inp with data.mandate.model as testing.model
	w.message == "spec.minAvailable asks for a gang minimum of 2 pods, but the authority model sets 3 (the elastic minimum, else every pod); declare the minimum with mandate.dev/min-available"
}

test_asking_preemptible_at_a_non_preemptible_tier_is_named if {
	inp := testing.input_for("svc", {"class": "inference", "gpusPerPod": 1, "totalGPUs": 1, "requestedPreemptible": true, "requestedPreemptibleBy": "volcano.sh/preemptable=true"})
	some w in directives.warn with input as inp with data.mandate.model as testing.model
	startswith(w.message, "volcano.sh/preemptable=true asks to be preemptible, but the authority model makes critical work")
}
