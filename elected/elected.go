// Package elected runs a loop of serve's on one replica at a time: the
// holder of a Lease. The webhooks run on every replica, so each such loop
// (the scheduler sync, the authority metrics) has an election of its own
// rather than the manager's.
package elected

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Runnable runs Run on the replica holding the Lease Lease in Namespace,
// and only there; What names the loop in logs and errors.
type Runnable struct {
	Run       manager.Runnable
	Lease     string
	What      string
	Config    *rest.Config
	Namespace string
}

var _ manager.Runnable = (*Runnable)(nil)

// Start campaigns for the Lease until ctx ends, running Run while it holds
// it.
func (e *Runnable) Start(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return fmt.Errorf("unable to create the leader election client of %s: %w", e.What, err)
	}
	host, _ := os.Hostname()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	id := host + "_" + hex.EncodeToString(b)
	log := ctrl.LoggerFrom(ctx).WithValues("lease", e.Lease)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: e.Namespace, Name: e.Lease},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		},
		LeaseDuration:   15 * time.Second,
		RenewDeadline:   10 * time.Second,
		RetryPeriod:     2 * time.Second,
		ReleaseOnCancel: true,
		Name:            e.Lease,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				log.Info("leading "+e.What, "identity", id)
				if err := e.Run.Start(ctx); err != nil {
					log.Error(err, e.What+" stopped", "identity", id)
				}
			},
			OnStoppedLeading: func() { log.Info("no longer leading "+e.What, "identity", id) },
		},
	})
	if err != nil {
		return fmt.Errorf("unable to set up the leader election of %s: %w", e.What, err)
	}
	for ctx.Err() == nil {
		le.Run(ctx) // returns when leadership is lost or ctx ends
	}
	return nil
}
