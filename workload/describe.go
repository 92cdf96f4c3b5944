package workload

import "strings"

// KindName is how people read a kind in Mandate's tables: the object's
// Kind, but a Volcano Job is "VolcanoJob" (kubectl's vcjob), never to be
// mistaken for a batch Job.
func KindName(apiVersion, kind string) string {
	if kind == "Job" && strings.HasPrefix(apiVersion, "batch.volcano.sh/") {
		return "VolcanoJob"
	}
	return kind
}

// Describe names a workload as `mandate eval`, `mandate audit` and
// `make demo` show it: "VolcanoJob research/vit-sweep".
func Describe(apiVersion, kind, namespace, name string) string {
	return KindName(apiVersion, kind) + " " + namespace + "/" + name
}
