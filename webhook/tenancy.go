package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/workload"
)

// Tenancy guards the mandate.dev/tenant label of namespaces: the tenant a
// namespace belongs to decides whose quota its workloads spend, so only
// admins may set, change or remove it.
type Tenancy struct {
	// AdminGroups may change the label; config.DefaultAdminGroups when empty.
	AdminGroups []string
}

var _ admission.Handler = (*Tenancy)(nil)

// Handle implements admission.Handler for Namespace CREATE and UPDATE.
func (t *Tenancy) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	newTenant, newSet, err := tenantOf(req.Object.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var oldTenant string
	var oldSet bool
	if req.Operation == admissionv1.Update {
		if oldTenant, oldSet, err = tenantOf(req.OldObject.Raw); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
	}
	if newTenant == oldTenant && newSet == oldSet {
		return admission.Allowed("")
	}
	admins := t.adminGroups()
	if slices.ContainsFunc(req.UserInfo.Groups, func(g string) bool { return slices.Contains(admins, g) }) {
		ctrl.LoggerFrom(ctx).Info("tenant label changed", "namespace", req.Name, "user", req.UserInfo.Username,
			"from", oldTenant, "to", newTenant)
		return admission.Allowed("")
	}
	what := "set"
	switch {
	case oldSet && !newSet:
		what = "remove"
	case oldSet:
		what = "change"
	}
	return admission.Denied(fmt.Sprintf("user %q may not %s the %s label of namespace %q: only members of %s may set, change or remove it",
		req.UserInfo.Username, what, workload.LabelTenant, req.Name, strings.Join(admins, " or ")))
}

func (t *Tenancy) adminGroups() []string {
	if len(t.AdminGroups) > 0 {
		return t.AdminGroups
	}
	return config.DefaultAdminGroups
}

// tenantOf reads the tenant label of a raw namespace.
func tenantOf(raw []byte) (string, bool, error) {
	if len(raw) == 0 {
		return "", false, nil
	}
	var ns struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &ns); err != nil {
		return "", false, fmt.Errorf("unable to read the namespace: %w", err)
	}
	v, ok := ns.Metadata.Labels[workload.LabelTenant]
	return v, ok, nil
}
