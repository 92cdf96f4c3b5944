package slurm_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mandate-dev/mandate/test/envtest"
)

// confineVision edits the example model: research-vision is confined to
// pool b1 (leaf block b1, where the test node is).
func confineVision(t *testing.T) func(string) string {
	return func(s string) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		m["topology"].(map[string]any)["pools"] = map[string]any{"b1": map[string]any{"level": "block", "domains": []any{"b1"}}}
		m["tenants"].(map[string]any)["research-vision"].(map[string]any)["placement"] = map[string]any{"allowed": "b1"}
		b, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
}

// TestSyncRendersPoolPartitions, on the real slurmctld: mandate sync
// --target slurm renders pool b1's partition with AllowAccounts naming
// research-vision, which the model confines to it, and denies it the
// product partition; Slurm then refuses research-vision's job in the
// product partition and accepts it in its pool's. --check finds no drift.
func TestSyncRendersPoolPartitions(t *testing.T) {
	c := startSlurm(t)
	bin := buildMandate(t)
	nodes := filepath.Join(c.dir, "nodes.yaml")
	if err := os.WriteFile(nodes, []byte(nodesYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	bundle := bundleWith(t, bin, confineVision(t))
	syncArgs := []string{"sync", "--target", "slurm", "--slurm-nodes", nodes, "--bundle", bundle}
	if out, code := c.mandate(t, bin, syncArgs...); code != 0 {
		t.Fatalf("sync exited %d:\n%s", code, out)
	}
	if out, code := c.mandate(t, bin, append(syncArgs, "--check")...); code != 0 {
		t.Fatalf("--check right after sync exited %d:\n%s", code, out)
	}
	part := c.must(t, "scontrol", "show", "partition", "pool-b1")
	for _, want := range []string{"AllowAccounts=research-vision", "Nodes=gpu-node-0"} {
		if !strings.Contains(part, want) {
			t.Errorf("scontrol show partition pool-b1 lacks %s:\n%s", want, part)
		}
	}

	c.must(t, "sacctmgr", "-i", "add", "user", "root", "account=research-vision", "cluster="+clusterName)
	ctx, cancel := context.WithTimeout(context.Background(), envtest.Timeout(2*time.Minute))
	defer cancel()
	// With EnforcePartLimits=ALL (the README's Slurm section asks for
	// it) Slurm refuses at submission a job the partition's
	// AllowAccounts/DenyAccounts exclude, with its own message.
	out, err := c.run(ctx, "sbatch", "--parsable", "-A", "research-vision", "--qos", "train", "-p", "nvidia-h100-80gb-hbm3",
		"--gres=gpu:1", "-o", "/dev/null", "--wrap", "sleep 30")
	if err == nil {
		t.Fatalf("Slurm accepted research-vision's job in the product partition outside its pool (job %s), want it refused at submission", strings.TrimSpace(out))
	}
	t.Logf("Slurm refused the job outside the pool: %s", strings.TrimSpace(out))
	inside := jobID(t, c.must(t, "sbatch", "--parsable", "-A", "research-vision", "--qos", "train", "-p", "pool-b1",
		"--gres=gpu:1", "-o", "/dev/null", "--wrap", "sleep 30"))
	eventually(t, "research-vision's job in pool-b1 running", func() (bool, string) {
		out := c.must(t, "squeue", "-h", "-j", inside, "-o", "%T|%r")
		return strings.HasPrefix(strings.TrimSpace(out), "RUNNING|"), out
	})
}
