package slurmview

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAttribute(t *testing.T) {
	for _, tc := range []struct{ reason, want string }{
		{"AssocGrpGRES", DimensionQuota},
		{"AssocGrpGRESMinutes", DimensionQuota},
		{"QOSMaxGRESPerUser", DimensionQuota},
		{"Priority", DimensionPriority},
		{"Resources", DimensionTopology},
		{"InvalidAccount", DimensionTenancy},
		{"Dependency", ""},
	} {
		got, _, _ := Attribute(tc.reason)
		assert.Equal(t, tc.want, got, tc.reason)
	}
}

// Slurm's output as 22.05 prints it, recorded from the real cluster of
// test/slurm.
const (
	squeueOut = "7|wrap|research-vision|train|debug|PENDING|AssocGrpGRES|1|gres:gpu:6\n"
	assocOut  = `Current Association Manager state

Association Records

ClusterName=c Account=research UserName= Partition= Priority=0 ID=6
    ParentAccount=helix(3) Lft=3 DefAssoc=No
    GrpTRES=cpu=N(1),gres/gpu=320(2),gres/gpu:nvidia-b200=N(0)
ClusterName=c Account=research-vision UserName= Partition= Priority=0 ID=8
    ParentAccount=research(6) Lft=4 DefAssoc=No
    GrpTRES=cpu=N(1),gres/gpu=4(2),gres/gpu:nvidia-b200=N(0)
ClusterName=c Account=research-vision UserName=root(0) Partition= Priority=0 ID=9
    ParentAccount= Lft=5 DefAssoc=No
    GrpTRES=cpu=N(1),gres/gpu=N(2)
`
)

func TestExplainNamesTheQuotaLimitAndCurrent(t *testing.T) {
	run := func(_ context.Context, name string, args ...string) ([]byte, error) {
		if name == "squeue" {
			return []byte(squeueOut), nil
		}
		require.Equal(t, "scontrol", name, strings.Join(args, " "))
		return []byte(assocOut), nil
	}
	es, err := Explain(context.Background(), run, "7")
	require.NoError(t, err)
	require.Len(t, es, 1)
	assert.Equal(t, DimensionQuota, es[0].Dimension)
	assert.Equal(t, "account research-vision GrpTRES gres/gpu=4", es[0].Limit)
	assert.Equal(t, "2 in use + 6 requested", es[0].Current)
}
