package slurm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/mandate-dev/mandate/test/envtest"
)

func buildMandate(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mandate")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/mandate")
	cmd.Dir = envtest.RepoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/mandate: %v\n%s", err, out)
	}
	return bin
}

// mandate runs the binary against the cluster and returns its output and
// exit code.
func (c *slurmCluster) mandate(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), envtest.Timeout(3*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Fatalf("mandate %s: %v\n%s", strings.Join(args, " "), err, out)
	return "", 0
}

// accountRows reads the accounts' own associations: account|parent|GrpTRES|Fairshare|QOS|DefaultQOS,
// sorted.
func (c *slurmCluster) accountRows(t *testing.T) []string {
	t.Helper()
	out := c.must(t, "sacctmgr", "-nP", "show", "assoc", "cluster="+clusterName,
		"format=Account,ParentName,User,GrpTRES,Fairshare,QOS,DefaultQOS")
	var rows []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 7 || f[2] != "" || f[0] == "root" {
			continue
		}
		tres := strings.Split(f[3], ",")
		sort.Strings(tres)
		f[3] = strings.Join(tres, ",")
		rows = append(rows, strings.Join(append(f[:2:2], f[3:]...), "|"))
	}
	sort.Strings(rows)
	return rows
}

func (c *slurmCluster) qosRows(t *testing.T) []string {
	t.Helper()
	out := c.must(t, "sacctmgr", "-nP", "show", "qos", "format=Name,Priority,Preempt,PreemptMode")
	rows := strings.Split(strings.TrimSpace(out), "\n")
	sort.Strings(rows)
	return rows
}

// The example model (policies/) as Slurm holds it.
var (
	wantAccounts = []string{
		"handmade|root|gres/gpu=2|5|normal|",
		"helix|root|gres/gpu=384|320|build,build-preemptible,inference,train|build-preemptible",
		"platform|helix|gres/gpu=16|8|build,build-preemptible|build-preemptible",
		"product|helix|gres/gpu:nvidia-b200=32,gres/gpu:nvidia-h100-80gb-hbm3=144,gres/gpu=160|128|build,build-preemptible,inference,train|build-preemptible",
		"research-llm|research|gres/gpu=256|96|build,build-preemptible,train|build-preemptible",
		"research-vision|research|gres/gpu=64|16|build-preemptible,train|build-preemptible",
		"research|helix|gres/gpu=320|128|build,build-preemptible,train|build-preemptible",
	}
	wantQOS = []string{
		"build-preemptible|75|train|requeue",
		"build|100|build-preemptible,train|cluster",
		"inference|125|build-preemptible,train|cluster",
		"normal|0||cluster",
		"train|50||requeue",
	}
	wantTopology = []string{
		"SwitchName=clique-b1-c0 Level=0 LinkSpeed=1 Nodes=gpu-node-0",
		"SwitchName=block-b1 Level=1 LinkSpeed=1 Nodes=gpu-node-0 Switches=clique-b1-c0",
		"SwitchName=spine-s1 Level=2 LinkSpeed=1 Nodes=gpu-node-0 Switches=block-b1",
		"SwitchName=zone-zone-a Level=3 LinkSpeed=1 Nodes=gpu-node-0 Switches=spine-s1",
	}
)

const nodesYAML = `apiVersion: v1
kind: Node
metadata:
  name: gpu-node-0
  labels:
    kubernetes.io/hostname: gpu-node-0
    topology.kubernetes.io/zone: zone-a
    mandate.dev/spine-block: s1
    mandate.dev/leaf-block: b1
    nvidia.com/gpu.clique: b1-c0
    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
`

// bundleWith builds a bundle of the example policies whose data.json is
// changed by edit.
func bundleWith(t *testing.T, bin string, edit func(string) string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(envtest.RepoRoot(t), "policies")
	if out, err := exec.Command("cp", "-r", src, dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	data := filepath.Join(dir, "policies", "mandate", "model", "data.json")
	b, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	changed := edit(string(b))
	if changed == string(b) {
		t.Fatal("the edit changed nothing")
	}
	if err := os.WriteFile(data, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(dir, "bundle.tar.gz")
	if out, err := exec.Command(bin, "bundle", "build", filepath.Join(dir, "policies"), "-o", bundle, "--revision", "r2").CombinedOutput(); err != nil {
		t.Fatalf("bundle build: %v\n%s", err, out)
	}
	return bundle
}

func TestSyncConfiguresARealSlurm(t *testing.T) {
	c := startSlurm(t)
	bin := buildMandate(t)
	nodes := filepath.Join(c.dir, "nodes.yaml")
	if err := os.WriteFile(nodes, []byte(nodesYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	// A hand-made account Mandate must never touch.
	c.must(t, "sacctmgr", "-i", "add", "account", "handmade", "cluster="+clusterName, "Organization=ops", "GrpTRES=gres/gpu=2", "Fairshare=5")
	syncArgs := []string{"sync", "--target", "slurm", "--slurm-nodes", nodes}

	out, code := c.mandate(t, bin, syncArgs...)
	if code != 0 {
		t.Fatalf("first sync exited %d:\n%s", code, out)
	}
	assert.Equal(t, wantAccounts, c.accountRows(t), "sacctmgr show assoc after the first sync")
	assert.Equal(t, wantQOS, c.qosRows(t), "sacctmgr show qos after the first sync")
	topo := strings.Split(strings.TrimSpace(c.must(t, "scontrol", "show", "topology")), "\n")
	assert.Equal(t, wantTopology, topo, "scontrol show topology")
	if out := c.must(t, "sinfo", "-h", "-p", "nvidia-h100-80gb-hbm3", "-o", "%P %D %N"); strings.TrimSpace(out) != "nvidia-h100-80gb-hbm3 1 gpu-node-0" {
		t.Errorf("the product's partition: sinfo says %q", out)
	}

	// A second sync changes nothing.
	if out, code := c.mandate(t, bin, append(syncArgs, "--check")...); code != 0 {
		t.Fatalf("--check right after sync exited %d:\n%s", code, out)
	}
	out, code = c.mandate(t, bin, append(syncArgs, "--diff")...)
	if code != 0 || strings.TrimSpace(out) != "" {
		t.Fatalf("--diff right after sync: exit %d, output:\n%s", code, out)
	}
	assert.Equal(t, wantAccounts, c.accountRows(t), "sacctmgr show assoc after the second sync")

	// A hand edit is drift; sync repairs it.
	c.must(t, "sacctmgr", "-i", "modify", "account", "where", "name=research-llm", "cluster="+clusterName, "set", "GrpTRES=gres/gpu=999")
	out, code = c.mandate(t, bin, append(syncArgs, "--check")...)
	if code != 1 || !strings.Contains(out, "research-llm") || !strings.Contains(out, "gres/gpu=999") {
		t.Fatalf("--check after a hand edit: exit %d (want 1), output:\n%s", code, out)
	}
	if out, code := c.mandate(t, bin, syncArgs...); code != 0 {
		t.Fatalf("repairing sync exited %d:\n%s", code, out)
	}
	if out, code := c.mandate(t, bin, append(syncArgs, "--check")...); code != 0 {
		t.Fatalf("--check after the repair exited %d:\n%s", code, out)
	}
	assert.Equal(t, wantAccounts, c.accountRows(t), "sacctmgr show assoc after the repair")

	// The test node has 8 GPUs, so the ceiling Slurm is shown enforcing
	// must be below 8, and the guarantee may not exceed it: a first bundle
	// lowers research-vision's guarantee (16 → 4, its Fairshare), then a
	// second changes only its ceiling (64 → 4), which changes exactly that
	// account's GrpTRES.
	visionQuota := func(guaranteed, ceiling int) func(string) string {
		return func(s string) string {
			return strings.Replace(s, `"research-vision": {
      "parent": "research",
      "description": "Vision models; small experiments.",
      "quota": {"nvidia.com/gpu": {"guaranteed": 16, "ceiling": 64}}`, fmt.Sprintf(`"research-vision": {
      "parent": "research",
      "description": "Vision models; small experiments.",
      "quota": {"nvidia.com/gpu": {"guaranteed": %d, "ceiling": %d}}`, guaranteed, ceiling), 1)
		}
	}
	lowered := bundleWith(t, bin, visionQuota(4, 64))
	if out, code := c.mandate(t, bin, append(syncArgs, "--bundle", lowered)...); code != 0 {
		t.Fatalf("sync of the bundle with the lower guarantee exited %d:\n%s", code, out)
	}
	bundle := bundleWith(t, bin, visionQuota(4, 4))
	bundleArgs := append(syncArgs, "--bundle", bundle)
	out, code = c.mandate(t, bin, append(bundleArgs, "--diff")...)
	wantDiff := "--- account research-vision (slurm cluster mandatetest)\n+++ account research-vision (model)\n-GrpTRES=gres/gpu=64\n+GrpTRES=gres/gpu=4\n"
	if code != 0 || !assert.Equal(t, wantDiff, out, "--diff of the new bundle") {
		t.Fatalf("--diff of the new bundle: exit %d:\n%s", code, out)
	}
	if out, code := c.mandate(t, bin, bundleArgs...); code != 0 {
		t.Fatalf("sync of the new bundle exited %d:\n%s", code, out)
	}
	want := make([]string, len(wantAccounts))
	copy(want, wantAccounts)
	for i, r := range want {
		if strings.HasPrefix(r, "research-vision|") {
			want[i] = strings.Replace(r, "gres/gpu=64|16|", "gres/gpu=4|4|", 1)
		}
	}
	assert.Equal(t, want, c.accountRows(t), "sacctmgr show assoc after the new bundle")

	// Slurm enforces the ceiling: beyond it a job pends with AssocGrpGRES,
	// inside it a job runs.
	c.must(t, "sacctmgr", "-i", "add", "user", "root", "account=research-vision", "cluster="+clusterName)
	over := jobID(t, c.must(t, "sbatch", "--parsable", "-A", "research-vision", "--qos", "train", "--gres=gpu:6", "-o", "/dev/null", "--wrap", "sleep 30"))
	inside := jobID(t, c.must(t, "sbatch", "--parsable", "-A", "research-vision", "--qos", "train", "--gres=gpu:2", "-o", "/dev/null", "--wrap", "sleep 30"))
	eventually(t, "the job inside the ceiling running", func() (bool, string) {
		out := c.must(t, "squeue", "-h", "-j", inside, "-o", "%T|%r")
		return strings.HasPrefix(strings.TrimSpace(out), "RUNNING|"), out
	})
	eventually(t, "the job beyond the ceiling pending with AssocGrpGRES", func() (bool, string) {
		out := c.must(t, "squeue", "-h", "-j", over, "-o", "%T|%r")
		return strings.TrimSpace(out) == "PENDING|AssocGrpGRES", out
	})
	testExplainPendingJob(t, c, bin, bundle, over)
}

func jobID(t *testing.T, out string) string {
	t.Helper()
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	if id == "" {
		t.Fatalf("sbatch printed no job id: %q", out)
	}
	return id
}
