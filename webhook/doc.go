// Package webhook is the door every workload passes: it normalises an
// object to a Workload, asks the evaluator for a Decision against the
// current cluster state, and renders the Decision's directives for the
// tenant's scheduler as a JSON patch. The same Review serves the admission
// handlers and the offline `mandate eval`.
package webhook
