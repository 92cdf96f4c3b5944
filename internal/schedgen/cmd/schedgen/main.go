// Command schedgen (`make chart-rules`) writes the model schema's scheduler
// enum and the chart's scheduler RBAC rules from the scheduler registry
// (package schedgen), in the repository root it runs in.
package main

import (
	"fmt"
	"os"

	"github.com/mandate-dev/mandate/internal/schedgen"
)

func main() {
	if err := schedgen.Write("."); err != nil {
		fmt.Fprintln(os.Stderr, "schedgen:", err)
		os.Exit(1)
	}
}
