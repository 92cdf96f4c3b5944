// Package slurmview reads Slurm's own view of its jobs — squeue's state
// and pending reason, and the association manager's limits and usage —
// and attributes each pending reason to the authority dimension that
// holds the job (quota for an account's or a QOS's limit, priority for
// jobs ahead of it, topology for no free fit), with the limit and the
// current value where Slurm has them. `mandate explain slurm/JOBID` and
// `mandate report --slurm` print it next to the Kubernetes schedulers'
// views.
package slurmview

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/mandate-dev/mandate/schedsync/slurm"
)

// The dimensions a reason is attributed to, as the authority model names
// them.
const (
	DimensionQuota    = "quota"
	DimensionPriority = "priority"
	DimensionTopology = "topology"
	DimensionTenancy  = "tenancy"
)

// reasonPrefixes attribute squeue's pending reasons to dimensions: one
// definition, read by Attribute. Longer prefixes first.
var reasonPrefixes = []struct{ prefix, dimension, says string }{
	{"AssocGrp", DimensionQuota, "the account (or an ancestor) is at a group limit of its association"},
	{"AssocMax", DimensionQuota, "the job is above a per-job limit of its association"},
	{"QOSGrp", DimensionQuota, "the QOS is at a group limit"},
	{"QOSMax", DimensionQuota, "the job is above a per-user or per-job limit of its QOS"},
	{"InvalidAccount", DimensionTenancy, "the account is not one the user may submit to"},
	{"InvalidQOS", DimensionPriority, "the QOS is not one the account may use"},
	{"Priority", DimensionPriority, "jobs of higher priority are ahead of it"},
	{"Resources", DimensionTopology, "no set of nodes (and switches) has the GPUs free now"},
	{"ReqNodeNotAvail", DimensionTopology, "the nodes it needs are not available"},
}

// Attribute is the dimension a pending reason stands for and what it
// says; ok false for a reason no authority dimension holds (a dependency,
// a hold, a begin time).
func Attribute(reason string) (dimension, says string, ok bool) {
	for _, r := range reasonPrefixes {
		if strings.HasPrefix(reason, r.prefix) {
			return r.dimension, r.says, true
		}
	}
	return "", "", false
}

// Job is one job as squeue shows it.
type Job struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Account   string `json:"account"`
	QOS       string `json:"qos"`
	Partition string `json:"partition"`
	State     string `json:"state"`
	Reason    string `json:"reason"`
	Nodes     int    `json:"nodes"`
	// GPUs is the job's whole GPU request: nodes × GPUs per node.
	GPUs int64 `json:"gpus"`
}

// Limit is one association's limit of a TRES and its current use, as
// the association manager keeps them.
type Limit struct {
	Account string `json:"account"`
	TRES    string `json:"tres"`
	// Limit is -1 when none.
	Limit int64 `json:"limit"`
	Used  int64 `json:"used"`
}

// Explanation is why a Slurm job waits, in the model's terms.
type Explanation struct {
	Job       Job    `json:"job"`
	Dimension string `json:"dimension,omitempty"`
	Verdict   string `json:"verdict"`
	Limit     string `json:"limit,omitempty"`
	Current   string `json:"current,omitempty"`
	Message   string `json:"message"`
}

const squeueFormat = "%i|%j|%a|%q|%P|%T|%r|%D|%b"

// Jobs reads the jobs squeue shows; ids limits them.
func Jobs(ctx context.Context, run Runner, ids ...string) ([]Job, error) {
	args := []string{"-h", "-o", squeueFormat}
	if len(ids) > 0 {
		args = append(args, "-j", strings.Join(ids, ","))
	}
	out, err := run(ctx, "squeue", args...)
	if err != nil {
		return nil, fmt.Errorf("unable to read Slurm's jobs: %w", err)
	}
	var jobs []Job
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 9 {
			continue
		}
		j := Job{ID: f[0], Name: f[1], Account: f[2], QOS: f[3], Partition: f[4], State: f[5], Reason: f[6]}
		j.Nodes, _ = strconv.Atoi(f[7])
		j.GPUs = int64(max(j.Nodes, 1)) * gpusPerNode(f[8])
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// gpusPerNode reads squeue's TRES per node: "gres:gpu:6",
// "gres:gpu:h100:6", "gres/gpu:6".
func gpusPerNode(tres string) int64 {
	var n int64
	for _, t := range strings.Split(tres, ",") {
		t = strings.Replace(t, "gres/", "gres:", 1)
		parts := strings.Split(t, ":")
		if len(parts) < 2 || parts[0] != "gres" || parts[1] != "gpu" {
			continue
		}
		c := int64(1)
		if len(parts) > 2 {
			if v, err := strconv.ParseInt(parts[len(parts)-1], 10, 64); err == nil {
				c = v
			}
		}
		n += c
	}
	return n
}

// Limits reads the association manager's GPU limits and use of the
// accounts' own associations, and each one's parent.
func Limits(ctx context.Context, run Runner, accounts []string) (map[string]Limit, map[string]string, error) {
	args := []string{"show", "assoc_mgr", "flags=assoc"}
	if len(accounts) > 0 {
		args = append(args, "accounts="+strings.Join(accounts, ","))
	}
	out, err := run(ctx, "scontrol", args...)
	if err != nil {
		return nil, nil, fmt.Errorf("unable to read Slurm's association limits: %w", err)
	}
	limits, parents := map[string]Limit{}, map[string]string{}
	var account string
	var user bool
	for _, field := range strings.Fields(string(out)) {
		k, v, ok := strings.Cut(field, "=")
		if !ok {
			continue
		}
		switch k {
		case "Account":
			account = v
		case "UserName":
			user = v != ""
		case "ParentAccount":
			if !user {
				parents[account], _, _ = strings.Cut(v, "(")
			}
		case "GrpTRES":
			if user {
				continue
			}
			for _, t := range strings.Split(v, ",") {
				name, val, _ := strings.Cut(t, "=")
				if name != slurm.TRESGPU {
					continue
				}
				l := Limit{Account: account, TRES: name, Limit: -1}
				lim, used, _ := strings.Cut(strings.TrimSuffix(val, ")"), "(")
				if lim != "N" {
					l.Limit, _ = strconv.ParseInt(lim, 10, 64)
				}
				l.Used, _ = strconv.ParseInt(used, 10, 64)
				limits[account] = l
			}
		}
	}
	return limits, parents, nil
}
