// Package sbatch reads a Slurm batch script's #SBATCH lines (account, qos,
// partition, nodes, GPUs, time, exclusive, switches) and turns the job into
// the Kubernetes Job it is equivalent to, so that `mandate eval` and
// `mandate explain` decide a Slurm job with the same authority model and
// the same per-dimension messages as the Job: the account is the tenant
// (through a namespace of that tenant), the QOS the priority class, the
// nodes the gang, the GPUs per node each pod's nvidia.com/gpu, a GPU
// product's partition or gres type its product, and --switches=1 the
// model's leaf topology level as a required topology.
package sbatch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

// Script is what a batch script's #SBATCH lines ask for.
type Script struct {
	Name      string
	Account   string
	QOS       string
	Partition string
	// Nodes is the number of nodes (the lower bound of a range); 1 when
	// unset.
	Nodes int
	// GPUsPerNode and GresType are from --gres=gpu[:type]:N,
	// --gpus-per-node=[type:]N or --gpus=[type:]N over the nodes.
	GPUsPerNode int
	GresType    string
	Time        string
	Exclusive   bool
	// Switches is --switches' count; 0 when unset.
	Switches int
}

// ErrNotAScript is returned for data without any #SBATCH line.
var ErrNotAScript = errors.New("no #SBATCH line")

// IsScript reports whether data is a batch script: it has an #SBATCH line.
func IsScript(data []byte) bool {
	for _, line := range bytes.Split(data, []byte("\n")) {
		if bytes.HasPrefix(bytes.TrimSpace(line), []byte("#SBATCH")) {
			return true
		}
	}
	return false
}

// Parse reads the #SBATCH lines of a script, as sbatch does: those before
// the first command; name is the job's name when it sets none.
func Parse(name string, data []byte) (Script, error) {
	s := Script{Name: name, Nodes: 1}
	var totalGPUs int
	seen := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "#") {
			break
		}
		rest, ok := strings.CutPrefix(line, "#SBATCH")
		if !ok {
			continue
		}
		seen = true
		fields := strings.Fields(rest)
		for i := 0; i < len(fields); i++ {
			opt, val, hasVal := strings.Cut(fields[i], "=")
			takes := func() (string, error) {
				if hasVal {
					return val, nil
				}
				if strings.HasPrefix(opt, "-") && !strings.HasPrefix(opt, "--") && len(opt) > 2 {
					return opt[2:], nil // -Aaccount
				}
				if i+1 >= len(fields) {
					return "", fmt.Errorf("#SBATCH %s: missing value", opt)
				}
				i++
				return fields[i], nil
			}
			short := opt
			if strings.HasPrefix(opt, "-") && !strings.HasPrefix(opt, "--") && len(opt) > 2 {
				short = opt[:2]
			}
			var err error
			switch {
			case short == "-A" || opt == "--account":
				s.Account, err = takes()
			case short == "-q" || opt == "--qos":
				s.QOS, err = takes()
			case short == "-p" || opt == "--partition":
				s.Partition, err = takes()
			case short == "-J" || opt == "--job-name":
				s.Name, err = takes()
			case short == "-t" || opt == "--time":
				s.Time, err = takes()
			case opt == "--exclusive":
				s.Exclusive = true
			case short == "-N" || opt == "--nodes":
				var v string
				if v, err = takes(); err == nil {
					lo, _, _ := strings.Cut(v, "-")
					s.Nodes, err = positive("--nodes", lo)
				}
			case opt == "--switches":
				var v string
				if v, err = takes(); err == nil {
					n, _, _ := strings.Cut(v, "@")
					s.Switches, err = positive("--switches", n)
				}
			case opt == "--gres":
				var v string
				if v, err = takes(); err == nil {
					err = s.gres(v)
				}
			case opt == "--gpus-per-node":
				var v string
				if v, err = takes(); err == nil {
					s.GresType, s.GPUsPerNode, err = typedCount("--gpus-per-node", v)
				}
			case short == "-G" || opt == "--gpus":
				var v string
				if v, err = takes(); err == nil {
					s.GresType, totalGPUs, err = typedCount("--gpus", v)
				}
			}
			if err != nil {
				return s, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return s, fmt.Errorf("unable to read the script: %w", err)
	}
	if !seen {
		return s, ErrNotAScript
	}
	if totalGPUs > 0 && s.GPUsPerNode == 0 {
		s.GPUsPerNode = (totalGPUs + s.Nodes - 1) / s.Nodes
	}
	return s, nil
}

// gres reads --gres=gpu[:type][:N][,other…]; only gpu counts.
func (s *Script) gres(v string) error {
	for _, g := range strings.Split(v, ",") {
		parts := strings.Split(g, ":")
		if parts[0] != "gpu" {
			continue
		}
		switch len(parts) {
		case 1:
			s.GPUsPerNode = 1
		case 2:
			if n, err := strconv.Atoi(parts[1]); err == nil {
				s.GPUsPerNode = n
			} else {
				s.GresType, s.GPUsPerNode = parts[1], 1
			}
		default:
			n, err := positive("--gres", parts[2])
			if err != nil {
				return err
			}
			s.GresType, s.GPUsPerNode = parts[1], n
		}
	}
	return nil
}

func typedCount(opt, v string) (string, int, error) {
	typ, n, ok := strings.Cut(v, ":")
	if !ok {
		typ, n = "", v
	}
	c, err := positive(opt, n)
	return typ, c, err
}

func positive(opt, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("#SBATCH %s=%s: want a positive number", opt, v)
	}
	return n, nil
}

// Options says how a script becomes a Job.
type Options struct {
	// Namespace is the Job's namespace: one of the account's tenant.
	Namespace string
	// Products are the GPU products the model and the cluster know; a
	// partition or gres type naming one (in any case) asks for it.
	Products []string
	// ProductLabel is the node label naming the GPU product.
	ProductLabel string
	// LeafLevel is the model's narrowest topology level above the node,
	// which --switches=1 requires.
	LeafLevel string
}

// Job is the Kubernetes Job equivalent to the script.
func (s Script) Job(o Options) *unstructured.Unstructured {
	container := map[string]any{"name": "batch", "image": "slurm-batch-script"}
	if s.GPUsPerNode > 0 {
		container["resources"] = map[string]any{"limits": map[string]any{topology.DefaultGPUResource: strconv.Itoa(s.GPUsPerNode)}}
	}
	pod := map[string]any{"restartPolicy": "Never", "containers": []any{container}}
	if s.QOS != "" {
		pod["priorityClassName"] = s.QOS
	}
	if p := s.product(o.Products); p != "" {
		label := o.ProductLabel
		if label == "" {
			label = topology.DefaultProductLabel
		}
		pod["nodeSelector"] = map[string]any{label: p}
	}
	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch/v1",
		"kind":       "Job",
		"metadata":   map[string]any{"name": s.Name, "namespace": o.Namespace},
		"spec": map[string]any{
			"parallelism": int64(s.Nodes),
			"completions": int64(s.Nodes),
			"template":    map[string]any{"spec": pod},
		},
	}}
	if s.Switches == 1 && o.LeafLevel != "" {
		job.SetAnnotations(map[string]string{workload.AnnotationTopologyRequired: o.LeafLevel})
	}
	return job
}

// product is the GPU product the gres type or the partition names.
func (s Script) product(products []string) string {
	for _, want := range []string{s.GresType, s.Partition} {
		for _, p := range products {
			if want != "" && strings.EqualFold(p, want) {
				return p
			}
		}
	}
	return ""
}
