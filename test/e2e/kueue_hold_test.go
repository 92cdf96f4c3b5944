package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/model"
	"github.com/mandate-dev/mandate/schedsync"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/simulate/replay"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// startKueueCohort starts Mandate in ledger setup so, its bundle the
// policies of dir (revision names it) whose model is data (agreementTenants'
// cohort of alpha and beta), with Kueue's real controller (envtest.StartKueue)
// on the queues, flavors and WorkloadPriorityClasses mandate sync's code
// path made from that model (syncKueue), and waits until alpha's and beta's
// LocalQueues exist and their ClusterQueues are active.
func startKueueCohort(t *testing.T, so startOptions, dir, revision string, data map[string]any) (*suite, model.Model) {
	t.Helper()
	ctx := context.Background()
	so.env = append(so.env, envtest.WithKueueCRDs())
	so.config = func(c *config.Serve) { c.Bundle.Source = fixtures.BundleFile(t, dir, revision) }
	s := startWith(t, so)
	s.populate(t)
	for _, name := range []string{"alpha", "beta"} {
		if err := s.env.Client.Create(ctx, fixtures.TenantNamespace(name, name)); err != nil {
			t.Fatalf("create namespace %s: %v", name, err)
		}
	}
	envtest.StartKueue(t, s.env)
	kueueNodes(t, s)
	spec := syncKueue(t, s, data)
	for _, name := range []string{"alpha", "beta"} {
		lq := &unstructured.Unstructured{}
		lq.SetGroupVersionKind(schedsync.LocalQueueKind.GVK)
		waitKueue(t, "LocalQueue "+name+" in namespace "+name+" and ClusterQueue "+spec.QueueName(name)+" active", func() (bool, string) {
			if err := s.env.Client.Get(ctx, client.ObjectKey{Namespace: name, Name: spec.QueueName(name)}, lq); err != nil {
				return false, err.Error()
			}
			cq := &unstructured.Unstructured{}
			cq.SetGroupVersionKind(kueueClusterQueueGVK)
			if err := s.env.Client.Get(ctx, client.ObjectKey{Name: spec.QueueName(name)}, cq); err != nil {
				return false, err.Error()
			}
			return conditionTrue(cq, "Active"), fmt.Sprintf("ClusterQueue status %v", cq.Object["status"])
		})
	}
	return s, spec
}

// cohortGuarantee is alpha's (and beta's) guaranteed GPUs in
// agreementTenants' cohort.
const cohortGuarantee = 8

// TestKueueGuaranteedJobHolds (issue 32): two build Jobs of alpha (8 GPUs
// each, alpha's whole guarantee), created at once, are not both granted
// the guarantee although Kueue keeps both suspended (their pods do not
// exist yet): the first Mandate decides holds its 8 GPUs from admission,
// so the other is admitted preemptible; the non-preemptible GPUs Mandate
// recorded on the Jobs are the guarantee, not twice it. Kueue then admits
// both (alpha's nominal 8, and 8 borrowed from beta), the job controller
// creates their pods, and the guaranteed Job's pods count under its hold
// once: alpha counts 8 non-preemptible GPUs of 16, in every replica. In
// every ledger setup: one replica's memory, the shared ledger, three
// replicas behind two API servers.
func TestKueueGuaranteedJobHolds(t *testing.T) {
	forEachLedger(t, func(t *testing.T, so startOptions) {
		ctx := context.Background()
		var data map[string]any
		dir := candidateDir(t, func(m map[string]any) {
			agreementTenants(m)
			data = m
		})
		s, _ := startKueueCohort(t, so, dir, "kueue-hold-r1", data)

		// Both at once: neither Job's pods, nor its Kueue admission,
		// exist when the other is decided.
		names := []string{"build-1", "build-2"}
		jobs := make([]*unstructured.Unstructured, len(names))
		errs := make([]error, len(names))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, name := range names {
			jobs[i] = object(t, agreementJob(replay.Job{Name: name, Tenant: "alpha", Pods: 1, GPUsPerPod: cohortGuarantee, PriorityClass: "build"}))
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = s.env.Client.Create(ctx, jobs[i])
			}()
		}
		began := time.Now()
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("create Job %s: %v", names[i], err)
			}
		}
		t.Logf("both Jobs created within %s", time.Since(began))

		nonPreemptible, granted := 0, ""
		for _, job := range jobs {
			d, ok, err := scheduler.RecordedDirectives(job.GetAnnotations())
			if err != nil || !ok {
				t.Fatalf("Job %s carries no directives Mandate recorded (%v)", job.GetName(), err)
			}
			if suspend, _, _ := unstructured.NestedBool(job.Object, "spec", "suspend"); !suspend {
				t.Errorf("Job %s was stored unsuspended: Kueue must admit it", job.GetName())
			}
			if got := job.GetLabels()[scheduler.LabelKueuePriorityClass]; got != d.PriorityClass {
				t.Errorf("Job %s: WorkloadPriorityClass label %q, want the recorded class %q", job.GetName(), got, d.PriorityClass)
			}
			if !d.Preemptible {
				nonPreemptible += cohortGuarantee
				granted = job.GetName()
			}
			t.Logf("Job %s: preemptible %v, class %s", job.GetName(), d.Preemptible, d.PriorityClass)
		}
		if nonPreemptible != cohortGuarantee {
			t.Fatalf("Mandate recorded %d non-preemptible GPUs on alpha's two Jobs, want exactly its guarantee %d: one granted, one borrowed",
				nonPreemptible, cohortGuarantee)
		}

		// Kueue admits both; their pods run (exist) and the hold counts
		// them once.
		uids := map[string]string{}
		for _, job := range jobs {
			uids[job.GetName()] = string(job.GetUID())
		}
		waitKueue(t, "Kueue to admit both Jobs (alpha's nominal quota and 8 borrowed from beta)", func() (bool, string) {
			admitted, _, state := kueueState(ctx, t, s, uids)
			return len(admitted) == len(names), state
		})
		envtest.StartControllers(t, s.env, "", "job-controller")
		waitKueue(t, "every replica to count alpha's 16 GPUs, 8 non-preemptible: "+granted+"'s pods under its hold, once", func() (bool, string) {
			for i, r := range s.replicas {
				u := r.State.Usage("alpha")["alpha"]["nvidia.com/gpu"]
				// What the granted Job's pods count (the usage without them
				// still has its hold, which they consumed).
				pods := u.NonPreemptible - r.State.UsageExcluding("alpha", uids[granted])["alpha"]["nvidia.com/gpu"].NonPreemptible
				if u.Total != 2*cohortGuarantee || u.NonPreemptible != cohortGuarantee || pods != cohortGuarantee {
					return false, fmt.Sprintf("replica %d counts %+v, %d non-preemptible of them %s's pods", i, u, pods, granted)
				}
			}
			return true, ""
		})
	})
}
