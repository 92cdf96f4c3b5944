package model_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mandate-dev/mandate/model"
)

func tiersModel(overGuarantee string, tiers map[string]model.Tier) model.Model {
	return model.Model{Priorities: tiers, QuotaPolicy: model.QuotaPolicy{OverGuarantee: overGuarantee}}
}

func TestBorrowedValues(t *testing.T) {
	ninety := 90
	example := map[string]model.Tier{
		"train": {Value: 50, Preemptible: true}, "build-preemptible": {Value: 75, Preemptible: true},
		"build": {Value: 100}, "inference": {Value: 125},
	}
	for _, tc := range []struct {
		name string
		m    model.Model
		want map[string]int
	}{
		{"the example model: just below the lowest guaranteed tier, in the tiers' order",
			tiersModel("", example), map[string]int{"build-borrowed": 98, "inference-borrowed": 99}},
		{"a tier's own borrowedValue wins",
			tiersModel("preemptible", map[string]model.Tier{"train": {Value: 50, Preemptible: true}, "build": {Value: 100, BorrowedValue: &ninety}}),
			map[string]int{"build-borrowed": 90}},
		{"work beyond a guarantee denied: no borrowed class", tiersModel("deny", example), nil},
		{"no non-preemptible tier: no borrowed class",
			tiersModel("", map[string]model.Tier{"train": {Value: 50, Preemptible: true}}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.m.BorrowedValues()
			if tc.want == nil {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestTierOfAndClasses(t *testing.T) {
	m := tiersModel("", map[string]model.Tier{"train": {Value: 50, Preemptible: true}, "build": {Value: 100}})
	m.Preemption.MayPreempt = map[string][]string{"build": {"train"}}

	tier, borrowed, ok := m.TierOf("build-borrowed")
	assert.Equal(t, []any{"build", true, true}, []any{tier, borrowed, ok})
	tier, borrowed, ok = m.TierOf("train")
	assert.Equal(t, []any{"train", false, true}, []any{tier, borrowed, ok})
	_, _, ok = m.TierOf("train-borrowed") // a preemptible tier has none
	assert.False(t, ok)

	var names []string
	preempts := map[string]bool{}
	for _, c := range m.Classes() {
		names = append(names, c.Name)
		preempts[c.Name] = c.Preempts
	}
	assert.Equal(t, []string{"build", "build-borrowed", "train"}, names)
	assert.Equal(t, map[string]bool{"build": true, "build-borrowed": false, "train": false}, preempts)
	assert.Equal(t, map[string]bool{"build": false, "build-borrowed": true, "train": true}, m.PreemptibleClasses())
	v, ok := m.ClassValue("build-borrowed")
	assert.True(t, ok)
	assert.Equal(t, 99, v) // G-n-1+i with G 100, n 1, i 1
}
