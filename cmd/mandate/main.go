// Command mandate is Mandate's one binary: the admission webhook server
// (serve), offline decisions, audits, policy bundles, model checks,
// simulation and OPA's CLI with Mandate's builtins. Its commands are
// package cli's.
package main

import (
	"os"

	"github.com/mandate-dev/mandate/cmd/mandate/cli"
)

func main() { os.Exit(cli.Mandate()) }
