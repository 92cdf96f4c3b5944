package slurm

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/topology"
)

func testModel() model.Model {
	return model.Model{
		Tenants: map[string]model.Tenant{
			"org": {Description: "The org", PriorityClasses: []string{"low", "high"},
				Quota: map[string]model.Quota{"nvidia.com/gpu": {Guaranteed: 16, Ceiling: 32}, "nvidia.com/mig-1g.10gb": {Guaranteed: 1, Ceiling: 2}}},
			"team": {Parent: "org", Description: "A 'team'",
				Quota: map[string]model.Quota{"nvidia.com/gpu": {Guaranteed: 0, Ceiling: 8,
					Products: map[string]model.Limit{"NVIDIA-H100": {Guaranteed: 0, Ceiling: 4}}}}},
		},
		Priorities: map[string]model.Tier{
			"low":  {Value: 10, Preemptible: true, Description: "Low"},
			"high": {Value: 20, Description: "High"},
		},
		ClassDefaults: map[string]string{"batch": "low"},
		Preemption:    model.Preemption{MayPreempt: map[string][]string{"high": {"low"}}},
		Topology: model.Topology{Levels: []topology.Level{
			{Name: "block", NodeLabel: "block"}, {Name: "clique", NodeLabel: "clique"}, {Name: "node", NodeLabel: "kubernetes.io/hostname"},
		}},
	}
}

func TestRender(t *testing.T) {
	nodes := Nodes{
		"n0": {"block": "b1", "clique": "c0", "nvidia.com/gpu.product": "NVIDIA-H100"},
		"n1": {"block": "b1", "clique": "c1", "nvidia.com/gpu.product": "NVIDIA-H100"},
		"n2": {"block": "b1", "nvidia.com/gpu.product": "NVIDIA-B200"}, // no clique: linked to its block
		"n3": {},
	}
	d, err := Render(testModel(), nodes, Options{})
	require.NoError(t, err)
	assert.Equal(t, []QOS{
		{Name: "high", Priority: 20, Preempt: []string{"low"}, PreemptMode: PreemptCluster, Description: "mandate: high"},
		{Name: "low", Priority: 10, PreemptMode: PreemptRequeue, Description: "mandate: low"},
	}, d.QOS)
	assert.Equal(t, []Account{
		{Name: "org", Parent: "root", Description: "mandate: the org", Fairshare: 16, GrpTRES: map[string]int64{"gres/gpu": 32},
			QOS: []string{"high", "low"}, DefaultQOS: "low"},
		{Name: "team", Parent: "org", Description: "mandate: a team", Fairshare: 1,
			GrpTRES: map[string]int64{"gres/gpu": 8, "gres/gpu:nvidia-h100": 4}, QOS: []string{"high", "low"}, DefaultQOS: "low"},
	}, d.Accounts)
	assert.Equal(t, []string{"tenant org: quota of nvidia.com/mig-1g.10gb (Slurm counts nvidia.com/gpu only)"}, d.Unexpressed)
	assert.Equal(t, []File{
		{Name: PartitionsFile, Content: Header + "PartitionName=nvidia-b200 Nodes=n2 State=UP\nPartitionName=nvidia-h100 Nodes=n0,n1 State=UP\n"},
		{Name: TopologyFile, Content: Header + "SwitchName=clique-c0 Nodes=n0\nSwitchName=clique-c1 Nodes=n1\nSwitchName=block-b1 Switches=clique-c0,clique-c1 Nodes=n2\n"},
	}, d.Files)
}

func TestRenderWithoutNodesLeavesTheFilesAlone(t *testing.T) {
	d, err := Render(testModel(), nil, Options{})
	require.NoError(t, err)
	assert.Empty(t, d.Files)
	assert.Len(t, d.Accounts, 2)
}

func TestRenderRefusesADomainUnderTwoParents(t *testing.T) {
	_, err := Render(testModel(), Nodes{"n0": {"block": "b1", "clique": "c0"}, "n1": {"block": "b2", "clique": "c0"}}, Options{})
	assert.ErrorContains(t, err, "clique-c0 is in both")
}

func TestDiff(t *testing.T) {
	d, err := Render(testModel(), Nodes{"n0": {"block": "b1"}}, Options{})
	require.NoError(t, err)
	live := Live{Accounts: map[string]Account{}, QOS: map[string]QOS{}, ForeignAccounts: map[string]bool{"ops": true},
		ForeignQOS: map[string]bool{"normal": true}, Files: map[string]string{}}
	for _, a := range d.Accounts {
		live.Accounts[a.Name] = a
	}
	for _, q := range d.QOS {
		live.QOS[q.Name] = q
	}
	for _, f := range d.Files {
		live.Files[f.Name] = f.Content
	}
	p, err := Diff(d, live)
	require.NoError(t, err)
	assert.Empty(t, p.Changes, "what matches is no change; someone else's account and QOS are left alone")

	team := live.Accounts["team"]
	team.GrpTRES = map[string]int64{"gres/gpu": 99}
	team.Description = "MANDATE: A TEAM" // Slurm keeps descriptions in lower case
	live.Accounts["team"] = team
	live.Accounts["gone"] = Account{Name: "gone", Parent: "org"}
	live.Accounts["gone-child"] = Account{Name: "gone-child", Parent: "gone"}
	p, err = Diff(d, live)
	require.NoError(t, err)
	var got []string
	for _, c := range p.Changes {
		got = append(got, c.Action+" "+c.Kind+" "+c.Name)
	}
	assert.Equal(t, []string{"update account team", "delete account gone-child", "delete account gone"}, got)
	assert.Equal(t, []Field{{Name: "GrpTRES", Have: "gres/gpu=99", Want: "gres/gpu=8,gres/gpu:nvidia-h100=4"}}, p.Changes[0].Fields)

	live.ForeignAccounts["team"] = true
	live.Files[TopologyFile] = "SwitchName=hand-made Nodes=n0\n"
	_, err = Diff(d, live)
	assert.True(t, errors.Is(err, ErrNotMandates))
	assert.ErrorContains(t, err, "account team exists")
	assert.ErrorContains(t, err, "topology.conf exists")
}

// A tenant confined to a pool gets the pool's partition, naming its
// account (and its descendants') in AllowAccounts, and is denied the
// product partitions.
func TestRenderPoolPartitions(t *testing.T) {
	m := testModel()
	m.Topology.Pools = map[string]model.NodePool{"c0": {Level: "clique", Domains: []string{"c0"}}}
	team := m.Tenants["team"]
	team.Placement.Allowed = "c0"
	m.Tenants["team"] = team
	nodes := Nodes{
		"n0": {"block": "b1", "clique": "c0", "nvidia.com/gpu.product": "NVIDIA-H100"},
		"n1": {"block": "b1", "clique": "c1", "nvidia.com/gpu.product": "NVIDIA-H100"},
	}
	d, err := Render(m, nodes, Options{})
	require.NoError(t, err)
	require.NotEmpty(t, d.Files)
	assert.Equal(t, File{Name: PartitionsFile, Content: Header +
		"PartitionName=nvidia-h100 Nodes=n0,n1 State=UP DenyAccounts=team\n" +
		"PartitionName=pool-c0 Nodes=n0 State=UP AllowAccounts=team\n"}, d.Files[0])
}
