package envtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
)

const (
	kubeScheduler = "kube-scheduler"

	// SchedulerUser is the identity kube-scheduler runs as, the one the API
	// server's bootstrap RBAC binds the system:kube-scheduler role to, and
	// the one a cluster's scheduler authenticates as.
	SchedulerUser = "system:kube-scheduler"

	// schedulerReadyLine is what kube-scheduler logs (at -v=3) once its
	// informers have synced and every handler has seen the initial list:
	// from then on it schedules.
	schedulerReadyLine = "Handlers synced"

	defaultSchedulerStartTimeout = 2 * time.Minute
)

// Scheduler is kube-scheduler running against an Env.
type Scheduler struct {
	out *lockedBuffer
}

// Log returns what kube-scheduler has logged so far (at -v=3: each
// scheduling attempt, each preemption and its failures).
func (s *Scheduler) Log() string { return s.out.String() }

// StartScheduler runs kube-scheduler (the binary hack/envtest-assets.sh
// builds from the pinned k8s.io/kubernetes, beside kube-apiserver) against
// env with its default profile, as SchedulerUser, without leader election
// and without a serving endpoint. It returns once the scheduler schedules
// (deadline scaled by MANDATE_TEST_TIMEOUT_SCALE) and stops it in
// t.Cleanup; its log is printed when the test fails. There is no kubelet:
// bound pods stay Pending, and a victim the scheduler deletes keeps its
// deletionTimestamp until the test removes it (RemoveTerminatingPods).
func StartScheduler(t testing.TB, env *Env) *Scheduler {
	t.Helper()
	out := startComponent(t, env, component{
		binary: kubeScheduler,
		user:   crenvtest.User{Name: SchedulerUser},
		args: []string{
			"--leader-elect=false",
			"--secure-port=0",
			"--bind-address=127.0.0.1",
			// For the ready line, and a log that shows each attempt
			// when a test fails.
			"--v=3",
		},
		readyLine:    schedulerReadyLine,
		readyTimeout: defaultSchedulerStartTimeout,
		what:         kubeScheduler,
	})
	return &Scheduler{out: out}
}

// RemoveTerminatingPods force-deletes (grace period 0) every pod of
// namespace that has a deletionTimestamp, as the kubelet does once a pod's
// containers have stopped, and returns their names. Envtest runs no
// kubelet, so a pod the scheduler preempts would otherwise hold its node's
// resources for good.
func RemoveTerminatingPods(ctx context.Context, c client.Client, namespace string) ([]string, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("unable to list the pods of %s: %w", namespace, err)
	}
	var removed []string
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.DeletionTimestamp == nil {
			continue
		}
		if err := c.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
			return removed, fmt.Errorf("unable to remove terminating pod %s/%s: %w", namespace, pod.Name, err)
		}
		removed = append(removed, pod.Name)
	}
	return removed, nil
}
