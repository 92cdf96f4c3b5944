package topology_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/topology"
)

func TestConfigWithDefaults(t *testing.T) {
	got := topology.Config{Levels: testLevels}.WithDefaults()
	require.Equal(t, topology.DefaultProductLabel, got.ProductLabel)
	require.Equal(t, []string{topology.DefaultToleratedTaint}, got.ToleratedTaints)

	got = topology.Config{Levels: testLevels, ProductLabel: "x/p", ToleratedTaints: []string{}}.WithDefaults()
	require.Equal(t, "x/p", got.ProductLabel)
	require.Empty(t, got.ToleratedTaints)
	require.NotNil(t, got.ToleratedTaints, "an explicit empty list stays empty")
}

func TestConfigValidate(t *testing.T) {
	lv := func(name, label string) topology.Level { return topology.Level{Name: name, NodeLabel: label} }
	tooMany := make([]topology.Level, topology.MaxLevels+1)
	for i := range tooMany {
		tooMany[i] = lv(string(rune('a'+i%26))+string(rune('a'+i/26)), "l/"+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	for _, tc := range []struct {
		name    string
		levels  []topology.Level
		wantErr string
	}{
		{name: "valid", levels: testLevels},
		{name: "no levels", wantErr: "at least one level is required"},
		{name: "too many levels", levels: tooMany, wantErr: "33 levels, at most 32"},
		{name: "empty name", levels: []topology.Level{lv("", "a")}, wantErr: "level 0 has an empty name"},
		{name: "empty label", levels: []topology.Level{lv("zone", "")}, wantErr: `level "zone" has an empty nodeLabel`},
		{name: "duplicate name", levels: []topology.Level{lv("zone", "a"), lv("zone", "b")},
			wantErr: `levels 0 and 1 are both named "zone"`},
		{name: "duplicate label", levels: []topology.Level{lv("zone", "a"), lv("rack", "a")},
			wantErr: `levels "zone" and "rack" both read node label "a"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := topology.Config{Levels: tc.levels}.Validate()
			_, newErr := topology.NewModel(topology.Config{Levels: tc.levels})
			if tc.wantErr == "" {
				require.NoError(t, err)
				require.NoError(t, newErr)
				return
			}
			require.ErrorIs(t, err, topology.ErrInvalidConfig)
			require.ErrorContains(t, err, tc.wantErr)
			require.ErrorIs(t, newErr, topology.ErrInvalidConfig)
		})
	}
}
