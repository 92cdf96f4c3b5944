package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/scheduler"
	"github.com/mandate-dev/mandate/scheduler/facts"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
)

// TestMissingLocalQueueAndPriorityClassWarn: a Kueue tenant's job admitted
// while its LocalQueue is missing carries the same "run `mandate sync`"
// warning a missing Volcano or KAI queue gets, and none once the
// LocalQueue exists in its namespace; and any job whose priority class
// (the one the directives name) does not exist carries one too.
func TestMissingLocalQueueAndPriorityClassWarn(t *testing.T) {
	dir := candidateDir(t, func(model map[string]any) {
		model["tenants"].(map[string]any)["product"].(map[string]any)["scheduler"] = scheduler.Kueue
	})
	s := startWith(t, startOptions{env: []envtest.Option{envtest.WithKueueCRDs()}, config: func(c *config.Serve) {
		c.Bundle.Source = fixtures.BundleFile(t, dir, "names-r1")
	}})
	s.populate(t)
	ctx := context.Background()
	warnings := &warningRecorder{}
	cfg := rest.CopyConfig(s.env.Config)
	cfg.WarningHandlerWithContext = warnings
	c, err := client.New(cfg, client.Options{Scheme: s.env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	localQueue := facts.Kueue.QueueKind.GVK
	objects := s.srv.Service.SchedulerObjects
	envtest.WaitFor(t, 20*time.Second, "Mandate to watch LocalQueues and PriorityClasses", func() bool {
		return objects.Lookup(localQueue, "product", "product").Presence == cluster.Missing &&
			objects.Lookup(cluster.PriorityClassGVK, "", "no-such-class").Presence == cluster.Missing
	})
	// admit dry-runs the Kueue Job and returns the "run `mandate sync`"
	// warnings and the priority class it was given.
	admit := func(name string) ([]string, string) {
		t.Helper()
		warnings.reset()
		job := object(t, strings.Replace(kueueJob, "name: finetune", "name: "+name, 1))
		if err := c.Create(ctx, job, client.DryRunAll); err != nil {
			t.Fatalf("create: %v", err)
		}
		var out []string
		for _, w := range warnings.get() {
			if strings.HasSuffix(w, "run `mandate sync`") {
				out = append(out, w)
			}
		}
		return out, job.GetLabels()[scheduler.LabelKueuePriorityClass]
	}

	got, class := admit("no-queue")
	if class == "" {
		t.Fatalf("the Job got no priority class label")
	}
	want := "Kueue queue product does not exist: the job will wait until it does; run `mandate sync`"
	if len(got) != 1 || got[0] != want {
		t.Errorf("warnings with the LocalQueue missing = %q, want [%q]", got, want)
	}

	lq := object(t, `{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "product", "namespace": "product"},
	  "spec": {"clusterQueue": "product"}}`)
	if err := s.env.Client.Create(ctx, lq); err != nil {
		t.Fatalf("create LocalQueue: %v", err)
	}
	envtest.WaitFor(t, 20*time.Second, "Mandate to see the LocalQueue", func() bool {
		return objects.Lookup(localQueue, "product", "product").Presence == cluster.Present
	})
	if got, _ := admit("queued"); len(got) != 0 {
		t.Errorf("warnings with the LocalQueue there = %q, want none", got)
	}

	pc := &schedulingv1.PriorityClass{}
	if err := s.env.Client.Get(ctx, client.ObjectKey{Name: class}, pc); err != nil {
		t.Fatalf("get PriorityClass %s: %v", class, err)
	}
	if err := s.env.Client.Delete(ctx, pc); err != nil {
		t.Fatalf("delete PriorityClass %s: %v", class, err)
	}
	envtest.WaitFor(t, 20*time.Second, "Mandate to see the PriorityClass gone", func() bool {
		return objects.Lookup(cluster.PriorityClassGVK, "", class).Presence == cluster.Missing
	})
	want = "priority class " + class + " does not exist: the pods cannot be created until it does; run `mandate sync`"
	if got, _ := admit("no-class"); len(got) != 1 || got[0] != want {
		t.Errorf("warnings with the PriorityClass missing = %q, want [%q]", got, want)
	}
}
