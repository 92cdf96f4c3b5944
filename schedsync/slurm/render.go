// Package slurm makes a Slurm cluster's configuration follow the authority
// model, as package schedsync does for the Kubernetes schedulers. From the
// model it renders one account per tenant (parent: the tenant's parent)
// whose association carries the tenant's ceiling as GrpTRES (gres/gpu, and
// gres/gpu:<type> per GPU product), its guarantee as Fairshare and its
// priority classes as the QOS it may use; one QOS per priority tier with
// the tier's value as Priority and the model's preemption rules as Preempt
// and PreemptMode; and, as written files, one partition per GPU product and
// topology.conf switches from the topology levels (the narrowest level
// above the node, an NVLink domain, is the leaf switch). Accounts are
// changed through `sacctmgr -i`; only accounts whose Organization is
// "mandate" and QOS whose Description starts "mandate:" are ever changed or
// deleted, and a file is overwritten only while it carries Mandate's
// header. A Plan is both the drift report (sync --check) and the list of
// changes Apply makes.
package slurm

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/topology"
)

// The marks of what Mandate owns in Slurm's database.
const (
	// Organization is the organization of every account Sync writes.
	Organization = "mandate"
	// DescriptionPrefix starts the description of every account and QOS
	// Sync writes.
	DescriptionPrefix = "mandate: "
)

// GPUResource is the model's quota resource Slurm counts as gres/gpu.
const GPUResource = topology.DefaultGPUResource

// The TRES names of GPUs.
const (
	TRESGPU = "gres/gpu"
	// PreemptRequeue is the PreemptMode of a preemptible tier's QOS: its
	// jobs are requeued when a higher tier takes their GPUs.
	PreemptRequeue = "requeue"
	// PreemptCluster is the PreemptMode of a tier nobody preempts.
	PreemptCluster = "cluster"
)

// Account is one Slurm account with its association on the cluster.
type Account struct {
	Name, Parent, Description string
	// Fairshare is the association's raw share: the tenant's GPU guarantee
	// (at least 1).
	Fairshare int64
	// GrpTRES are the association's group limits by TRES name.
	GrpTRES map[string]int64
	// QOS are the QOS the account's jobs may use; DefaultQOS the one a job
	// naming none gets.
	QOS        []string
	DefaultQOS string
}

// QOS is one Slurm QOS: a priority tier.
type QOS struct {
	Name        string
	Priority    int
	Preempt     []string
	PreemptMode string
	Description string
}

// File is one configuration file Sync writes, by its name in Slurm's
// configuration directory.
type File struct {
	Name    string
	Content string
}

// Desired is what the model wants of a Slurm cluster.
type Desired struct {
	Accounts []Account
	QOS      []QOS
	Files    []File
	// Unexpressed lists what of the model Slurm cannot hold, for people.
	Unexpressed []string
}

// Nodes maps each Slurm node's name to its labels (the Kubernetes node
// labels the model's topology levels and GPU product name).
type Nodes map[string]map[string]string

// Options chooses what Render produces.
type Options struct {
	// ProductLabel is the node label naming the GPU product (default
	// nvidia.com/gpu.product).
	ProductLabel string
}

// GresType is the gres/gpu type Slurm knows a GPU product by: the
// product's name in lower case (NVIDIA-H100-80GB-HBM3 is
// gres/gpu:nvidia-h100-80gb-hbm3).
func GresType(product string) string { return strings.ToLower(product) }

// Render returns what the model wants of a Slurm cluster whose nodes are
// nodes; with no nodes, it wants no files (they are left alone). It is
// pure.
func Render(m model.Model, nodes Nodes, o Options) (Desired, error) {
	if o.ProductLabel == "" {
		o.ProductLabel = topology.DefaultProductLabel
	}
	var d Desired
	for _, name := range m.TierNames() {
		t := m.Priorities[name]
		q := QOS{Name: name, Priority: t.Value, Preempt: slices.Clone(m.Preemption.MayPreempt[name]),
			PreemptMode: PreemptCluster, Description: describe(t.Description)}
		if t.Preemptible {
			q.PreemptMode = PreemptRequeue
		}
		sort.Strings(q.Preempt)
		d.QOS = append(d.QOS, q)
	}
	for _, name := range m.TenantNames() {
		t := m.Tenants[name]
		a := Account{Name: name, Parent: t.Parent, Description: describe(t.Description), Fairshare: 1, GrpTRES: map[string]int64{}}
		if a.Parent == "" {
			a.Parent = "root"
		}
		if q, ok := t.Quota[GPUResource]; ok {
			a.GrpTRES[TRESGPU] = q.Ceiling
			a.Fairshare = max(q.Guaranteed, 1)
			for _, p := range m.Products(name, GPUResource) {
				a.GrpTRES[TRESGPU+":"+GresType(p)] = q.Products[p].Ceiling
			}
		}
		for _, r := range m.Resources(name) {
			if r != GPUResource {
				d.Unexpressed = append(d.Unexpressed, fmt.Sprintf("tenant %s: quota of %s (Slurm counts %s only)", name, r, GPUResource))
			}
		}
		classes, _, _ := m.AllowedClasses(name)
		a.QOS = slices.Sorted(slices.Values(classes))
		a.DefaultQOS = defaultQOS(m, a.QOS)
		d.Accounts = append(d.Accounts, a)
	}
	if len(nodes) == 0 {
		// Without the nodes there is nothing to say about partitions and
		// switches: the files are left as they are rather than emptied.
		return d, nil
	}
	files, err := renderFiles(m, nodes, o)
	if err != nil {
		return d, err
	}
	d.Files = files
	return d, nil
}

// defaultQOS is the QOS of a job that names none: the model's default
// class for batch work when the account may use it, else the lowest tier
// it may use.
func defaultQOS(m model.Model, allowed []string) string {
	if c := m.ClassDefaults["batch"]; slices.Contains(allowed, c) {
		return c
	}
	best := ""
	for _, c := range allowed {
		if best == "" || m.Priorities[c].Value < m.Priorities[best].Value {
			best = c
		}
	}
	return best
}

// describe is a description as Sync writes it: the mark, then the model's
// text on one line. Slurm keeps descriptions in lower case.
func describe(text string) string {
	text = strings.Join(strings.Fields(strings.NewReplacer("'", "", "\"", "").Replace(text)), " ")
	return strings.ToLower(DescriptionPrefix + text)
}
