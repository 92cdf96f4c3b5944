// Package evictguard decides whether a scheduler may evict a pod. The
// default kube-scheduler ranks preemption victims by priority value alone,
// so a guaranteed pod of one tenant can be chosen to make room for another
// tenant's pod of a higher tier. Mandate's validating webhook sends it the
// scheduler's pod DELETEs, pods/eviction CREATEs and the pods/status update
// that marks a victim (the DisruptionTarget condition), and Decide refuses
// them for a GPU pod Mandate admitted non-preemptible: work within its
// tenant's guarantee is never evicted by a scheduler, only borrowed and
// preemptible work is. Which requests are a scheduler's is the webhook
// configuration's matchConditions (on request.userInfo.username); this
// package sees only those.
package evictguard

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/topology"
)

// Rule names the rule in refusals, metrics and docs.
const Rule = "eviction-guard"

// Action is what the scheduler asked for.
type Action string

// Actions, the values of the metric's action label.
const (
	// ActionDelete is a DELETE of the pod (kube-scheduler's preemption).
	ActionDelete Action = "delete"
	// ActionEvict is a CREATE of pods/eviction (the Eviction API).
	ActionEvict Action = "evict"
	// ActionMark is the pods/status update that adds the DisruptionTarget
	// condition, which kube-scheduler writes before its DELETE: refused
	// too, so a protected pod keeps no stale condition.
	ActionMark Action = "mark"
)

// Actions lists every Action.
var Actions = []Action{ActionDelete, ActionEvict, ActionMark}

// Decision is Decide's answer.
type Decision struct {
	// Refused: the scheduler may not do it.
	Refused bool
	// Message, on a refusal, says why and what a person can do.
	Message string
}

// Decide says whether user (a scheduler identity) may do action to pod,
// as the API server holds it; tenant is its namespace's tenant ("" when
// unknown). Only Mandate's own recorded directives
// (scheduler.AnnotationDirectives, which the validating webhook keeps
// unchanged) say a pod is protected: a pod without them, or whose
// directives say preemptible, may go. A pod whose directives cannot be
// read is let go with an error, as an unavailable Mandate lets it go.
// So is a pod that holds no GPUs (HoldsGPUs): a guarantee is GPUs, and
// the quota rules never weigh a pod without any, so its preemptible=false
// grants it nothing to keep.
func Decide(pod *corev1.Pod, tenant, user string, action Action) (Decision, error) {
	d, protected, err := protection(pod)
	if err != nil || !protected {
		return Decision{}, err
	}
	if tenant == "" {
		tenant = "(unknown)"
	}
	return Decision{Refused: true, Message: fmt.Sprintf(
		"mandate: %s may not %s pod %s/%s of tenant %s (rule %s): Mandate admitted it non-preemptible, "+
			"within the tenant's guarantee (priority class %q, %s preemptible=false), and a scheduler "+
			"evicts only borrowed or preemptible work; the pod that wanted its place waits for free GPUs. "+
			"To free them anyway, the tenant or an admin deletes the pod, or drains the node as an admin",
		user, verb(action), pod.Namespace, pod.Name, tenant, Rule, d.PriorityClass, scheduler.AnnotationDirectives)}, nil
}

// Protected says whether the guard refuses the schedulers' eviction of
// pod (Decide): a pod that asks for GPUs and that Mandate admitted
// non-preemptible. Not a pod whose directives cannot be read.
func Protected(pod *corev1.Pod) bool {
	_, protected, err := protection(pod)
	return err == nil && protected
}

// protection is Protected with the recorded directives it read.
func protection(pod *corev1.Pod) (evaluator.Directives, bool, error) {
	if !HoldsGPUs(pod) {
		return evaluator.Directives{}, false, nil
	}
	d, admitted, err := scheduler.RecordedDirectives(pod.Annotations)
	if err != nil {
		return d, false, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return d, admitted && !d.Preemptible, nil
}

// HoldsGPUs says whether pod may hold GPUs by what its spec, which
// nobody changes after creation, asks: a GPU extended resource
// (topology.PodGPURequests) or a DRA ResourceClaim (whose devices may be
// GPUs; the guard does not resolve them). Not KAI's sharing annotations,
// which anyone who may annotate the pod can add afterwards. Without this,
// a tenant's CPU-only pods of a non-preemptible tier, never weighed
// against any guarantee, would be kept on GPU nodes against every
// scheduler's preemption.
func HoldsGPUs(pod *corev1.Pod) bool {
	return len(topology.PodGPURequests(pod)) > 0 || len(pod.Spec.ResourceClaims) > 0
}

func verb(a Action) string {
	switch a {
	case ActionEvict:
		return "evict"
	case ActionMark:
		return "mark for disruption (DisruptionTarget)"
	default:
		return "delete"
	}
}
