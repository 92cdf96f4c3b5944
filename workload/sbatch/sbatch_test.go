package sbatch

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		want         Script
		wantErr      string
	}{
		{name: "long options", script: "#!/bin/bash\n#SBATCH --account=a --qos=q\n#SBATCH --partition=p --nodes=2-4\n#SBATCH --gres=gpu:h100:8 --time=1:00:00 --exclusive --switches=1@10:00\nsrun x\n",
			want: Script{Name: "f", Account: "a", QOS: "q", Partition: "p", Nodes: 2, GPUsPerNode: 8, GresType: "h100", Time: "1:00:00", Exclusive: true, Switches: 1}},
		{name: "short options with separate and glued values", script: "#SBATCH -A a -q q\n#SBATCH -p p -N 3 -J job\n#SBATCH --gpus-per-node=4\n",
			want: Script{Name: "job", Account: "a", QOS: "q", Partition: "p", Nodes: 3, GPUsPerNode: 4}},
		{name: "glued short option", script: "#SBATCH -Aacct\n", want: Script{Name: "f", Account: "acct", Nodes: 1}},
		{name: "total GPUs over the nodes", script: "#SBATCH -N 2 --gpus=b200:16\n", want: Script{Name: "f", Nodes: 2, GPUsPerNode: 8, GresType: "b200"}},
		{name: "gres without a count is one", script: "#SBATCH --gres=gpu\n", want: Script{Name: "f", Nodes: 1, GPUsPerNode: 1}},
		{name: "other gres is not a GPU", script: "#SBATCH --gres=nic:2,gpu:2\n", want: Script{Name: "f", Nodes: 1, GPUsPerNode: 2}},
		{name: "lines after the first command are not read", script: "#SBATCH -A a\necho hi\n#SBATCH -A b\n", want: Script{Name: "f", Account: "a", Nodes: 1}},
		{name: "bad node count", script: "#SBATCH -N zero\n", wantErr: "--nodes=zero: want a positive number"},
		{name: "missing value", script: "#SBATCH --account\n", wantErr: "missing value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse("f", []byte(tc.script))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err := Parse("f", []byte("#!/bin/bash\necho no directives\n"))
	assert.True(t, errors.Is(err, ErrNotAScript))
}

func TestJobCarriesTheScriptsAsks(t *testing.T) {
	s := Script{Name: "j", QOS: "train", Partition: "NVIDIA-B200", Nodes: 2, GPUsPerNode: 8, Switches: 1}
	job := s.Job(Options{Namespace: "ns", Products: []string{"NVIDIA-B200"}, LeafLevel: "clique"})
	assert.Equal(t, "ns", job.GetNamespace())
	assert.Equal(t, map[string]string{"mandate.dev/topology-required": "clique"}, job.GetAnnotations())
	spec := job.Object["spec"].(map[string]any)
	assert.Equal(t, int64(2), spec["parallelism"])
	pod := spec["template"].(map[string]any)["spec"].(map[string]any)
	assert.Equal(t, "train", pod["priorityClassName"])
	assert.Equal(t, map[string]any{"nvidia.com/gpu.product": "NVIDIA-B200"}, pod["nodeSelector"])
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("#SBATCH -A a -q q -N 2 --gres=gpu:h100:8 --switches=1\n"))
	f.Add([]byte("#SBATCH --gpus=3 -N 2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("f", data)
		if err == nil && (s.Nodes < 1 || s.GPUsPerNode < 0) {
			t.Fatalf("Parse accepted %q as %+v", data, s)
		}
	})
}
