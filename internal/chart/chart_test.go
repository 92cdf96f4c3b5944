package chart

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTicks(t *testing.T) {
	for _, tc := range []struct {
		max   float64
		n     int
		whole bool
		want  []float64
	}{
		{max: 384, n: 5, want: []float64{0, 100, 200, 300, 400}},
		{max: 11, n: 5, want: []float64{0, 2, 4, 6, 8, 10, 12}},
		{max: 11, n: 4, want: []float64{0, 2.5, 5, 7.5, 10, 12.5}},
		{max: 1, n: 8, whole: true, want: []float64{0, 1}},
		{max: 0, n: 4, want: []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		{max: 6.5, n: 7, want: []float64{0, 1, 2, 3, 4, 5, 6, 7}},
	} {
		assert.Equal(t, tc.want, Ticks(tc.max, tc.n, tc.whole), "Ticks(%g, %d, %v)", tc.max, tc.n, tc.whole)
	}
}

func TestNum(t *testing.T) {
	for v, want := range map[float64]string{3: "3", 3.5: "3.5", 0.26: "0.3", -0.01: "0", 1160: "1160"} {
		assert.Equal(t, want, Num(v, 1), "Num(%g, 1)", v)
	}
}
