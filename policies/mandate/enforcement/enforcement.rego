# METADATA
# title: Staged enforcement
# description: |
#   What a violation does, read from the authority data
#   (data.mandate.model.enforcement): "deny" denies the workload, "warn"
#   admits it and shows the violation as a warning, "dryrun" admits it
#   silently and only records the violation. Keys are violation codes
#   ("TOPOLOGY_NEVER_FITS") or dimensions ("quota"); a code's entry wins over
#   its dimension's, and anything unlisted denies. So a new rule can go out
#   as dryrun, then warn, then deny by editing data only. An entry whose
#   value is anything else denies too (never weaker), and says so.
package mandate.enforcement

import data.mandate.model

# The enforcement actions, mildest last.
actions := {"deny", "warn", "dryrun"}

# _entry(v) is [key, value] of the enforcement entry that applies to
# violation v: its code's, else its dimension's; undefined when neither is
# listed.
_entry(v) := [v.code, a] if {
	a := model.enforcement[v.code]
} else := [v.dimension, a] if {
	a := model.enforcement[v.dimension]
}

# action(v) is what violation v does: deny, warn or dryrun.
action(v) := a if {
	[_, a] := _entry(v)
	a in actions
} else := "deny"

# misconfigured(v) names the entry that applies to v when its value is not
# an action (v then denies); undefined otherwise.
misconfigured(v) := sprintf(
	"%s: enforcement %s of %q in the authority data (enforcement) is not deny, warn or dryrun, so it denies",
	[v.code, json.marshal(a), key],
) if {
	[key, a] := _entry(v)
	not a in actions
}
