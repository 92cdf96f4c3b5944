# METADATA
# title: Tenancy
# description: |
#   Every governed namespace belongs to exactly one tenant of the authority
#   model, named by its mandate.dev/tenant label.
package mandate.tenancy

import data.mandate.lib
import data.mandate.model

deny contains v if {
	not lib.tenant_known
	v := _violation
}

_violation := lib.reason("TENANT_MISSING", "tenancy", {"namespace": input.namespace.name}, sprintf(
	"namespace %q has no mandate.dev/tenant label, so no tenant's authority covers it; ask a Mandate admin to run: kubectl label namespace %s mandate.dev/tenant=<tenant> (tenants: %s)",
	[input.namespace.name, input.namespace.name, lib.tenant_names],
)) if {
	not lib.tenant
} else := lib.reason("TENANT_UNKNOWN", "tenancy", {"namespace": input.namespace.name, "tenant": lib.tenant}, sprintf(
	"namespace %q is labelled mandate.dev/tenant=%s, which is not a tenant of the authority model; known tenants: %s",
	[input.namespace.name, lib.tenant, lib.tenant_names],
)) if {
	lib.tenant
}

explain := {
	"dimension": "tenancy",
	"verdict": lib.verdict(deny, set()),
	"limit": sprintf("namespace must name one of %d tenants", [count(model.tenants)]),
	"current": sprintf("namespace %s → tenant %s", [input.namespace.name, object.get(input.namespace, ["labels", "mandate.dev/tenant"], "(none)")]),
}
