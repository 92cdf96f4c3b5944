package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/simulate/fgd"
)

const (
	openbNodes = "../../../simulate/testdata/alibaba-gpu-v2023/openb_node_list_gpu_node.csv"
	openbPods  = "../../../simulate/testdata/alibaba-gpu-v2023/openb_pod_list_default.csv"
)

// TestSimulateFGD runs the command on the openb trace, one seed: JSON with
// a point per percent of arrived demand up to 130, and the table.
func TestSimulateFGD(t *testing.T) {
	code, out, errText := run(t, "simulate", "fgd", "--pods", openbPods, "--nodes", openbNodes, "--policy", "random", "--seeds", "42", "-o", "json")
	require.Equal(t, 0, code, errText)
	var res fgd.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, "random", res.Policy)
	assert.Equal(t, []int64{42}, res.Seeds)
	assert.Equal(t, 1.3, res.Inflate)
	assert.Equal(t, 1213, res.Nodes)
	assert.Equal(t, 6212, res.GPUs)
	require.Len(t, res.Points, 131)
	for k, p := range res.Points {
		assert.Equal(t, k, p.Arrived)
		assert.Equal(t, p.Allocated.Min, p.Allocated.Max, "one seed: min is max")
		assert.LessOrEqual(t, p.Allocated.Mean, float64(k)+0.2, "never more allocated than arrived (by one task)")
	}
	assert.Greater(t, res.Points[130].Allocated.Mean, 80.0)
	assert.Contains(t, out, `"points": [`)

	code, out, errText = run(t, "simulate", "fgd", "--pods", openbPods, "--nodes", openbNodes, "--seeds", "42,43", "--inflate", "0.5")
	require.Equal(t, 0, code, errText)
	assert.Contains(t, out, "policy best-fit, seeds 42-43, 1213 nodes, 6212 GPUs, arrivals up to 50% of the GPUs")
	assert.Contains(t, out, "ARRIVED GPU DEMAND")
	assert.Regexp(t, `\n +50% +50\.0% +`, out, "below capacity, everything that arrived is allocated")
}

// TestSimulateFGDBadInput: bad flags and bad rows exit 2, naming what is
// wrong (the row by file, line and column).
func TestSimulateFGDBadInput(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "pods.csv")
	require.NoError(t, os.WriteFile(bad, []byte("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np0,1000,1024,1,500,\np1,1000,1024,1,5000,\n"), 0o600))
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--pods", bad, "--nodes", openbNodes}, "pods.csv:3: column gpu_milli: want an integer from 0 to 1000, got \"5000\""},
		{[]string{"--pods", openbPods, "--nodes", openbNodes, "--policy", "tetris"}, `invalid argument "tetris" for "--policy" flag: want best-fit, random`},
		{[]string{"--pods", openbPods, "--nodes", openbNodes, "--seeds", "51-42"}, "runs backwards"},
		{[]string{"--pods", openbPods, "--nodes", openbNodes, "--inflate", "-1"}, "inflate -1: want the arrived GPU demand as a positive multiple"},
		{[]string{"--pods", openbPods, "--nodes", openbPods}, "the header lacks the column(s) sn, gpu, model"},
		{[]string{"--nodes", openbNodes}, `required flag(s) "pods" not set`},
		{[]string{"--pods", openbPods, "--nodes", openbNodes, "-o", "html"}, `invalid argument "html" for "-o, --output" flag`},
	} {
		code, _, errText := run(t, append([]string{"simulate", "fgd"}, tc.args...)...)
		assert.Equal(t, exitBadInput, code, errText)
		assert.Contains(t, errText, tc.wantErr)
	}
	code, _, errText := run(t, "simulate", "nope")
	assert.Equal(t, exitBadInput, code)
	assert.Contains(t, errText, `unknown command "nope" for "mandate simulate"`)
}
