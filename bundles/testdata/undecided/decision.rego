# A decision.rego that decides every workload but the smoke workload
# (bundles.SmokeInput): a bundle carrying it must be refused at the smoke
# step while the previous revision keeps serving.
package mandate

decision := {"allowed": true, "violations": [], "warnings": [], "directives": {}} if input.workload.name != "smoke"
