package config_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/decisionlog"
)

func TestDecisionLogKeys(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	d := decisionlog.DefaultOptions()
	assert.Equal(t, config.DecisionLog{Enabled: d.Enabled, SampleRate: d.SampleRate, IncludeObject: d.IncludeObject},
		config.Default().DecisionLog, "every decision, no objects, by default")

	got, err := load(t, "decisionLog:\n  enabled: false\n  sampleRate: 0.25\n  includeObject: true\n", nil)
	require.NoError(t, err)
	assert.Equal(t, config.DecisionLog{Enabled: false, SampleRate: 0.25, IncludeObject: true}, got.DecisionLog, "from the file")

	t.Run("env over file", func(t *testing.T) {
		got, err := load(t, "decisionLog:\n  sampleRate: 1\n", map[string]string{
			"MANDATE_DECISION_LOG_SAMPLE_RATE": "0.1", "MANDATE_DECISION_LOG_INCLUDE_OBJECT": "true", "MANDATE_DECISION_LOG_ENABLED": "true"})
		require.NoError(t, err)
		assert.Equal(t, config.DecisionLog{Enabled: true, SampleRate: 0.1, IncludeObject: true}, got.DecisionLog)
	})

	for _, tc := range []struct {
		name, file string
		env        map[string]string
		want       string
	}{
		{name: "rate above 1", file: "decisionLog:\n  sampleRate: 1.5\n", want: "decisionLog.sampleRate: 1.5 is out of range (0-1"},
		{name: "rate negative", env: map[string]string{"MANDATE_DECISION_LOG_SAMPLE_RATE": "-0.1"}, want: "decisionLog.sampleRate: -0.1 is out of range"},
		{name: "rate not a number", file: "decisionLog:\n  sampleRate: often\n", want: `decisionLog.sampleRate: "often" is not a number`},
		{name: "enabled not a boolean", env: map[string]string{"MANDATE_DECISION_LOG_ENABLED": "maybe"}, want: `decisionLog.enabled: "maybe" is not a boolean`},
		{name: "unknown key", file: "decisionLog:\n  sample: 1\n", want: "decisionlog.sample: unknown key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.file, tc.env)
			require.Error(t, err)
			assert.True(t, strings.Contains(err.Error(), tc.want), "Load() error = %q, want it to contain %q", err, tc.want)
		})
	}

	c := config.Default()
	c.DecisionLog.SampleRate = math.NaN()
	require.Error(t, c.Validate(), "NaN is no rate")
}
