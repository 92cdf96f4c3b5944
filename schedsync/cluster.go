package schedsync

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/workload"
)

// ReadCluster reads what rendering needs from the cluster: every node's
// labels and the namespaces of each tenant.
func (s Syncer) ReadCluster(ctx context.Context) (Cluster, error) {
	c := Cluster{NodeLabels: map[string]map[string]string{}, TenantNamespaces: map[string][]string{}}
	var nodes corev1.NodeList
	if err := s.Client.List(ctx, &nodes); err != nil {
		return c, fmt.Errorf("unable to list nodes for the topology objects: %w", err)
	}
	for _, n := range nodes.Items {
		c.NodeLabels[n.Name] = n.Labels
	}
	var namespaces corev1.NamespaceList
	if err := s.Client.List(ctx, &namespaces); err != nil {
		return c, fmt.Errorf("unable to list namespaces for the tenants' local queues: %w", err)
	}
	for _, ns := range namespaces.Items {
		if t := ns.Labels[workload.LabelTenant]; t != "" && ns.DeletionTimestamp == nil {
			c.TenantNamespaces[t] = append(c.TenantNamespaces[t], ns.Name)
		}
	}
	return c, nil
}

// PlanModel renders the model against the cluster and plans the changes.
func (s Syncer) PlanModel(ctx context.Context, spec model.Model, o Options) (Plan, error) {
	c, err := s.ReadCluster(ctx)
	if err != nil {
		return Plan{}, err
	}
	if o.Schedulers == nil {
		o.Schedulers = SchedulersOf(spec)
	}
	desired, err := Render(spec, c, o)
	if err != nil {
		return Plan{}, err
	}
	return s.Plan(ctx, desired, Kinds(o.Schedulers))
}
