// Command kubectl-mandate is Mandate's kubectl plugin: on PATH, kubectl
// mandate explain|report|simulate runs mandate's own commands (package
// cli), reading the cluster through kubectl's kubeconfig.
package main

import (
	"os"

	"github.com/mandate-dev/mandate/cmd/mandate/cli"
)

func main() { os.Exit(cli.KubectlPlugin()) }
