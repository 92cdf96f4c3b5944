package mandate.tenancy_test

import data.mandate.tenancy
import data.mandate.testing

test_namespace_without_tenant_is_denied if {
	inp := json.patch(testing.input_for("research", {}), [{"op": "replace", "path": "/namespace", "value": {"name": "scratch", "labels": {}}}])
	some v in tenancy.deny with input as inp with data.mandate.model as testing.model
	v.code == "TENANT_MISSING"
	contains(v.message, "kubectl label namespace scratch mandate.dev/tenant=<tenant>")
}

test_unknown_tenant_is_denied if {
	some v in tenancy.deny with input as testing.input_for("marketing", {}) with data.mandate.model as testing.model
	v.code == "TENANT_UNKNOWN"
	contains(v.message, "mandate.dev/tenant=marketing")
	contains(v.message, "research-llm")
}

test_known_tenant_passes if {
	count(tenancy.deny) == 0 with input as testing.input_for("research-llm", {}) with data.mandate.model as testing.model
	tenancy.explain.verdict == "ok" with input as testing.input_for("research-llm", {}) with data.mandate.model as testing.model
}
