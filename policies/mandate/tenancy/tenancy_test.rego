package mandate.tenancy_test

import data.mandate.tenancy
import data.mandate.testing

test_namespace_without_tenant_is_denied if {
	inp := json.patch(testing.input_for("lab", {}), [{"op": "replace", "path": "/namespace", "value": {"name": "scratch", "labels": {}}}])
	some v in tenancy.deny with input as inp with data.mandate.model as testing.model
	v.code == "TENANT_MISSING"
	contains(v.message, "kubectl label namespace scratch mandate.dev/tenant=<tenant>")
	contains(v.message, "(tenants: lab, lab-a, lab-b, ops, org, svc)")
	tenancy.explain.current == "namespace scratch → tenant (none)" with input as inp with data.mandate.model as testing.model
}

test_unknown_tenant_is_denied if {
	some v in tenancy.deny with input as testing.input_for("marketing", {}) with data.mandate.model as testing.model
	v.code == "TENANT_UNKNOWN"
	v.message == `namespace "ns" is labelled mandate.dev/tenant=marketing, which is not a tenant of the authority model; known tenants: lab, lab-a, lab-b, ops, org, svc`
	tenancy.explain.verdict == "deny" with input as testing.input_for("marketing", {}) with data.mandate.model as testing.model
}

test_known_tenant_passes if {
	count(tenancy.deny) == 0 with input as testing.input_for("lab-a", {}) with data.mandate.model as testing.model
	e := tenancy.explain with input as testing.input_for("lab-a", {}) with data.mandate.model as testing.model
	e.verdict == "ok"
	e.limit == "namespace must name one of 6 tenants"
	e.current == "namespace ns → tenant lab-a"
}

test_tenancy_violations_carry_namespace_and_tenant if {
	some v in tenancy.deny with input as testing.input_for("marketing", {}) with data.mandate.model as testing.model
	[v.code, v.namespace, v.tenant] == ["TENANT_UNKNOWN", "ns", "marketing"]
	inp := json.patch(testing.input_for("lab", {}), [{"op": "replace", "path": "/namespace", "value": {"name": "scratch", "labels": {}}}])
	some m in tenancy.deny with input as inp with data.mandate.model as testing.model
	[m.code, m.namespace] == ["TENANT_MISSING", "scratch"]
	not m.tenant
}
