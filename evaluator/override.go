package evaluator

import "sort"

// override turns the violations a decision denies for into action's
// (EnforceDryRun or EnforceWarn) and admits the workload; nothing for an
// empty action. The explanations' deny verdicts follow, so `--explain`
// shows what would have denied.
func override(d *Decision, action string) {
	if action == "" || len(d.Violations) == 0 {
		return
	}
	for _, v := range d.Violations {
		v.Enforcement = action
		if action == EnforceWarn {
			d.Warned = append(d.Warned, v)
			// As the model words a warn-stage violation.
			d.Warnings = append(d.Warnings, v.Code+": "+v.Message)
		} else {
			d.DryRun = append(d.DryRun, v)
		}
	}
	sort.Strings(d.Warnings)
	d.Violations = nil
	d.Allowed = true
	for i := range d.Explanations {
		if d.Explanations[i].Verdict == EnforceDeny {
			d.Explanations[i].Verdict = action
		}
	}
}
