package authoritymetrics

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

// LeaseName is the Lease the replicas of serve elect the metrics' leader
// by: deciding every workload again is done once, not per replica.
const LeaseName = "mandate-authority-metrics"

// Elected runs Loop on one replica at a time, the holder of the Lease
// LeaseName in Namespace.
type Elected struct {
	Loop      *Loop
	Config    *rest.Config
	Namespace string
}

var _ manager.Runnable = (*Elected)(nil)

// Start campaigns for the Lease until ctx ends, running the loop while it
// holds it.
func (e *Elected) Start(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return fmt.Errorf("unable to create the authority metrics' leader election client: %w", err)
	}
	host, _ := os.Hostname()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	id := host + "_" + hex.EncodeToString(b)
	log := ctrl.LoggerFrom(ctx).WithName("authoritymetrics")
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: e.Namespace, Name: LeaseName},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		},
		LeaseDuration:   15 * time.Second,
		RenewDeadline:   10 * time.Second,
		RetryPeriod:     2 * time.Second,
		ReleaseOnCancel: true,
		Name:            LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				log.Info("computing the authority metrics", "identity", id)
				_ = e.Loop.Start(ctx)
			},
			OnStoppedLeading: func() { log.Info("no longer computing the authority metrics", "identity", id) },
		},
	})
	if err != nil {
		return fmt.Errorf("unable to set up the authority metrics' leader election: %w", err)
	}
	for ctx.Err() == nil {
		le.Run(ctx)
	}
	return nil
}
