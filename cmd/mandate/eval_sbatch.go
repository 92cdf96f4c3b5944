package main

import (
	"fmt"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/workload"
	"github.com/mandate-dev/mandate/workload/sbatch"
)

// sbatchExtensions are the file names `mandate eval` reads as Slurm batch
// scripts in a directory (a file given by name is one when it has an
// #SBATCH line).
var sbatchExtensions = []string{".sbatch", ".slurm", ".sh"}

// sbatchJob turns a batch script into the Kubernetes Job it is decided as:
// in a namespace of the account's tenant (the account's own name when the
// cluster has none, which then has no tenant), with the model's products
// and leaf topology level.
func sbatchJob(file string, data []byte, spec model.Model, state *cluster.State, o evalOptions) (*unstructured.Unstructured, error) {
	name := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	s, err := sbatch.Parse(name, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	ns := o.namespace
	if s.Account != "" {
		ns = s.Account
		if names := state.TenantNamespaces(workload.LabelTenant, s.Account); len(names) > 0 {
			ns = names[0]
		}
	}
	return s.Job(sbatch.Options{Namespace: ns, Products: modelProducts(spec), LeafLevel: leafLevel(spec)}), nil
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
