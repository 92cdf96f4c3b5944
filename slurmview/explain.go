package slurmview

import (
	"context"
	"fmt"
)

// Verdicts of an Explanation.
const (
	VerdictRuns  = "runs"
	VerdictWaits = "waits"
)

// Explain says why each job waits (or that it runs); ids limit the jobs,
// none means every job squeue shows.
func Explain(ctx context.Context, run Runner, ids ...string) ([]Explanation, error) {
	jobs, err := Jobs(ctx, run, ids...)
	if err != nil {
		return nil, err
	}
	if len(ids) > 0 && len(jobs) == 0 {
		return nil, fmt.Errorf("squeue shows no job %v", ids)
	}
	var accounts []string
	seen := map[string]bool{}
	for _, j := range jobs {
		if j.Account != "" && !seen[j.Account] {
			seen[j.Account] = true
			accounts = append(accounts, j.Account)
		}
	}
	limits, parents := map[string]Limit{}, map[string]string{}
	if len(accounts) > 0 {
		// The association manager lists an account's chain only when
		// asked for each; ask for every account Slurm has.
		if limits, parents, err = Limits(ctx, run, nil); err != nil {
			return nil, err
		}
	}
	out := make([]Explanation, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, explainJob(j, limits, parents))
	}
	return out, nil
}

// Runner runs a Slurm command; package schedsync/slurm's Exec runs the
// real one.
type Runner = func(ctx context.Context, name string, args ...string) ([]byte, error)

func explainJob(j Job, limits map[string]Limit, parents map[string]string) Explanation {
	e := Explanation{Job: j, Verdict: VerdictWaits}
	if j.State != "PENDING" {
		e.Verdict = VerdictRuns
		e.Message = fmt.Sprintf("Slurm job %s is %s", j.ID, j.State)
		return e
	}
	dim, says, ok := Attribute(j.Reason)
	if !ok {
		e.Message = fmt.Sprintf("Slurm job %s waits: %s (no authority dimension holds it)", j.ID, j.Reason)
		return e
	}
	e.Dimension = dim
	e.Message = fmt.Sprintf("Slurm job %s waits: %s: %s", j.ID, j.Reason, says)
	if dim != DimensionQuota {
		return e
	}
	// The association whose GPU limit the job would cross: the account
	// first, then its ancestors.
	for a, depth := j.Account, 0; a != "" && depth < 16; a, depth = parents[a], depth+1 {
		l, ok := limits[a]
		if !ok || l.Limit < 0 || l.Used+j.GPUs <= l.Limit {
			continue
		}
		e.Limit = fmt.Sprintf("account %s GrpTRES %s=%d", a, l.TRES, l.Limit)
		e.Current = fmt.Sprintf("%d in use + %d requested", l.Used, j.GPUs)
		e.Message = fmt.Sprintf("Slurm job %s waits (%s): account %s's ceiling is %d GPUs, %d are in use and the job asks for %d; ",
			j.ID, j.Reason, a, l.Limit, l.Used, j.GPUs)
		if j.GPUs > l.Limit {
			e.Message += fmt.Sprintf("it could never run: ask for at most %d or have the ceiling of %s raised in the model", l.Limit, a)
		} else {
			e.Message += fmt.Sprintf("it runs once %d of them are released", l.Used+j.GPUs-l.Limit)
		}
		break
	}
	return e
}
