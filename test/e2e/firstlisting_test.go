package e2e

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/test/fixtures"
	"github.com/mandate-dev/mandate/topology"
	"github.com/mandate-dev/mandate/topology/topologytest"
)

// podRequests records the requests for pods made through a rest.Config.
type podRequests struct {
	mu   sync.Mutex
	seen []string
}

func (r *podRequests) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if strings.HasSuffix(req.URL.Path, "/pods") {
			r.mu.Lock()
			r.seen = append(r.seen, req.Method+" "+req.URL.Path+"?"+req.URL.RawQuery)
			r.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

func (r *podRequests) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestInformersStreamTheFirstListing: serve's informers (the cache as
// serve configures it: cluster.StripTransforms) take in more pods than one
// page of a listing without asking for all of them in one response — the
// API server streams them (WatchList: a watch with sendInitialEvents) or
// pages them — and the state they feed counts exactly what a paged
// listing of the same cluster's whole pods (inventory.List, 500 a page)
// counts: the same usage of every tenant and gang, and the same
// placements.
func TestInformersStreamTheFirstListing(t *testing.T) {
	const pods = 620 // more than one page of inventory.List
	env := envtest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := env.Client
	if err := fixtures.CreatePriorityClasses(ctx, c); err != nil {
		t.Fatal(err)
	}
	var namespaces []string
	for ns, tenant := range fixtures.Tenants() {
		namespaces = append(namespaces, ns)
		if err := c.Create(ctx, fixtures.TenantNamespace(ns, tenant)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 16 {
		if err := fixtures.CreateNode(ctx, c, fixtures.H100Node(fmt.Sprintf("h100-b%d-%d", i/8, i), fmt.Sprintf("b%d", i/8), fmt.Sprintf("c%d", i/4))); err != nil {
			t.Fatal(err)
		}
	}
	// Pods varying what is counted: GPUs or none, bound or pending,
	// running or finished, a Job's or bare, whole GPUs or a KAI share.
	var wg sync.WaitGroup
	errs := make(chan error, pods)
	work := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				errs <- createListingPod(ctx, c, i, namespaces[i%len(namespaces)])
			}
		}()
	}
	for i := range pods {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	m := fixtures.Evaluator(t, "embedded", nil).Model()
	var seen podRequests
	rc := rest.CopyConfig(env.Config)
	rc.Wrap(seen.wrap)
	informers, err := cache.New(rc, cache.Options{Scheme: env.Scheme, ByObject: cluster.StripTransforms(),
		DefaultTransform: cache.TransformStripManagedFields()})
	if err != nil {
		t.Fatal(err)
	}
	streamed, err := cluster.New(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := streamed.Watch(ctx, informers); err != nil {
		t.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		t.Fatal("the informers never synced")
	}
	envtest.WaitFor(t, 30*time.Second, "the state to take in the informers' first listings", streamed.Synced)

	for _, r := range seen.all() {
		if strings.HasPrefix(r, "GET ") && !strings.Contains(r, "watch=true") && !strings.Contains(r, "limit=") {
			t.Errorf("the informers listed every pod in one response (%s): want them streamed or paged", r)
		}
	}
	t.Logf("the Pod informer's requests: %v", seen.all())

	inv, err := inventory.List(ctx, c, "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Pods) != pods {
		t.Fatalf("the paged listing holds %d pods, want %d", len(inv.Pods), pods)
	}
	listed, err := cluster.New(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range slices.Concat(inv.Nodes, inv.Namespaces, inv.Pods) {
		if err := listed.Add(obj); err != nil {
			t.Fatal(err)
		}
	}

	counted := 0
	for _, tenant := range fixtures.Tenants() {
		got, want := streamed.Usage(tenant), listed.Usage(tenant)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("usage of %s: informers %+v, paged listing %+v", tenant, got, want)
		}
		counted += got[tenant]["nvidia.com/gpu"].Total
		for j := range 4 {
			uid := listingJobUID(j)
			if got, want := streamed.UsageExcluding(tenant, uid), listed.UsageExcluding(tenant, uid); !reflect.DeepEqual(got, want) {
				t.Errorf("usage of %s without Job %s's pods: informers %+v, paged listing %+v", tenant, uid, got, want)
			}
		}
	}
	if counted == 0 {
		t.Fatal("no tenant uses a GPU: the comparison cannot fail")
	}
	for gpus := 1; gpus <= 8; gpus++ {
		for _, n := range []int{1, 4, 16} {
			req := topology.Request{Pods: n, GPUsPerPod: gpus, Resource: "nvidia.com/gpu"}
			want, wantErr := listed.Snapshot().Place(req)
			got, gotErr := streamed.Snapshot().Place(req)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
				t.Errorf("Place(%+v): informers %+v (%v), paged listing %+v (%v)", req, got, gotErr, want, wantErr)
			}
		}
	}
}

// listingJobUID is the UID of the j-th Job the listing test's pods name
// as their controller.
func listingJobUID(j int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", j) }

// createListingPod creates the i-th pod of the listing test in namespace:
// most bound to one of 16 nodes, some pending; most of one GPU or more,
// some of none or of a KAI share; a third a Job's; some finished.
func createListingPod(ctx context.Context, c client.Client, i int, namespace string) error {
	opts := []topologytest.PodOption{topologytest.WithPriorityClass("train")}
	if i%7 != 0 {
		opts = append(opts, topologytest.OnNode(fmt.Sprintf("h100-b%d-%d", i%16/8, i%16)))
	}
	gpus := int64(i%3 + 1)
	if i%11 == 0 {
		gpus = 0
	}
	p := topologytest.GPUPod(namespace, fmt.Sprintf("p-%04d", i), gpus, opts...)
	p.Labels = map[string]string{"app.kubernetes.io/name": "trainer", "controller-uid": "x"}
	if i%13 == 0 {
		p.Annotations = map[string]string{topology.AnnotationGPUFraction: "0.5"}
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	}
	if i%3 == 0 {
		j := i % 4
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: fmt.Sprintf("job-%d", j),
			UID: types.UID(listingJobUID(j)), Controller: ptr.To(true)}}
	}
	if err := c.Create(ctx, p); err != nil {
		return fmt.Errorf("unable to create pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	if i%5 == 0 {
		p.Status.Phase = corev1.PodSucceeded
		if i%10 == 0 {
			p.Status.Phase = corev1.PodRunning
		}
		if err := c.Status().Update(ctx, p); err != nil {
			return fmt.Errorf("unable to set the phase of pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	return nil
}
