package mandate.enforcement_test

import data.mandate.enforcement
import data.mandate.testing

_v := {"code": "TOPOLOGY_NEVER_FITS", "dimension": "topology", "message": "m"}

test_unlisted_violation_denies if {
	enforcement.action(_v) == "deny" with data.mandate.model as testing.staged({})
	enforcement.action(_v) == "deny" with data.mandate.model as testing.staged({"quota": "dryrun"})
	enforcement.action(_v) == "deny" with data.mandate.model as object.remove(testing.model, ["enforcement"])
}

test_dimension_entry_applies if {
	enforcement.action(_v) == "warn" with data.mandate.model as testing.staged({"topology": "warn"})
	enforcement.action(_v) == "dryrun" with data.mandate.model as testing.staged({"topology": "dryrun"})
}

test_code_entry_wins_over_dimension if {
	enforcement.action(_v) == "dryrun" with data.mandate.model as testing.staged({"topology": "deny", "TOPOLOGY_NEVER_FITS": "dryrun"})
	enforcement.action(_v) == "deny" with data.mandate.model as testing.staged({"topology": "dryrun", "TOPOLOGY_NEVER_FITS": "deny"})
}

test_unknown_action_denies_and_names_the_entry if {
	enforcement.action(_v) == "deny" with data.mandate.model as testing.staged({"topology": "warn", "TOPOLOGY_NEVER_FITS": "off"})
	msg := enforcement.misconfigured(_v) with data.mandate.model as testing.staged({"topology": "warn", "TOPOLOGY_NEVER_FITS": "off"})
	msg == `TOPOLOGY_NEVER_FITS: enforcement "off" of "TOPOLOGY_NEVER_FITS" in the authority data (enforcement) is not deny, warn or dryrun, so it denies`
}

test_non_string_action_denies if {
	enforcement.action(_v) == "deny" with data.mandate.model as testing.staged({"topology": false})
	contains(enforcement.misconfigured(_v), `enforcement false of "topology"`) with data.mandate.model as testing.staged({"topology": false})
}

test_known_action_is_not_misconfigured if {
	not enforcement.misconfigured(_v) with data.mandate.model as testing.staged({"topology": "dryrun"})
	not enforcement.misconfigured(_v) with data.mandate.model as testing.staged({})
}
