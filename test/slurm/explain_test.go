package slurm_test

import "testing"

func testExplainPendingJob(t *testing.T, c *slurmCluster, bin, bundle, job string) {}
