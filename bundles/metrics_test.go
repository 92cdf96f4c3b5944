package bundles

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
)

// TestReportActive: a policy deciding without an Activator is the one
// active revision.
func TestReportActive(t *testing.T) {
	ReportActive("dir-1")
	ReportActive("dir-2")
	assert.Equal(t, 1, testutil.CollectAndCount(activeRevision), "only one revision is active")
	assert.Equal(t, 1.0, testutil.ToFloat64(activeRevision.WithLabelValues("dir-2")))
}
