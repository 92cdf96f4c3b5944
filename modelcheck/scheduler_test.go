package modelcheck_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/modelcheck"
	"github.com/mandate-dev/mandate/policies"
	"github.com/mandate-dev/mandate/scheduler"
)

// The schedulers a tenant may name are those with an adapter, and the
// schema offers editors the same list.
func TestSchedulersHaveAdapters(t *testing.T) {
	for _, s := range modelcheck.Schedulers() {
		_, err := scheduler.For(s)
		assert.NoError(t, err, "scheduler %s has no adapter", s)
	}
	assert.Contains(t, modelcheck.Schedulers(), scheduler.Default)

	var schema struct {
		Defs map[string]struct {
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(policies.ModelSchema, &schema))
	assert.Equal(t, modelcheck.Schedulers(), schema.Defs["tenant"].Properties["scheduler"].Enum)
}
