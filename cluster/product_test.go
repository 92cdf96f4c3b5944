package cluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/topology"
)

// TestProductReservationsText: a workload of one GPU product reserves under
// RESOURCE@PRODUCT too; the TenantLedger line format holds it as one more
// RESOURCE=GPUS and reads it back.
func TestProductReservationsText(t *testing.T) {
	rs := map[string]ledger.Reservation{"batch/Job/product/tune": {Tenant: "product", Expires: time.Unix(1795000000, 0),
		GPUs: topology.WithProduct(map[string]int{"nvidia.com/gpu": 8}, "NVIDIA-B200")}}
	spec, err := specOf(rs)
	require.NoError(t, err)
	assert.Equal(t, "batch/Job/product/tune product N 1795000000 nvidia.com/gpu=8,nvidia.com/gpu@NVIDIA-B200=8\n", spec["reservations"])
	got, err := reservationsOf(&unstructured.Unstructured{Object: map[string]any{"spec": spec}})
	require.NoError(t, err)
	assert.Equal(t, rs, got)
}
