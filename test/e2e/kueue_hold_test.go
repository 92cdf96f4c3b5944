package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/ledger"
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
// so the other is admitted preemptible, in the class build-borrowed; the
// non-preemptible GPUs Mandate recorded on the Jobs are the guarantee, not
// twice it. Kueue then admits
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
			} else if want := model.BorrowedClass("build"); d.PriorityClass != want {
				t.Errorf("Job %s, beyond alpha's guarantee, is in class %s, want the borrowed %s", job.GetName(), d.PriorityClass, want)
			}
			t.Logf("Job %s: preemptible %v, class %s", job.GetName(), d.Preemptible, d.PriorityClass)
		}
		if nonPreemptible != cohortGuarantee {
			t.Fatalf("Mandate recorded %d non-preemptible GPUs on alpha's two Jobs, want exactly its guarantee %d: one granted (in build), one borrowed (in build-borrowed)",
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

// TestKueueEvictsBorrowedWorkFirst (issue 32): in agreementTenants'
// cohort, alpha runs a build Job a1 (8 GPUs, its whole guarantee:
// non-preemptible) and an inference Job a2 (8 GPUs beyond it: borrowed,
// in the class inference-borrowed, whose value is below build's although
// inference's is above it); beta's build Job b1 (8 GPUs, within beta's
// guarantee) then reclaims what alpha borrowed. Kueue's real controller,
// which evicts the lowest priority first and never reads Mandate's
// marking, evicts a2 and keeps a1: the WorkloadPriorityClasses mandate
// sync made from the model rank borrowed work below every guaranteed tier.
// mandate simulate, on the same arrivals, evicts a2 too (simulationAgrees).
func TestKueueEvictsBorrowedWorkFirst(t *testing.T) {
	ctx := context.Background()
	var data map[string]any
	dir := candidateDir(t, func(m map[string]any) {
		agreementTenants(m)
		m["tenants"].(map[string]any)["lab"].(map[string]any)["priorityClasses"] = []any{"train", "build", "inference"}
		data = m
	})
	s, spec := startKueueCohort(t, startOptions{}, dir, "kueue-evict-r1", data)

	uids := map[string]string{}
	classes := map[string]string{}
	var scenario []replay.Job
	arrive := func(j replay.Job, wantPreemptible bool, wantClass string) {
		t.Helper()
		scenario = append(scenario, j)
		job := s.create(t, agreementJob(j))
		uids[j.Name] = string(job.GetUID())
		d, ok, err := scheduler.RecordedDirectives(job.GetAnnotations())
		if err != nil || !ok {
			t.Fatalf("Job %s carries no directives Mandate recorded (%v)", j.Name, err)
		}
		if d.Preemptible != wantPreemptible || d.PriorityClass != wantClass {
			t.Fatalf("Job %s admitted preemptible %v in class %s, want preemptible %v in %s", j.Name, d.Preemptible, d.PriorityClass, wantPreemptible, wantClass)
		}
		if got := job.GetLabels()[scheduler.LabelKueuePriorityClass]; got != wantClass {
			t.Fatalf("Job %s: WorkloadPriorityClass label %q, want %s", j.Name, got, wantClass)
		}
		classes[j.Name] = wantClass
	}
	waitAdmitted := func(want ...string) {
		t.Helper()
		waitKueue(t, fmt.Sprintf("Kueue to admit %v", want), func() (bool, string) {
			admitted, evicted, state := kueueState(ctx, t, s, uids)
			return slices.Equal(admitted, want) && len(evicted) == 0, state
		})
	}
	job := func(name, tenant, class string) replay.Job {
		return replay.Job{Name: name, Tenant: tenant, Pods: 1, GPUsPerPod: cohortGuarantee, PriorityClass: class}
	}

	arrive(job("a1", "alpha", "build"), false, "build")
	waitAdmitted("a1")
	arrive(job("a2", "alpha", "inference"), true, model.BorrowedClass("inference"))
	waitAdmitted("a1", "a2")
	// The Workloads' priorities are the WorkloadPriorityClasses' values,
	// as mandate sync made them: the borrowed a2 below the guaranteed a1.
	priority := func(name string) int64 {
		wl := workloadOf(ctx, t, s, "", uids[name])
		p, _, _ := unstructured.NestedInt64(wl.Object, "spec", "priority")
		return p
	}
	if p1, p2 := priority("a1"), priority("a2"); p2 >= p1 {
		t.Fatalf("a2's Workload (class %s) has priority %d, a1's (class %s) %d: borrowed work must rank below guaranteed work",
			classes["a2"], p2, classes["a1"], p1)
	}

	arrive(job("b1", "beta", "build"), false, "build")
	waitKueue(t, "Kueue to reclaim beta's guarantee by evicting a2, keeping a1, admitting b1", func() (bool, string) {
		admitted, evicted, state := kueueState(ctx, t, s, uids)
		if slices.Contains(evicted, "a1") {
			t.Fatalf("Kueue evicted a1, alpha's guaranteed build Job: %s", state)
		}
		return slices.Equal(admitted, []string{"a1", "b1"}) && slices.Equal(evicted, []string{"a2"}), state
	})
	// mandate simulate, on the same arrivals, evicts a2 too.
	admitted, evicted, _ := kueueState(ctx, t, s, uids)
	simulationAgrees(t, dir, replay.Scenario{Jobs: scenario}, admitted, evicted)
	wl := workloadOf(ctx, t, s, "alpha", uids["a2"])
	reasons := map[string]string{}
	for _, c := range conditionsOf(wl) {
		reasons[c.Type] = c.Reason
	}
	if _, ok := reasons["Preempted"]; !ok {
		t.Errorf("a2's Workload has conditions %v, want Kueue's Preempted", reasons)
	}
	// Kueue suspends the evicted Job again and lets the others run;
	// Mandate still holds a1's guarantee.
	jobs := map[string]client.ObjectKey{"a1": {Namespace: "alpha", Name: "a1"}, "a2": {Namespace: "alpha", Name: "a2"}, "b1": {Namespace: "beta", Name: "b1"}}
	wantSuspended := map[string]bool{"a1": false, "a2": true, "b1": false}
	waitKueue(t, fmt.Sprintf("the Jobs suspended as %v", wantSuspended), func() (bool, string) {
		got := map[string]bool{}
		for name, key := range jobs {
			j := &unstructured.Unstructured{}
			j.SetAPIVersion("batch/v1")
			j.SetKind("Job")
			if err := s.env.Client.Get(ctx, key, j); err != nil {
				return false, err.Error()
			}
			got[name], _, _ = unstructured.NestedBool(j.Object, "spec", "suspend")
		}
		return maps.Equal(got, wantSuspended), fmt.Sprintf("suspended: %v", got)
	})
	if admitted, evicted, state := kueueState(ctx, t, s, uids); !slices.Contains(admitted, "a1") || slices.Contains(evicted, "a1") {
		t.Errorf("a1, alpha's guaranteed build Job, is no longer admitted or was evicted: %s", state)
	}
	s.waitUsage(t, "alpha's non-preemptible GPUs (a1's hold)", "alpha",
		func(u map[string]map[string]ledger.Usage) int { return u["alpha"]["nvidia.com/gpu"].NonPreemptible }, cohortGuarantee)
	t.Logf("a2 evicted (conditions %v); a1 and b1 admitted in ClusterQueues %s and %s", reasons, spec.QueueName("alpha"), spec.QueueName("beta"))
}
