package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mandate-dev/mandate/evictguard"
)

// webhookEvictions labels the eviction guard's admissions in the metrics.
const webhookEvictions = "evictions"

// Evictions is the transport of the eviction guard (package evictguard)
// on /validate: a scheduler's DELETE of a pod, CREATE of pods/eviction and
// pods/status UPDATE that adds the DisruptionTarget condition.
type Evictions struct {
	// Identities are the schedulers' user names (config
	// schedulerIdentities); a request by anyone else is allowed (the
	// webhook configuration's matchConditions send only theirs).
	Identities []string
	// Pods reads the pod an Eviction names (the API server, not a cache:
	// the informers strip pods' annotations); nil allows evictions.
	Pods client.Reader
	// Tenant is a namespace's tenant, "" when unknown.
	Tenant func(namespace string) string
}

// evictionAction says which guarded request req is, if any.
func evictionAction(req admission.Request) (evictguard.Action, bool) {
	if req.Kind.Group != "" && req.Kind.Group != "policy" {
		return "", false
	}
	switch {
	case req.Operation == admissionv1.Delete && req.Kind.Kind == "Pod" && req.SubResource == "":
		return evictguard.ActionDelete, true
	case req.Operation == admissionv1.Create && req.SubResource == "eviction":
		return evictguard.ActionEvict, true
	case req.Operation == admissionv1.Update && req.Kind.Kind == "Pod" && req.SubResource == "status":
		return evictguard.ActionMark, true
	}
	return "", false
}

// Handle decides a guarded request (evictionAction says it is one).
func (e *Evictions) Handle(ctx context.Context, req admission.Request, action evictguard.Action) admission.Response {
	start := time.Now()
	if !slices.Contains(e.Identities, req.UserInfo.Username) {
		return observe(webhookEvictions, req, start, admission.Allowed("not a scheduler"))
	}
	pod, err := e.pod(ctx, req, action)
	if err != nil {
		logFor(ctx, req).Error(err, "eviction guard: unable to read the pod; allowed")
		return observe(webhookEvictions, req, start, admission.Allowed("the eviction guard could not read the pod"))
	}
	if pod == nil {
		return observe(webhookEvictions, req, start, admission.Allowed("nothing to guard"))
	}
	tenant := ""
	if e.Tenant != nil {
		tenant = e.Tenant(pod.Namespace)
	}
	d, err := evictguard.Decide(pod, tenant, req.UserInfo.Username, action)
	if err != nil {
		logFor(ctx, req).Error(err, "eviction guard: unreadable directives; allowed")
		return observe(webhookEvictions, req, start, admission.Allowed("the eviction guard could not read the directives"))
	}
	if !d.Refused {
		return observe(webhookEvictions, req, start, admission.Allowed("preemptible, or not admitted by Mandate"))
	}
	evictguard.CountRefusal(action)
	logFor(ctx, req).Info("eviction guard refused", "action", string(action), "user", req.UserInfo.Username, "tenant", tenant)
	return evictionRefusal(action, observe(webhookEvictions, req, start, admission.Denied(d.Message)))
}

// evictionRefusal is a denial (counted as one, 403) answered with the status the
// caller handles without retrying at once. kube-scheduler's asynchronous
// preemption puts the preemptor straight back into its active queue when
// marking or deleting a victim fails with any error but NotFound, and
// tries again within milliseconds: measured on the real kube-scheduler
// 1.36.3, one pending pod made about 2000 refused attempts a minute. On
// NotFound it takes the victim as gone, keeps the preemptor nominated and
// waits for the cluster to change (TestEvictionGuardKeepsGuaranteedWork
// bounds the rate). The message still says why. An eviction is refused as
// a PodDisruptionBudget refuses one, 429 TooManyRequests, which drains and
// descheduler-like clients retry with back-off.
func evictionRefusal(action evictguard.Action, denied admission.Response) admission.Response {
	code, reason := int32(http.StatusNotFound), metav1.StatusReasonNotFound
	if action == evictguard.ActionEvict {
		code, reason = http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests
	}
	denied.Result.Code, denied.Result.Reason = code, reason
	return denied
}

// pod is the pod the request would disrupt, nil when it does not
// (a status update that adds no DisruptionTarget condition).
func (e *Evictions) pod(ctx context.Context, req admission.Request, action evictguard.Action) (*corev1.Pod, error) {
	switch action {
	case evictguard.ActionEvict:
		if e.Pods == nil {
			return nil, nil
		}
		pod := &corev1.Pod{}
		if err := e.Pods.Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: req.Name}, pod); err != nil {
			return nil, fmt.Errorf("unable to read pod %s/%s: %w", req.Namespace, req.Name, err)
		}
		return pod, nil
	case evictguard.ActionMark:
		old, cur := &corev1.Pod{}, &corev1.Pod{}
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return nil, fmt.Errorf("unable to decode the pod: %w", err)
		}
		if err := json.Unmarshal(req.Object.Raw, cur); err != nil {
			return nil, fmt.Errorf("unable to decode the pod: %w", err)
		}
		if disrupted(old) || !disrupted(cur) {
			return nil, nil
		}
		return old, nil
	default:
		pod := &corev1.Pod{}
		if err := json.Unmarshal(req.OldObject.Raw, pod); err != nil {
			return nil, fmt.Errorf("unable to decode the pod: %w", err)
		}
		return pod, nil
	}
}

// disrupted says whether pod carries a True DisruptionTarget condition.
func disrupted(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue
	})
}
