package scheduler

import "github.com/mandate-dev/mandate/scheduler/facts"

// A Kubernetes pod of a tenant whose work Slurm runs is told only what every
// scheduler understands (its priority class); Slurm itself is configured by
// `mandate sync --target slurm` and its jobs are decided from their
// #SBATCH lines (package workload/sbatch).
func init() { Register(facts.Slurm.Name, applyDefault) }
