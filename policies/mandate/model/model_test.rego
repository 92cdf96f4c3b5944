# Tests of the shipped authority data (data.json beside this file), not of
# the policy logic: an organisation replacing the example model replaces
# these with its own.
package mandate.model_test

import data.mandate.enforcement

# The shipped authority data names only known actions, so a typo fails CI
# (and `mandate bundle build --test`) before it ships.
test_authority_data_names_only_known_actions if {
	every key, a in data.mandate.model.enforcement {
		is_string(key)
		a in enforcement.actions
	}
}

test_authority_data_check_catches_a_typo if {
	not _all_known with data.mandate.model.enforcement as {"quota": "dryrun", "topology": "denny"}
}

_all_known if {
	every a in data.mandate.model.enforcement {
		a in enforcement.actions
	}
}
