package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/workload"
	"github.com/mandate-dev/mandate/workload/sbatch"
)

// sbatchExtensions are the file names `mandate eval` reads as Slurm batch
// scripts in a directory (a file given by name is one when it has an
// #SBATCH line).
var sbatchExtensions = []string{".sbatch", ".slurm", ".sh"}

// sbatchJob turns a batch script into the Kubernetes Job it is decided as:
// in a namespace of the account's tenant (namespacesOf lists them; the
// account's own name when there is none, which then has no tenant), with
// the model's products and leaf topology level; defaultNS when the script
// names no account.
func sbatchJob(file string, data []byte, spec model.Model, namespacesOf func(tenant string) []string, defaultNS string) (*unstructured.Unstructured, error) {
	name := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	s, err := sbatch.Parse(name, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	ns := defaultNS
	if s.Account != "" {
		ns = s.Account
		if names := namespacesOf(s.Account); len(names) > 0 {
			ns = names[0]
		}
	}
	return s.Job(sbatch.Options{Namespace: ns, Products: modelProducts(spec), LeafLevel: leafLevel(spec)}), nil
}

// stateNamespaces lists a tenant's namespaces in a cluster state.
func stateNamespaces(state *cluster.State) func(string) []string {
	return func(tenant string) []string { return state.TenantNamespaces(workload.LabelTenant, tenant) }
}

// inventoryNamespaces lists a tenant's namespaces in an inventory, sorted.
func inventoryNamespaces(inv *inventory.Inventory) func(string) []string {
	return func(tenant string) []string {
		var out []string
		for _, ns := range inv.Namespaces {
			if ns.GetLabels()[workload.LabelTenant] == tenant {
				out = append(out, ns.GetName())
			}
		}
		sort.Strings(out)
		return out
	}
}

// sbatchKind is explain's KIND of a batch script: sbatch/PATH.
const sbatchKind = "sbatch"

// addSbatchJob reads the script at path, adds the Job it is decided as to
// inv and returns the Job's kind, namespace and name for explain.
func addSbatchJob(path string, spec model.Model, inv *inventory.Inventory, defaultNS string) (kind, ns, name string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", "", "", fmt.Errorf("unable to read the batch script: %w", err)
	}
	job, err := sbatchJob(path, data, spec, inventoryNamespaces(inv), defaultNS)
	if err != nil {
		return "", "", "", err
	}
	if err := inv.Add(job); err != nil {
		return "", "", "", fmt.Errorf("%s: %w", path, err)
	}
	return strings.ToLower(job.GetKind()), job.GetNamespace(), job.GetName(), nil
}

// modelProducts lists every GPU product the model's quotas name.
func modelProducts(spec model.Model) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range spec.TenantNames() {
		for _, r := range spec.Resources(t) {
			for _, p := range spec.Products(t, r) {
				if !seen[p] {
					seen[p] = true
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// leafLevel is the narrowest topology level above the node: the leaf
// switch of Slurm's topology/tree, as mandate sync --target slurm writes it.
func leafLevel(spec model.Model) string {
	levels := spec.Topology.Levels
	for i := len(levels) - 1; i >= 0; i-- {
		if levels[i].NodeLabel != corev1.LabelHostname {
			return levels[i].Name
		}
	}
	return ""
}
