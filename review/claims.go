package review

import (
	"context"
	"fmt"
	"sort"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/workload"
)

// modeled is what a Decider that knows its authority model offers (the
// evaluator): the DRA DeviceClass mapping is model data.
type modeled interface{ Model() model.Model }

// Codes of the warnings about DRA claims; they are Go's, not the policy's:
// the claims are separate objects the policy never sees.
const (
	CodeDRAUnmapped  = "DRA_UNMAPPED_DEVICE_CLASS"
	CodeDRAUnchecked = "DRA_UNCHECKED"
)

// claimDevices is what one DRA claim (or claim template) asks for, by
// quota resource, and the requests it could not count: counted as running
// usage counts a claim not allocated yet (topology.RequestedDevices).
type claimDevices = topology.ClaimDevices

// resolveClaims turns the DRA claims w's pod templates reference into GPU
// demand: every request of a DeviceClass the model counts as GPUs
// (model.DeviceResource) counts its devices (count, 1 by default) as that
// resource; a ResourceClaimTemplate once per pod of its role, a shared
// ResourceClaim once for the whole workload. It returns warnings for
// requests it could not count (an unmapped DeviceClass, allocationMode All,
// an unreadable claim). Claims are read through s.Claims (a cached client
// in serve); without it they are left uncounted, with a warning.
func (s *Service) resolveClaims(ctx context.Context, w *workload.Workload, m model.Model) ([]string, error) {
	if len(w.Claims) == 0 {
		return nil, nil
	}
	if s.Claims == nil {
		return []string{fmt.Sprintf("%s: the pods reference DRA resource claims, which were not read here, so their devices are not counted", CodeDRAUnchecked)}, nil
	}
	var warnings []string
	perPod := make([]map[string]int, len(w.Roles))
	shared := map[string]int{}
	seenShared := map[string]bool{}
	for _, c := range w.Claims {
		var devices claimDevices
		var err error
		what := ""
		if c.TemplateName != "" {
			what = "ResourceClaimTemplate " + c.TemplateName
			devices, err = s.readTemplate(ctx, w.Namespace, c.TemplateName, m)
		} else {
			if seenShared[c.ResourceClaimName] {
				continue // a shared claim counts once, however many pods name it
			}
			seenShared[c.ResourceClaimName] = true
			what = "ResourceClaim " + c.ResourceClaimName
			devices, err = s.readClaim(ctx, w.Namespace, c.ResourceClaimName, m)
		}
		if meta.IsNoMatchError(err) {
			return []string{fmt.Sprintf("%s: the API server serves no resource.k8s.io/v1 DRA claims, so the pods' claims are not counted", CodeDRAUnchecked)}, nil
		}
		if apierrors.IsNotFound(err) {
			warnings = append(warnings, fmt.Sprintf("%s: %s does not exist (yet), so its devices are not counted", CodeDRAUnchecked, what))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("unable to read %s/%s: %w", w.Namespace, what, err)
		}
		for _, u := range devices.Unmapped {
			warnings = append(warnings, fmt.Sprintf("%s: %s %s", CodeDRAUnmapped, what, u))
		}
		into := shared
		if c.TemplateName != "" && c.Role >= 0 && c.Role < len(perPod) {
			if perPod[c.Role] == nil {
				perPod[c.Role] = map[string]int{}
			}
			into = perPod[c.Role]
		}
		for res, n := range devices.ByResource {
			into[res] += n
		}
	}
	return warnings, addDevices(w, perPod, shared)
}

// addDevices adds the counted DRA devices to w's GPU demand. A gang uses
// one GPU resource, whether asked for as an extended resource or a claim.
func addDevices(w *workload.Workload, perPod []map[string]int, shared map[string]int) error {
	resources := map[string]bool{}
	for _, m := range append(perPod, shared) {
		for res, n := range m {
			if n > 0 {
				resources[res] = true
			}
		}
	}
	if len(resources) == 0 {
		return nil
	}
	names := make([]string, 0, len(resources))
	for r := range resources {
		names = append(names, r)
	}
	sort.Strings(names)
	if len(names) > 1 || (w.GPUResource != "" && w.GPUResource != names[0]) {
		if w.GPUResource != "" {
			names = append([]string{w.GPUResource}, names...)
		}
		return fmt.Errorf("%w: the pods ask for %v through extended resources and DRA claims: a gang may use only one GPU resource", workload.ErrInvalid, names)
	}
	res := names[0]
	w.GPUResource = res
	total := 0
	for i := range w.Roles {
		w.Roles[i].GPUsPerPod += perPod[i][res]
		total += w.Roles[i].Replicas * w.Roles[i].GPUsPerPod
		w.GPUsPerPod = max(w.GPUsPerPod, w.Roles[i].GPUsPerPod)
	}
	if w.GPUsPerPod == 0 {
		w.GPUsPerPod = shared[res] // pods sharing a claim run where its devices are
	}
	w.TotalGPUs = total + shared[res]
	w.TotalMilliGPUs = int64(w.TotalGPUs) * topology.MilliPerGPU
	return nil
}

func (s *Service) readTemplate(ctx context.Context, ns, name string, m model.Model) (claimDevices, error) {
	t := &resourcev1.ResourceClaimTemplate{}
	if err := s.read(ctx, s.Claims, client.ObjectKey{Namespace: ns, Name: name}, t); err != nil {
		return claimDevices{}, err
	}
	return topology.RequestedDevices(t.Spec.Spec.Devices.Requests, m.DeviceResource), nil
}

func (s *Service) readClaim(ctx context.Context, ns, name string, m model.Model) (claimDevices, error) {
	c := &resourcev1.ResourceClaim{}
	if err := s.read(ctx, s.Claims, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
		return claimDevices{}, err
	}
	return topology.RequestedDevices(c.Spec.Devices.Requests, m.DeviceResource), nil
}

func (s *Service) read(ctx context.Context, r Reader, key client.ObjectKey, obj client.Object) error {
	ctx, cancel := context.WithTimeout(ctx, s.readTimeout())
	defer cancel()
	return r.Get(ctx, key, obj)
}
