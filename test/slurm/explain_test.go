package slurm_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testExplainPendingJob: mandate explain on a job Slurm holds with
// AssocGrpGRES names the quota dimension with the account's limit and the
// GPUs in use (the job inside the ceiling holds 2 of research-vision's 4).
func testExplainPendingJob(t *testing.T, c *slurmCluster, bin, _ string, job string) {
	t.Helper()
	out, code := c.mandate(t, bin, "explain", "slurm/"+job, "-o", "json")
	require.Equal(t, 1, code, "explain of a pending job exits 1:\n%s", out)
	var e struct {
		Job       struct{ Reason string }
		Dimension string
		Verdict   string
		Limit     string
		Current   string
		Message   string
	}
	require.NoError(t, json.Unmarshal([]byte(out), &e), out)
	assert.Equal(t, "AssocGrpGRES", e.Job.Reason)
	assert.Equal(t, "quota", e.Dimension)
	assert.Equal(t, "waits", e.Verdict)
	assert.Equal(t, "account research-vision GrpTRES gres/gpu=4", e.Limit)
	assert.Equal(t, "2 in use + 6 requested", e.Current)
	assert.Contains(t, e.Message, "could never run")

	out, code = c.mandate(t, bin, "report", "--slurm")
	assert.Equal(t, 1, code, "report --slurm exits 1 while a job waits:\n%s", out)
	assert.Regexp(t, job+` +research-vision +train +PENDING +AssocGrpGRES +quota +account research-vision GrpTRES gres/gpu=4 +2 in use \+ 6 requested`, out)
}
