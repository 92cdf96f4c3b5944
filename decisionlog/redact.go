package decisionlog

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mandate-dev/mandate/workload"
)

// Redacted replaces a value Redact hides.
const Redacted = "(redacted)"

// Redact returns a copy of a decoded Kubernetes object safe to log, by
// allow-list: at every depth (so the pod templates of every governed kind
// too) it keeps only the fields a reader of a decision needs — identity,
// labels, owners, the gang's shape (the fields every kind shares, and those
// the kind's registration names: workload.Kind.Shape), images, resources,
// priority, scheduler, node selection and topology — and drops everything
// else, so a
// field that can carry a secret (probes and their HTTP headers, env values,
// args, command, volume sources, lifecycle hooks, and any field Kubernetes
// adds later) never reaches the log. Env entries keep only their name;
// annotation values are replaced by Redacted (they may carry tokens, and
// last-applied-configuration the whole object). obj is not modified.
func Redact(obj map[string]any) map[string]any {
	var shape workload.Shape
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if gv, err := schema.ParseGroupVersion(apiVersion); err == nil {
		if k, ok := workload.Lookup(gv.WithKind(kind)); ok {
			shape = k.Shape
		}
	}
	return redactor{shape}.object(obj)
}

// redactor redacts an object of a kind whose gang is held, beyond the
// fields of logged, by shape's.
type redactor struct{ shape workload.Shape }

// logged are the fields Redact keeps of every kind: identity, the pod
// template and the gang fields kinds share. A map under a key of the
// kind's Shape.RoleMaps keeps all its keys (they are role names, e.g. a
// PyTorchJob's Master and Worker) and redacts each value.
var logged = map[string]bool{
	// identity and ownership
	"apiVersion": true, "kind": true, "metadata": true, "name": true, "namespace": true, "resources": true,
	"generateName": true, "uid": true, "ownerReferences": true, "controller": true,
	// the gang
	"spec": true, "template": true, "replicas": true, "parallelism": true, "completions": true,
	"minAvailable": true, "minReplicas": true, "maxReplicas": true,
	"runPolicy": true, "schedulingPolicy": true, "minMember": true, "queue": true, "priorityClass": true,
	// containers: what they run and what they ask for
	"containers": true, "initContainers": true, "image": true,
	"claims": true, "restartPolicy": true,
	// scheduling
	"schedulerName": true, "priorityClassName": true, "priority": true, "nodeName": true,
	"affinity": true, "nodeAffinity": true, "podAffinity": true, "podAntiAffinity": true,
	"requiredDuringSchedulingIgnoredDuringExecution": true, "preferredDuringSchedulingIgnoredDuringExecution": true,
	"nodeSelectorTerms": true, "matchExpressions": true, "matchFields": true, "key": true,
	"operator": true, "values": true, "weight": true, "preference": true, "podAffinityTerm": true,
	"labelSelector": true, "topologyKey": true, "tolerations": true, "effect": true, "value": true,
	"tolerationSeconds": true, "topologySpreadConstraints": true, "maxSkew": true, "whenUnsatisfiable": true,
	// GPUs through DRA
	"resourceClaims": true, "resourceClaimName": true, "resourceClaimTemplateName": true,
}

// dataMaps are logged fields whose keys are data (label keys, resource
// names): kept whole, their values being plain strings.
var dataMaps = map[string]bool{"labels": true, "nodeSelector": true, "limits": true, "requests": true, "matchLabels": true}

func (r redactor) object(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch {
		case k == "annotations":
			if a, ok := v.(map[string]any); ok {
				hidden := make(map[string]any, len(a))
				for ak := range a {
					hidden[ak] = Redacted
				}
				out[k] = hidden
			}
		case k == "env":
			if list, ok := v.([]any); ok {
				names := make([]any, 0, len(list))
				for _, item := range list {
					if e, ok := item.(map[string]any); ok {
						names = append(names, map[string]any{"name": e["name"]})
					}
				}
				out[k] = names
			}
		case dataMaps[k]:
			if d, ok := v.(map[string]any); ok {
				kept := make(map[string]any, len(d))
				for dk, dv := range d {
					if _, nested := dv.(map[string]any); !nested {
						kept[dk] = dv
					}
				}
				out[k] = kept
			}
		case slices.Contains(r.shape.RoleMaps, k):
			if roles, ok := v.(map[string]any); ok {
				kept := make(map[string]any, len(roles))
				for role, spec := range roles {
					kept[role] = r.value(spec)
				}
				out[k] = kept
			}
		case logged[k], slices.Contains(r.shape.Fields, k):
			out[k] = r.value(v)
		}
	}
	return out
}

func (r redactor) value(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return r.object(v)
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			out[i] = r.value(item)
		}
		return out
	default:
		return v
	}
}
