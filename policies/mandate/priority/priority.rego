# METADATA
# title: Priority hierarchy
# description: |
#   Priority classes are tiers with values. Each tenant may use only the
#   classes the authority model grants it; a workload that names none gets the
#   default class for its workload class.
package mandate.priority

import data.mandate.lib
import data.mandate.model

deny contains v if {
	lib.tenant_known
	not _class_ok
	v := _violation
}

# The workload's class is a tier the tenant may use.
_class_ok if {
	c := lib.effective_class
	model.priorities[c]
	c in lib.allowed_classes
}

# The facts of a priority violation: the tenant, the class asked for (none
# when its workload class has no default) and the classes it may use.
_facts := {"tenant": lib.tenant, "classes": lib.allowed_classes}

_violation := lib.reason("PRIORITY_NO_DEFAULT", "priority", _facts, sprintf(
	"workload class %q has no default priority class in the authority model; set spec.priorityClassName to one of: %s",
	[lib.workload.class, lib.describe_classes(lib.allowed_classes)],
)) if {
	not lib.effective_class
} else := lib.reason("PRIORITY_UNKNOWN", "priority", object.union(_facts, {"class": lib.effective_class}), sprintf(
	"priority class %q is not a tier of the authority model; tenant %s may use: %s",
	[c, lib.tenant, lib.describe_classes(lib.allowed_classes)],
)) if {
	c := lib.effective_class
	not model.priorities[c]
} else := lib.reason("PRIORITY_NOT_ALLOWED", "priority", object.union(_facts, {"class": lib.effective_class}), sprintf(
	"priority class %s (%d) is above tenant %s's tier; it may use: %s",
	[c, lib.tier.value, lib.tenant, lib.describe_classes(lib.allowed_classes)],
)) if {
	c := lib.effective_class
	model.priorities[c]
	not c in lib.allowed_classes
}

explain := {
	"dimension": "priority",
	"verdict": lib.verdict(deny, set()),
	"limit": sprintf("allowed: %s", [lib.describe_classes(lib.allowed_classes)]),
	"current": sprintf("%s (%s)", [lib.effective_class, _source]),
} if lib.tenant_known

_source := "requested" if {
	lib.workload.priorityClass != ""
} else := sprintf("default for %s", [lib.workload.class])
