package webhook

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/workload"
)

// ConfigurationName names both webhook configurations.
const ConfigurationName = config.WebhookConfigurationName

// Names of the webhooks inside the configurations.
const (
	MutatingWebhookName   = "mutate.mandate.dev"
	ValidatingWebhookName = "validate.mandate.dev"
	NamespaceWebhookName  = "namespaces.mandate.dev"
	EvictionWebhookName   = "evictions.mandate.dev"
)

// DefaultTimeoutSeconds bounds one admission call. Admission sits on every
// create, and kubectl and controllers retry a failed one: 3s bounds the
// worst case well under the API server's 30s request timeout, while a
// decision takes about 1ms at p99.
const DefaultTimeoutSeconds int32 = 3

// RegistrationOptions say how the API server reaches Mandate.
type RegistrationOptions struct {
	// Service, when set, is Mandate's Service; else URL is its base URL
	// ("https://host:port"), to which the paths are appended.
	Service *ServiceReference
	URL     string
	// CABundle verifies the serving certificate.
	CABundle []byte
	// Namespace is Mandate's own, never governed.
	Namespace string
	// FailurePolicy defaults to Fail: a workload Mandate cannot see is a
	// workload nobody decided.
	FailurePolicy *admissionregistrationv1.FailurePolicyType
	// TimeoutSeconds defaults to DefaultTimeoutSeconds.
	TimeoutSeconds int32
	// NamespaceSelector chooses the namespaces whose workloads are
	// governed; DefaultNamespaceSelector when nil, every namespace when
	// empty. The system namespaces and Namespace are excluded either way.
	// It does not apply to the tenant-label guard on namespaces, which
	// must see a namespace that is about to get the label.
	NamespaceSelector *metav1.LabelSelector
	// SchedulerIdentities are the users whose evictions the eviction
	// guard checks (config schedulerIdentities);
	// config.DefaultSchedulerIdentities when nil. Empty registers no
	// guard.
	SchedulerIdentities []string
}

// DefaultNamespaceSelector governs the namespaces labelled with a tenant
// (mandate.dev/tenant, any value), and only those: installing Mandate into
// a cluster that runs other workloads never blocks a namespace nobody
// opted in (a monitoring stack, an operator's), and a namespace joins
// when an admin labels it. The chart's webhook.namespaceSelector default
// is the same (test/chart holds them equal).
func DefaultNamespaceSelector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: workload.LabelTenant, Operator: metav1.LabelSelectorOpExists,
	}}}
}

// ServiceReference names Mandate's Service.
type ServiceReference struct {
	Namespace string
	Name      string
	Port      int32
}

// Configurations returns the mutating and validating webhook configurations
// that route governed workloads (and namespaces, to guard their tenant) to
// Mandate.
func Configurations(o RegistrationOptions) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	failure := ptr.To(admissionregistrationv1.Fail)
	if o.FailurePolicy != nil {
		failure = ptr.To(*o.FailurePolicy)
	}
	timeout := o.TimeoutSeconds
	if timeout == 0 {
		timeout = DefaultTimeoutSeconds
	}
	// The PodGroup is created by a controller, not by admission, so a
	// dry-run request has no side effects.
	sideEffects := ptr.To(admissionregistrationv1.SideEffectClassNone)
	excluded := append(append([]string{}, review.SystemNamespaces...), o.Namespace)
	if o.Namespace == "" {
		excluded = excluded[:len(review.SystemNamespaces)]
	}
	createRules := workloadRules(admissionregistrationv1.Create)
	workloadSelector := governed(o.NamespaceSelector, excluded)

	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: ConfigurationName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    MutatingWebhookName,
			ClientConfig:            o.clientConfig(MutatePath),
			Rules:                   createRules,
			FailurePolicy:           failure,
			MatchPolicy:             ptr.To(admissionregistrationv1.Exact),
			NamespaceSelector:       workloadSelector,
			SideEffects:             sideEffects,
			TimeoutSeconds:          ptr.To(timeout),
			AdmissionReviewVersions: []string{"v1"},
			// Another webhook may change the pod templates after Mandate:
			// decide and patch again.
			ReinvocationPolicy: ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy),
			MatchConditions:    workloadConditions(),
		}},
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: ConfigurationName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         ValidatingWebhookName,
			ClientConfig: o.clientConfig(ValidatePath),
			// UPDATE too: Mandate's keys on what it admitted are immutable.
			Rules:                   append(workloadRules(admissionregistrationv1.Create, admissionregistrationv1.Update), scaleRules()...),
			FailurePolicy:           failure,
			MatchPolicy:             ptr.To(admissionregistrationv1.Exact),
			NamespaceSelector:       workloadSelector,
			SideEffects:             sideEffects,
			TimeoutSeconds:          ptr.To(timeout),
			AdmissionReviewVersions: []string{"v1"},
			MatchConditions:         append(workloadConditions(), ownedKeysChanged()),
		}, {
			// Namespaces themselves: every tenant namespace is guarded,
			// whoever's, except Mandate's own. Not NamespaceSelector: a
			// namespace's own labels are what it is matched on, so a
			// selector on the tenant label would not see the update that
			// removes it, and one on another label would not see the one
			// that adds it.
			Name:         NamespaceWebhookName,
			ClientConfig: o.clientConfig(ValidatePath),
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
					Resources: []string{"namespaces"}, Scope: ptr.To(admissionregistrationv1.ClusterScope)},
			}},
			FailurePolicy:           failure,
			MatchPolicy:             ptr.To(admissionregistrationv1.Exact),
			NamespaceSelector:       namespaceNotIn(exempt(o.Namespace)),
			SideEffects:             sideEffects,
			TimeoutSeconds:          ptr.To(timeout),
			AdmissionReviewVersions: []string{"v1"},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				// Only a namespace that has, or had, a tenant label can
				// change it.
				Name: "tenant-label-involved",
				Expression: fmt.Sprintf(`(has(object.metadata.labels) && '%[1]s' in object.metadata.labels) || `+
					`(oldObject != null && has(oldObject.metadata.labels) && '%[1]s' in oldObject.metadata.labels)`, workload.LabelTenant),
			}},
		}},
	}
	identities := o.SchedulerIdentities
	if identities == nil {
		identities = config.DefaultSchedulerIdentities
	}
	if len(identities) > 0 {
		validating.Webhooks = append(validating.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name:         EvictionWebhookName,
			ClientConfig: o.clientConfig(ValidatePath),
			Rules:        EvictionRules(),
			// Always Ignore: an unavailable Mandate must never block a
			// node drain; the scheduler then evicts as without Mandate.
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			MatchPolicy:             ptr.To(admissionregistrationv1.Exact),
			NamespaceSelector:       workloadSelector,
			SideEffects:             sideEffects,
			TimeoutSeconds:          ptr.To(timeout),
			AdmissionReviewVersions: []string{"v1"},
			MatchConditions:         EvictionConditions(identities),
		})
	}
	return mutating, validating
}

// EvictionRules route what a scheduler evicts with to the eviction guard:
// a pod's DELETE, a pods/eviction CREATE, and the pods/status UPDATE that
// marks a victim with the DisruptionTarget condition before its DELETE.
func EvictionRules() []admissionregistrationv1.RuleWithOperations {
	rule := func(op admissionregistrationv1.OperationType, resource string) admissionregistrationv1.RuleWithOperations {
		return admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{op},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
				Resources: []string{resource}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
		}
	}
	return []admissionregistrationv1.RuleWithOperations{
		rule(admissionregistrationv1.Delete, "pods"),
		rule(admissionregistrationv1.Create, "pods/eviction"),
		rule(admissionregistrationv1.Update, "pods/status"),
	}
}

// SchedulerCondition is the name of the eviction guard's matchCondition
// on the requesting user.
const SchedulerCondition = "scheduler-identity"

// EvictionConditions send the eviction guard only the schedulers'
// requests (identities, their user names), and of their status updates
// only one that adds a True DisruptionTarget condition: every other
// DELETE, eviction and status write never waits on Mandate. The chart
// renders the first from webhook.schedulerIdentities, the same way.
func EvictionConditions(identities []string) []admissionregistrationv1.MatchCondition {
	quoted := make([]string, len(identities))
	for i, u := range identities {
		quoted[i] = "'" + u + "'"
	}
	disrupted := func(obj string) string {
		return fmt.Sprintf("(%[1]s != null && has(%[1]s.status) && has(%[1]s.status.conditions) && "+
			"%[1]s.status.conditions.exists(c, c.type == 'DisruptionTarget' && c.status == 'True'))", obj)
	}
	return []admissionregistrationv1.MatchCondition{{
		Name:       SchedulerCondition,
		Expression: "request.userInfo.username in [" + strings.Join(quoted, ", ") + "]",
	}, {
		Name:       "delete-evict-or-mark-disruption",
		Expression: "request.subResource != 'status' || (" + disrupted("object") + " && !" + disrupted("oldObject") + ")",
	}}
}

// workloadRules route the given operations of every registered workload kind.
func workloadRules(ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
	kinds := workload.Kinds()
	rules := make([]admissionregistrationv1.RuleWithOperations, len(kinds))
	for i, k := range kinds {
		rules[i] = admissionregistrationv1.RuleWithOperations{
			Operations: ops,
			Rule: admissionregistrationv1.Rule{APIGroups: []string{k.GVK.Group}, APIVersions: []string{k.GVK.Version},
				Resources: []string{k.Resource}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
		}
	}
	return rules
}

// scaleRules route an UPDATE of a scalable kind's scale subresource
// (kubectl scale, a HorizontalPodAutoscaler), which raises its replicas
// without an UPDATE of the object itself.
func scaleRules() []admissionregistrationv1.RuleWithOperations {
	var rules []admissionregistrationv1.RuleWithOperations
	for _, k := range workload.Kinds() {
		if !k.Scalable {
			continue
		}
		rules = append(rules, admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{k.GVK.Group}, APIVersions: []string{k.GVK.Version},
				Resources: []string{k.Resource + "/scale"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
		})
	}
	return rules
}

// workloadConditions skip what Mandate does not govern before the API
// server calls it. Only on fields a client cannot forge: DaemonSet pods are
// sent (an ownerReference is the client's to write) and
// review.Service.DaemonSetPod verifies the owner.
func workloadConditions() []admissionregistrationv1.MatchCondition {
	return []admissionregistrationv1.MatchCondition{{
		// Mirror pods are the kubelet's static pods, already running.
		Name:       "not-mirror-pod",
		Expression: `!has(object.metadata.annotations) || !('kubernetes.io/config.mirror' in object.metadata.annotations)`,
	}}
}

// ownedKeysChanged sends an UPDATE of a pod to Mandate only when it changes
// one of Mandate's own keys (scheduler.ChangedOwnedKeys, written here in
// CEL): every other update of a running pod, a controller removing a
// finalizer, never waits on Mandate, and does not fail when Mandate is
// down. Updates of gang owners (Jobs and the like, rare: their controllers
// write status through its subresource) are all sent, for a change of
// their demand to be decided.
func ownedKeysChanged() admissionregistrationv1.MatchCondition {
	owned := func(keys []string) string {
		quoted := make([]string, len(keys))
		for i, k := range keys {
			quoted[i] = "'" + k + "'"
		}
		return fmt.Sprintf("(k.startsWith('%s') || k in [%s])", workload.KeyPrefix, strings.Join(quoted, ", "))
	}
	// changed: an owned key of the new map that the old lacks or holds
	// with another value, or one of the old map that the new lacks.
	changed := func(field string, keys []string) string {
		cur, old := "object.metadata."+field, "oldObject.metadata."+field
		return fmt.Sprintf("(has(%[1]s) && %[1]s.exists(k, %[3]s && (!has(%[2]s) || !(k in %[2]s) || %[2]s[k] != %[1]s[k]))) || "+
			"(has(%[2]s) && %[2]s.exists(k, %[3]s && (!has(%[1]s) || !(k in %[1]s))))", cur, old, owned(keys))
	}
	return admissionregistrationv1.MatchCondition{
		Name: "create-owner-update-or-owned-keys-changed",
		Expression: "request.operation != 'UPDATE' || request.kind.kind != 'Pod' || " + changed("labels", scheduler.OwnedLabels) + " || " +
			changed("annotations", scheduler.OwnedAnnotations),
	}
}

// governed is the workload webhooks' namespace selector: sel (the
// default when nil) and not one of the excluded namespaces.
func governed(sel *metav1.LabelSelector, excluded []string) *metav1.LabelSelector {
	if sel == nil {
		sel = DefaultNamespaceSelector()
	}
	out := sel.DeepCopy()
	out.MatchExpressions = append(out.MatchExpressions, namespaceNotIn(excluded).MatchExpressions...)
	return out
}

func namespaceNotIn(names []string) *metav1.LabelSelector {
	if len(names) == 0 {
		return &metav1.LabelSelector{}
	}
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: names,
	}}}
}

func (o RegistrationOptions) clientConfig(path string) admissionregistrationv1.WebhookClientConfig {
	cc := admissionregistrationv1.WebhookClientConfig{CABundle: o.CABundle}
	if o.Service != nil {
		cc.Service = &admissionregistrationv1.ServiceReference{
			Namespace: o.Service.Namespace, Name: o.Service.Name, Path: ptr.To(path), Port: ptr.To(o.Service.Port),
		}
		if o.Service.Port == 0 {
			cc.Service.Port = nil // the API server's default, 443
		}
		return cc
	}
	cc.URL = ptr.To(strings.TrimSuffix(o.URL, "/") + path)
	return cc
}

// exempt lists Mandate's own namespace, never governed; none when unset.
func exempt(namespace string) []string {
	if namespace == "" {
		return nil
	}
	return []string{namespace}
}
