package modelcheck

import "github.com/mandate-dev/mandate/model"

// checks are the semantic checks, each named as Problem.Check names it, run
// in this order over every model that passes the schema's type checks.
var checks = []struct {
	name string
	run  func(*model.Model, *reporter)
}{
	{"hierarchy", checkHierarchy},
	{"quota", checkQuota},
	{"priority", checkPriorityClasses},
	{"preemption", checkPreemption},
	{"scheduler", checkSchedulers},
	{"topology", checkTopology},
	{"placement", checkPlacement},
	{"enforcement", checkEnforcement},
	{"deviceClasses", checkDeviceClasses},
	{"gpuMemory", checkGPUMemory},
}

// CheckNames names the semantic checks, as Problem.Check names them; the
// schema's problems are "schema".
func CheckNames() []string {
	names := make([]string, len(checks))
	for i, c := range checks {
		names[i] = c.name
	}
	return names
}
