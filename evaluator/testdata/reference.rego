# The best-fit placement of mandate.placement, written in pure Rego over
# per-domain node data, for the benchmark's reference. Same rule: among the
# domains of the required level where floor(free/gpusPerPod) summed over the
# nodes reaches pods, the one with the fewest free GPUs of the wanted product,
# ties broken by domain key.
package reference

default result := {"fitsNow": false, "domain": "", "free": 0}

result := {"fitsNow": true, "domain": _best[1], "free": _best[0]} if count(_fits) > 0

_fits contains [free, key] if {
	g := input.request.gpusPerPod

	# Bound first: a data reference inside `some … in` is one Gatekeeper does
	# not move when it runs this file as a ConstraintTemplate library.
	domains := data.reference.domains[input.request.requiredLevel]
	some key, nodes in domains
	usable := [n[0] | some n in nodes; _product_ok(n[1])]
	sum([floor(f / g) | some f in usable]) >= input.request.pods
	free := sum(usable)
}

_best := min(_fits)

_product_ok(_) if input.request.product == ""

_product_ok(p) if p == input.request.product
