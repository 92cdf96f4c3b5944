package cluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/ledger"
)

// TestReservationsText: a TenantLedger's spec.reservations reads back as
// written, one sorted line per reservation, and a line that is not one is
// an error that names it.
func TestReservationsText(t *testing.T) {
	expires := time.Unix(1795000000, 0)
	rs := map[string]ledger.Reservation{
		"uid/3f1c":            {Tenant: "product", GPUs: map[string]int{"nvidia.com/gpu": 1}, Preemptible: true, Expires: expires},
		"batch/Job/llm/train": {Tenant: "research-llm", GPUs: map[string]int{"nvidia.com/gpu": 64, "nvidia.com/mig-1g.10gb": 2}, Expires: expires},
	}
	spec, err := specOf(rs)
	require.NoError(t, err)
	assert.Equal(t, "batch/Job/llm/train research-llm N 1795000000 nvidia.com/gpu=64,nvidia.com/mig-1g.10gb=2\n"+
		"uid/3f1c product P 1795000000 nvidia.com/gpu=1\n", spec["reservations"])
	got, err := reservationsOf(&unstructured.Unstructured{Object: map[string]any{"spec": spec}})
	require.NoError(t, err)
	assert.Equal(t, rs, got)

	empty, err := reservationsOf(&unstructured.Unstructured{Object: map[string]any{}})
	require.NoError(t, err)
	assert.Empty(t, empty)

	for _, bad := range []string{"k t X 1 a=1", "k t P soon a=1", "k t P 1 a", "k t P 1 a=-1", "k t P 1"} {
		_, err := reservationsOf(&unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"reservations": bad + "\n"}}})
		assert.ErrorContains(t, err, "line 1", bad)
	}
	_, err = specOf(map[string]ledger.Reservation{"a key": {Tenant: "t", GPUs: map[string]int{"g": 1}}})
	assert.Error(t, err)

	// Shared demand as the release before wrote it reads as shared demand,
	// not as the GPUs of a product named "milli".
	legacy, err := reservationsOf(&unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"reservations": "uid/9 product N 1795000000 nvidia.com/gpu@milli=500\n"}}})
	require.NoError(t, err)
	assert.Equal(t, map[string]int{ledger.SharedKey("nvidia.com/gpu"): 500}, legacy["uid/9"].GPUs)
}
